import BrowserPersistence
import BrowserRecords
import BrowserServices
import Synchronization

/// Connects the mediators' durable changes to the store's writer, once the store is open, and
/// watches for failed commits: after one, the sink reports storage as unavailable (mutations are
/// refused, without touching the model) until the memory is rolled back to what is stored.
final class StoreSink: DurableSink {
    private let writerSlot = Mutex<StoreWriter?>(nil)
    private let failure = Mutex<String?>(nil)
    private let onFailure: @Sendable (String) -> Void
    /// Told of a profile whose change was refused because another instance holds it now.
    let onFenced = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// Told of a profile whose change alone the store refused (its batch's other profiles committed).
    let onRefused = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// - Parameter onFailure: called once when a commit fails while storage was healthy.
    init(onFailure: @escaping @Sendable (String) -> Void = { _ in }) {
        self.onFailure = onFailure
    }

    func attach(_ writer: StoreWriter) {
        writerSlot.withLock { $0 = writer }
    }

    func detach() -> StoreWriter? {
        writerSlot.withLock { writer in
            defer { writer = nil }
            return writer
        }
    }

    var unavailableReason: String? { failure.withLock { $0 } }

    /// A writer is attached: not before start-up has opened the store, nor after shutdown closed it.
    var isOpen: Bool { writer != nil }

    /// The writer, once attached.
    var writer: StoreWriter? { writerSlot.withLock { $0 } }

    func enqueue(_ change: ChangeSet) -> @Sendable () async throws -> Void {
        guard let writer else {
            return { throw StoreError.stopped }
        }
        let ticket = writer.enqueue(change)
        return { [self] in
            do {
                try await ticket.wait()
            } catch StoreError.fencedOut(let profile) {
                // Not a storage failure: this profile lives on another instance now.
                onFenced.withLock { $0 }?(profile)
                throw StoreError.fencedOut(profileID: profile)
            } catch StoreError.refused(let profile, let reason) {
                // Only this profile's memory is ahead of the store: with several instances it is dropped
                // (it comes back from the database); on SQLite memory is rolled back to the disk.
                if let onRefused = onRefused.withLock({ $0 }) { onRefused(profile) } else { fail(reason) }
                throw StoreError.refused(profileID: profile, reason: reason)
            } catch {
                fail("\(error)")
                throw error
            }
        }
    }

    /// Commits a change directly (token issues and revocations), whatever the health.
    func commit(_ change: ChangeSet) async throws {
        guard let writer else { throw StoreError.stopped }
        try await writer.submit(change)
    }

    func recovered() {
        failure.withLock { $0 = nil }
    }

    private func fail(_ reason: String) {
        let first = failure.withLock { current -> Bool in
            guard current == nil else { return false }
            current = reason
            return true
        }
        if first { onFailure(reason) }
    }
}
