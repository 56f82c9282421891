/// Objects attached to a model object for its lifetime (Chromium's BrowserUserData / browser agents):
/// mediators and services keep their per-window or per-profile state here without the model knowing
/// their types.
public final class UserData {
    private var values: [String: AnyObject] = [:]

    public init() {}

    public subscript(key: String) -> AnyObject? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// The attachment stored under `T`'s name.
    public func get<T: AnyObject>(_ type: T.Type) -> T? { values[String(reflecting: type)] as? T }

    /// Stores `value` under its type's name.
    public func set<T: AnyObject>(_ value: T?) { values[String(reflecting: T.self)] = value }
}
