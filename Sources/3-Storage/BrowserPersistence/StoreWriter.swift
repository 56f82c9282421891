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
        /// Asks for ``readBack()`` and ``probe()``, answered on the writer thread after the queued changes.
        var recoveries: [Recovery] = []
        var stopping = false
        var commits = 0
        var changes = 0
        /// Why the last commit failed, until ``resume()``: every change queued meanwhile is refused
        /// unwritten, since it was made on top of changes that are not on disk.
        var failure: String?
    }

    private var store: any ChangeStore
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
    public init(store: any ChangeStore) {
        self.store = store
        let thread = Thread { [unowned self] in
            Thread.current.name = "bd-store-writer"
            self.run()
        }
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

    /// Commits `change`; returns once it is durable.
    /// - Throws: the commit's error (the change is then not stored).
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

    private enum Recovery {
        case readBack(CheckedContinuation<StoredState, any Error>)
        case probe(CheckedContinuation<Void, any Error>)
    }

    /// After a failed commit: reopens the database and reads back everything stored, i.e. the state the
    /// memory must return to (reads work on a full disk). Changes stay refused until ``resume()``.
    /// - Throws: when the database cannot be read.
    public func readBack() async throws -> StoredState {
        try await withCheckedThrowingContinuation { continuation in ask(.readBack(continuation)) }
    }

    /// Whether a write commits again (``ChangeStore/probeWrite()``), after a failure.
    /// - Throws: the write's error while the disk is still full or failing.
    public func probe() async throws {
        try await withCheckedThrowingContinuation { continuation in ask(.probe(continuation)) }
    }

    private func ask(_ recovery: Recovery) {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.recoveries.append(recovery)
            return true
        }
        if accepted {
            wake()
        } else {
            switch recovery {
            case .readBack(let continuation): continuation.resume(throwing: StoreError.stopped)
            case .probe(let continuation): continuation.resume(throwing: StoreError.stopped)
            }
        }
    }

    /// Takes changes again (after the memory was brought back to what ``recover()`` read).
    public func resume() {
        state.withLock { $0.failure = nil }
    }

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
            var recoveries: [Recovery] = []
            var stopping = false
            var failure: String?
            while true {
                (batch, recoveries, stopping, failure) = state.withLock { state in
                    defer {
                        state.queue = []
                        state.recoveries = []
                    }
                    return (state.queue, state.recoveries, state.stopping, state.failure)
                }
                if !batch.isEmpty || !recoveries.isEmpty || stopping { break }
                signal.wait()
            }
            signal.unlock()
            if let failure, !batch.isEmpty {
                // Made after a change that is not on disk: never written (the memory is rolled back).
                for pending in batch { pending.ticket.complete(.failure(StoreError.notCommitted(failure))) }
                batch = []
            }
            if !batch.isEmpty {
                var fencedProfiles: Set<String> = []
                var refusedProfiles: [String: String] = [:]
                let result = Result {
                    // After an I/O failure the connection may hold a broken view of the WAL: start afresh.
                    if needsReopen {
                        store = try store.reopened()
                        needsReopen = false
                    }
                    // Changes of profiles another instance took over are refused; the others commit.
                    var changes = batch.map(Self.withAnswers)
                    var fenced: Set<String> = []
                    while true {
                        do {
                            try store.apply(changes)
                            break
                        } catch let error as FencedOut where !error.profileIDs.isSubset(of: fenced) {
                            fenced.formUnion(error.profileIDs)
                            changes = changes.filter { $0.profileID.map { !fenced.contains($0) } ?? true }
                        } catch  where Self.profileCount(changes) > 1 {
                            // One profile's change may be what the store refuses: never let it take the
                            // batch's other profiles with it. Each profile is committed on its own; only
                            // when every one fails is it the storage that failed.
                            refusedProfiles = try applyEachProfile(changes, fenced: &fenced, batchError: error)
                            break
                        }
                    }
                    fencedProfiles = fenced
                    if Date().timeIntervalSince(lastPurge) > 60 {
                        lastPurge = Date()
                        try store.purgeIdempotency(before: lastPurge.addingTimeInterval(-IdempotencyRecord.lifetime))
                    }
                }
                state.withLock {
                    $0.commits += 1
                    $0.changes += batch.count
                    if case .failure(let error) = result { $0.failure = "\(error)" }
                }
                if case .failure = result { needsReopen = true }
                for pending in batch {
                    if let profile = pending.change.profileID, fencedProfiles.contains(profile), case .success = result {
                        pending.ticket.complete(.failure(StoreError.fencedOut(profileID: profile)))
                    } else if case .success = result, let reason = refusedProfiles[pending.change.profileID ?? ""] {
                        pending.ticket.complete(.failure(StoreError.refused(profileID: pending.change.profileID ?? "", reason: reason)))
                    } else {
                        pending.ticket.complete(result)
                    }
                }
            }
            for recovery in recoveries {
                switch recovery {
                case .readBack(let continuation):
                    continuation.resume(
                        with: Result {
                            store = try store.reopened()
                            needsReopen = false
                            return try store.readAll()
                        })
                case .probe(let continuation):
                    continuation.resume(
                        with: Result {
                            if needsReopen {
                                store = try store.reopened()
                                needsReopen = false
                            }
                            do { try store.probeWrite() } catch {
                                needsReopen = true
                                throw error
                            }
                        })
                }
            }
            if stopping && batch.isEmpty { return }
        }
    }
}

extension StoreWriter {
    /// Distinct profiles a batch touches (changes of no profile count as one more).
    static func profileCount(_ changes: [ChangeSet]) -> Int {
        Set(changes.map { $0.profileID ?? "" }).count
    }

    /// Commits a failed batch again, one profile's changes at a time (in their order), so that a change
    /// the store refuses fails only its own profile.
    /// - Returns: the profiles whose changes were refused, with the store's reason.
    /// - Throws: the batch's error when no profile's changes commit (the storage itself failed).
    private func applyEachProfile(_ changes: [ChangeSet], fenced: inout Set<String>, batchError: any Error) throws -> [String: String] {
        var order: [String] = []
        var groups: [String: [ChangeSet]] = [:]
        for change in changes {
            let key = change.profileID ?? ""
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(change)
        }
        var refused: [String: String] = [:]
        var committed = 0
        for key in order {
            do {
                try store.apply(groups[key] ?? [])
                committed += 1
            } catch let error as FencedOut {
                fenced.formUnion(error.profileIDs)
            } catch {
                refused[key] = "\(error)"
            }
        }
        if committed == 0 && fenced.isEmpty { throw batchError }
        return refused
    }

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
public enum StoreError: Error, Equatable, CustomStringConvertible {
    case stopped
    /// Queued after a commit failed (the reason): refused unwritten until the writer resumes.
    case notCommitted(String)
    /// Not written: another instance owns the profile now (its lease moved on).
    case fencedOut(profileID: String)
    /// Not written: the store refused this profile's change (the reason); the other profiles of its
    /// batch were committed.
    case refused(profileID: String, reason: String)
    /// Not written: a tab's row came without its history (an unrealized tab: ``TabRecord/summary``),
    /// so the store keeps the history it holds, and it holds no row for that tab.
    case missingHistory(tabID: String)

    public var description: String {
        switch self {
        case .stopped: "the writer is stopped"
        case .fencedOut(let profile): "not written: another instance owns profile \(profile) now"
        case .notCommitted(let reason): "not written: an earlier commit failed (\(reason))"
        case .refused(let profile, let reason): "not written: the store refused a change of profile \(profile) (\(reason))"
        case .missingHistory(let tab): "not written: tab \(tab) came without its history and the store holds none for it"
        }
    }
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
