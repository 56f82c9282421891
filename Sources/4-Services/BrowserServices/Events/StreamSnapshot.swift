/// The state a stream source is in at its last event, as what a new or reset client is sent first.
protocol StreamSnapshot: Sendable {
    /// The events a new client gets before live updates (those `filter` admits).
    func initialEvents(filter: TopicFilter) -> [StreamEvent]
    /// One `reset` event carrying the whole state, for a client whose position is lost.
    func resetEvent(reason: String) -> StreamEvent
}
