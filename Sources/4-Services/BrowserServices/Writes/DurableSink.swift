public import BrowserRecords

/// Where mediators send durable changes. `enqueue` is called on the profile's executor, so changes
/// are queued in the order they happened; the returned waiter is awaited outside the executor and
/// returns once the change is on disk (or throws the commit's error).
public protocol DurableSink: Sendable {
    func enqueue(_ change: ChangeSet) -> @Sendable () async throws -> Void
    /// Why changes cannot be saved now (a commit failed and storage has not recovered), or nil.
    var unavailableReason: String? { get }
    /// Whether a change enqueued now can be saved at all (false before the store is open, or after it
    /// is closed): a change made then would be in memory alone, so the service refuses it first.
    var isOpen: Bool { get }
}

extension DurableSink {
    public var isOpen: Bool { true }
}
