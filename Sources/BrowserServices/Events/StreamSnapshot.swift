/// The state a stream source is in at its last event, as what a new or reset client is sent first.
protocol StreamSnapshot: Sendable {
    /// The events a new client gets before live updates, each with `id` (the position they stand for).
    func initialEvents(id: String, filter: TopicFilter) -> [UInt8]
    /// One `reset` event carrying the whole state, for a client whose position is lost.
    func resetEvent(id: String, reason: String) -> [UInt8]
}

/// Server-sent events framing (WHATWG HTML §9.2): one `id`, one `event`, one `data` line of JSON.
enum SSEFrame {
    static func event(id: String, name: String, json: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(json.count + name.utf8.count + id.utf8.count + 24)
        bytes.append(contentsOf: "id: ".utf8)
        bytes.append(contentsOf: id.utf8)
        bytes.append(contentsOf: "\nevent: ".utf8)
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: "\ndata: ".utf8)
        bytes.append(contentsOf: json)
        bytes.append(contentsOf: "\n\n".utf8)
        return bytes
    }
}

/// An event made by a consumer, not yet numbered.
struct PendingEvent: Sendable {
    let topic: EventTopic
    let name: String
    let json: [UInt8]
    /// Events of one operation with the same key say the same thing about the same state (a tab's
    /// item, the toolbar): only the last is sent.
    var supersedes: String? = nil
}
