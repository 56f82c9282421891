public import BrowserRecords
import Synchronization

/// A request that carries an `Idempotency-Key`: the change it makes is committed in one transaction
/// with its answer, so a retry after a crash finds the answer and never makes the change twice.
///
/// The HTTP edge sets ``current`` for the request's duration. A mutation made meanwhile queues its
/// change with a ``PendingAnswer`` and returns at once; the edge then gives the answer with
/// ``finish(_:)``, which waits for that transaction. Changes of off-the-record profiles are never
/// stored, so neither are their answers (they never reach here with a change).
public final class IdempotentRequest: Sendable {
    /// The idempotent request being handled by this task, if any.
    @TaskLocal public static var current: IdempotentRequest?

    private struct State {
        var pending: PendingAnswer?
        var waiter: (@Sendable () async throws -> Void)?
    }

    private let state = Mutex(State())

    public init() {}

    /// The answer slot for a change being queued; an earlier slot of the same request (a request that
    /// made two changes) keeps no answer, as the answer belongs to the last.
    func attach() -> PendingAnswer {
        let answer = PendingAnswer()
        let earlier = state.withLock { state -> PendingAnswer? in
            defer { state.pending = answer }
            return state.pending
        }
        earlier?.resolve(nil)
        return answer
    }

    /// Sets what waits for the commit of the last attached change.
    func setWaiter(_ waiter: @escaping @Sendable () async throws -> Void) {
        state.withLock { $0.waiter = waiter }
    }

    /// Gives the answer to store (nil: none) and returns once the change it answers is on disk.
    /// - Throws: ``ServiceError/storageFailed(_:)`` when that commit failed.
    public func finish(_ answer: IdempotencyRecord?) async throws {
        let (pending, waiter) = state.withLock { state in
            defer { state = State() }
            return (state.pending, state.waiter)
        }
        pending?.resolve(answer)
        try await waiter?()
    }
}
