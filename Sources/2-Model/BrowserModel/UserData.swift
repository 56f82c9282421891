/// Objects attached to a model object for its lifetime (Chromium's BrowserUserData / browser agents):
/// mediators and services keep their per-window or per-profile state here without the model knowing
/// their types.
public final class UserData {
    private var values: [String: AnyObject] = [:]
    /// Attachments keyed by their type (looked up after every operation: no type-name strings).
    private var typed: [ObjectIdentifier: AnyObject] = [:]

    public init() {}

    public subscript(key: String) -> AnyObject? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// The attachment stored under `T`.
    public func get<T: AnyObject>(_ type: T.Type) -> T? { typed[ObjectIdentifier(type)] as? T }

    /// Stores `value` under its type.
    public func set<T: AnyObject>(_ value: T?) { typed[ObjectIdentifier(T.self)] = value }
}
