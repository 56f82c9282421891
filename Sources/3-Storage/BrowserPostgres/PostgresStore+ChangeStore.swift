public import BrowserRecords
public import Foundation
import Synchronization

extension PostgresStore: ChangeStore {
    // The writer calls these from its own thread (``StoreWriter``), never from a task: each starts the
    // asynchronous query in a task and blocks that thread until it is done. The queries run on the
    // client's event loops, so nothing waits on the thread that is blocked.

    public func apply(_ changes: [ChangeSet]) throws {
        try blocking { try await self.apply(changes) }
    }

    public func purgeIdempotency(before date: Date) throws {
        try blocking { try await self.purgeIdempotency(before: date) as Void }
    }

    public func readAll() throws -> StoredState {
        try blocking { try await self.load() }
    }

    public func probeWrite() throws {
        try blocking { try await self.probeWrite() as Void }
    }

    /// The same store: its pool drops a broken connection and opens a new one by itself.
    public func reopened() throws -> any ChangeStore { self }

    /// Runs `body` in a task and waits for it on the calling thread (a dedicated one, never a task's).
    private func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
