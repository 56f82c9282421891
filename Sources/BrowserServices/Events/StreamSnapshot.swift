/// The state a stream source is in at its last event, as what a new or reset client is sent first.
protocol StreamSnapshot: Sendable {
    /// The events a new client gets before live updates, each with `id` (the position they stand for).
    func initialEvents(id: String, filter: TopicFilter) -> [UInt8]
    /// One `reset` event carrying the whole state, for a client whose position is lost.
    func resetEvent(id: String, reason: String) -> [UInt8]
}
