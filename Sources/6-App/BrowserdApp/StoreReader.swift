import BrowserPersistence
import Dispatch

/// Reads of the embedded database off the request path: one read-only connection, used on one
/// serial queue of its own (a connection is used by one thread at a time), its answers awaited.
final class StoreReader: @unchecked Sendable {
    // `@unchecked Sendable`: `store` is touched only inside `queue.async` blocks, one at a time.
    private let store: PersistenceStore
    private let queue = DispatchQueue(label: "browserd-store-reader")

    init(path: String) throws {
        store = try PersistenceStore(readingAt: path)
    }

    /// Reads on the caller's thread, waiting for the reads queued before (a tab's history realized on
    /// its profile's executor).
    func readNow<T>(_ body: (PersistenceStore) throws -> T) throws -> T {
        try queue.sync { try body(store) }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (PersistenceStore) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body(self.store) }) }
        }
    }
}
