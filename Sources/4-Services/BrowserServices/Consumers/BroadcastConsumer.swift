public import BrowserModel

/// What mirrors a window's broadcast properties: the current value first, then every change, never
/// the same value twice in a row.
public protocol BroadcastConsumer: AnyObject {
    func broadcast(key: String, value: BroadcastValue)
}
