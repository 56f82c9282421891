import BrowserPersistence
import BrowserRecords
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

/// The second wall of the hostile-tenants review (finding 1): when the store refuses one profile's
/// change, that profile's requesters get the error and the batch's other profiles are committed.
@Suite(.offThePool) struct StoreWriterIsolationTests {
    /// A store that refuses every batch holding a change of `poisoned`, and records what it commits.
    final class PickyStore: ChangeStore, @unchecked Sendable {
        // @unchecked Sendable: touched only by the writer thread (and read by the test after stop()).
        let poisoned: String
        var committed: [String] = []
        var attempts = 0
        var failEverything = false
        /// A change of profile "gate" waits here: what is queued meanwhile forms the next batch.
        let gate = DispatchSemaphore(value: 0)
        var passedGate = false

        init(poisoned: String) { self.poisoned = poisoned }

        struct Refused: Error {}

        func apply(_ changes: [ChangeSet]) throws {
            attempts += 1
            if !passedGate, changes.contains(where: { $0.profileID == "gate" }) {
                passedGate = true
                gate.wait()
            }
            if failEverything || changes.contains(where: { $0.profileID == poisoned }) { throw Refused() }
            committed += changes.compactMap(\.profileID)
        }
        func purgeIdempotency(before date: Date) throws {}
        func readAll() throws -> StoredState { StoredState() }
        func probeWrite() throws {}
        func reopened() throws -> any ChangeStore { self }
    }

    private func change(_ profile: String) -> ChangeSet {
        var change = ChangeSet()
        change.profileID = profile
        change.deletedTabs = ["t-\(profile)"]
        return change
    }

    @Test func oneRefusedProfileFailsOnlyItsOwnChanges() async throws {
        let store = PickyStore(poisoned: "bad")
        let writer = StoreWriter(store: store)
        // Queued while the writer commits the gate's change, so they share the next batch.
        let gate = writer.enqueue(change("gate"))
        try await Task.sleep(for: .milliseconds(50))
        let tickets = ["a", "bad", "b", "a"].map { writer.enqueue(change($0)) }
        store.gate.signal()
        try await gate.wait()
        var outcomes: [String] = []
        for ticket in tickets {
            do {
                try await ticket.wait()
                outcomes.append("ok")
            } catch let error as StoreError {
                if case .refused(let profile, _) = error { outcomes.append("refused \(profile)") } else { outcomes.append("\(error)") }
            }
        }
        #expect(outcomes == ["ok", "refused bad", "ok", "ok"])
        // The writer is healthy: the next change commits.
        try await writer.submit(change("c"))
        await writer.stop()
        #expect(store.committed.sorted() == ["a", "a", "b", "c", "gate"])
    }

    @Test func whenEveryProfileFailsItIsTheStorageThatFailed() async throws {
        let store = PickyStore(poisoned: "none")
        store.failEverything = true
        let writer = StoreWriter(store: store)
        let tickets = ["a", "b"].map { writer.enqueue(change($0)) }
        var errors: [any Error] = []
        for ticket in tickets {
            do { try await ticket.wait() } catch { errors.append(error) }
        }
        await writer.stop()
        // Both fail as a storage failure (the store's own error, or refused after it), never as one
        // profile's refusal: when nothing commits, no profile is singled out.
        #expect(errors.count == 2)
        #expect(errors.contains { $0 is PickyStore.Refused })
        #expect(!errors.contains { if case StoreError.refused = $0 { true } else { false } })
    }
}
