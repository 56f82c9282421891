/// An event made by a consumer, not yet numbered.
struct PendingEvent: Sendable {
    let topic: EventTopic
    let name: String
    let json: [UInt8]
    /// Events of one operation with the same key say the same thing about the same state (a tab's
    /// item, the toolbar): only the last is sent.
    var supersedes: String? = nil
}
