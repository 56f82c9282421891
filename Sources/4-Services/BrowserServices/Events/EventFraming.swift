/// Turns one numbered event into the bytes a stream client reads. The HTTP edge supplies it (server-
/// sent events); the channels call it once per event and share the bytes between every watcher.
public protocol EventFraming: Sendable {
    /// The bytes of the event `event` at position `id`, whose payload is the JSON `json` (one line).
    func frame(id: String, event: String, json: [UInt8]) -> [UInt8]
}

/// An event of a stream source before it is numbered and framed.
struct StreamEvent: Sendable {
    let name: String
    let json: [UInt8]
}
