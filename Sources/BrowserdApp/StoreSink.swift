import BrowserPersistence
import BrowserRecords
import BrowserServices
import Synchronization

/// Connects the mediators' durable changes to the store's writer, once the store is open.
final class StoreSink: DurableSink {
    private let writer = Mutex<StoreWriter?>(nil)

    func attach(_ writer: StoreWriter) {
        self.writer.withLock { $0 = writer }
    }

    func detach() -> StoreWriter? {
        writer.withLock { writer in
            defer { writer = nil }
            return writer
        }
    }

    func enqueue(_ change: ChangeSet) -> @Sendable () async throws -> Void {
        guard let writer = writer.withLock({ $0 }) else {
            return { throw StoreError.stopped }
        }
        let ticket = writer.enqueue(change)
        return { try await ticket.wait() }
    }
}
