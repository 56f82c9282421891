/// What this build of browserd is.
public enum BuildInfo {
    public static let name = "browserd"
    public static let version = "0.1.0"
}
