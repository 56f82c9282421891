import Foundation
import Synchronization

/// The one writer of the database, with group commit: every change queued while a commit runs goes
/// into the next transaction together, so many concurrent clients share one fsync. ``submit(_:)``
/// returns only once its change is committed to disk (or throws the commit's error).
public final class StoreWriter: @unchecked Sendable {
    // @unchecked Sendable: `store` is touched only by the writer thread after `init`; everything the
    // submitting threads share with it is inside `state` (a Mutex) and `signal` (an NSCondition).

    private struct Pending {
        let change: ChangeSet
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var queue: [Pending] = []
        var stopping = false
        var commits = 0
        var changes = 0
    }

    private let store: PersistenceStore
    private let state = Mutex(State())
    private let signal = NSCondition()
    private var thread: Thread?

    /// Takes ownership of `store` and starts the writer thread.
    public init(store: PersistenceStore) {
        self.store = store
        let thread = Thread { [unowned self] in self.run() }
        thread.name = "browserd-store-writer"
        self.thread = thread
        thread.start()
    }

    /// Commits `change`; returns once it is on disk.
    /// - Throws: the commit's error (the change is then not on disk).
    public func submit(_ change: ChangeSet) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let accepted = state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                state.queue.append(Pending(change: change, continuation: continuation))
                return true
            }
            guard accepted else {
                continuation.resume(throwing: StoreError.stopped)
                return
            }
            wake()
        }
    }

    /// Wakes the writer thread (synchronous, so it may take the condition's lock).
    private func wake() {
        signal.lock()
        signal.signal()
        signal.unlock()
    }

    /// Transactions committed and changes they carried, for metrics and tests.
    public var statistics: (commits: Int, changes: Int) { state.withLock { ($0.commits, $0.changes) } }

    /// Commits what is queued, then stops the thread. Later submits throw.
    public func stop() async {
        state.withLock { $0.stopping = true }
        wake()
        while thread?.isFinished == false { try? await Task.sleep(for: .milliseconds(5)) }
    }

    private func run() {
        while true {
            signal.lock()
            var batch: [Pending] = []
            var stopping = false
            while true {
                (batch, stopping) = state.withLock { state in
                    let taken = state.queue
                    state.queue = []
                    return (taken, state.stopping)
                }
                if !batch.isEmpty || stopping { break }
                signal.wait()
            }
            signal.unlock()
            if !batch.isEmpty {
                let result = Result { try store.apply(batch.map(\.change)) }
                state.withLock {
                    $0.commits += 1
                    $0.changes += batch.count
                }
                for pending in batch { pending.continuation.resume(with: result) }
            }
            if stopping && batch.isEmpty { return }
        }
    }
}

/// Errors of the writer itself.
public enum StoreError: Error, Equatable {
    case stopped
}
