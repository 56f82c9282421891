public import BrowserRecords
import Dispatch
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
        let ticket: CommitTicket
    }

    private struct State {
        var queue: [Pending] = []
        var stopping = false
        var commits = 0
        var changes = 0
    }

    private var store: PersistenceStore
    private var needsReopen = false
    /// When expired idempotency answers were last deleted.
    private var lastPurge = Date.distantPast
    /// How long the writer waits for a handler to give the answer of a change it queued. Handlers give
    /// it right after the change is made, so this is only reached when one fails without saying so.
    static let answerTimeout = DispatchTimeInterval.seconds(5)
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

    /// Queues `change` for the next commit without waiting: changes commit in the order they are
    /// queued, so callers queue from their serial executor and wait for the ticket outside it.
    public func enqueue(_ change: ChangeSet) -> CommitTicket {
        let ticket = CommitTicket()
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.queue.append(Pending(change: change, ticket: ticket))
            return true
        }
        if accepted { wake() } else { ticket.complete(.failure(StoreError.stopped)) }
        return ticket
    }

    /// Commits `change`; returns once it is on disk.
    /// - Throws: the commit's error (the change is then not on disk).
    public func submit(_ change: ChangeSet) async throws {
        try await enqueue(change).wait()
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
                let result = Result {
                    // After an I/O failure the connection may hold a broken view of the WAL: start afresh.
                    if needsReopen {
                        store = try PersistenceStore(path: store.path)
                        needsReopen = false
                    }
                    try store.apply(batch.map(Self.withAnswers))
                    if Date().timeIntervalSince(lastPurge) > 60 {
                        lastPurge = Date()
                        try store.purgeIdempotency(before: lastPurge.addingTimeInterval(-IdempotencyRecord.lifetime))
                    }
                }
                if case .failure = result { needsReopen = true }
                state.withLock {
                    $0.commits += 1
                    $0.changes += batch.count
                }
                for pending in batch { pending.ticket.complete(result) }
            }
            if stopping && batch.isEmpty { return }
        }
    }
}

extension StoreWriter {
    /// The change with the answers of its idempotent requests, waited for if still being made.
    private static func withAnswers(_ pending: Pending) -> ChangeSet {
        guard !pending.change.pendingAnswers.isEmpty else { return pending.change }
        var change = pending.change
        change.idempotency += change.pendingAnswers.compactMap { $0.wait(timeout: answerTimeout) }
        change.pendingAnswers = []
        return change
    }
}

/// Errors of the writer itself.
public enum StoreError: Error, Equatable {
    case stopped
}

/// The promise of one queued change: ``wait()`` returns once it is committed, or throws the commit's error.
public final class CommitTicket: Sendable {
    private enum State {
        case pending([CheckedContinuation<Void, any Error>])
        case done(Result<Void, any Error>)
    }

    private let state = Mutex<State>(.pending([]))

    init() {}

    /// A ticket that is already done (nothing needed writing).
    public static let committed: CommitTicket = {
        let ticket = CommitTicket()
        ticket.complete(.success(()))
        return ticket
    }()

    func complete(_ result: Result<Void, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard case .pending(let waiters) = state else { return [] }
            state = .done(result)
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    public func wait() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let done = state.withLock { state -> Result<Void, any Error>? in
                switch state {
                case .pending(let waiters):
                    state = .pending(waiters + [continuation])
                    return nil
                case .done(let result):
                    return result
                }
            }
            if let done { continuation.resume(with: done) }
        }
    }
}
