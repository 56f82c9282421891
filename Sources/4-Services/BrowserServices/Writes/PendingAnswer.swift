public import BrowserRecords
public import Dispatch
import Synchronization

/// An answer that is not known yet when its change is queued: the request's handler fills it in right
/// after the change is made, and the writer waits for it before committing that change.
///
/// Resolved exactly once; later calls to ``resolve(_:)`` are ignored.
public final class PendingAnswer: AwaitedAnswer {
    private enum State {
        case pending
        case resolved(IdempotencyRecord?)
    }

    private let state = Mutex(State.pending)
    // DispatchSemaphore is thread-safe; it is only signalled once, by the first resolve.
    private let semaphore = DispatchSemaphore(value: 0)

    public init() {}

    /// Gives the answer (nil: keep none, e.g. the request failed in a way that must run again).
    public func resolve(_ record: IdempotencyRecord?) {
        let first = state.withLock { state -> Bool in
            guard case .pending = state else { return false }
            state = .resolved(record)
            return true
        }
        if first { semaphore.signal() }
    }

    /// Blocks until the answer is given or `timeout` passes (then no answer is kept).
    public func wait(timeout: DispatchTimeInterval) -> IdempotencyRecord? {
        if case .resolved(let record) = state.withLock({ $0 }) { return record }
        _ = semaphore.wait(timeout: .now() + timeout)
        return state.withLock { state in
            if case .resolved(let record) = state { return record }
            state = .resolved(nil)
            return nil
        }
    }
}
