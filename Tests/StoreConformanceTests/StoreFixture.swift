import BrowserPersistence
import BrowserRecords
import Foundation
import Logging
import SQLite
import Synchronization
import Testing

#if PostgreSQL
    import BrowserPostgres
    import PostgresNIO
#endif

/// The stores every conformance test runs against. PostgreSQL needs a server:
/// `BROWSERD_TEST_DATABASE_URL` (set by `scripts/with-postgres.sh`, which `make test` runs the tests under).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// SQLite always; PostgreSQL when a server is given. `BROWSERD_REQUIRE_POSTGRES=1` turns a missing
    /// server into a failure instead (CI sets it), so the PostgreSQL half cannot be skipped silently.
    /// PostgreSQL only in a build with the `PostgreSQL` trait (the embedded build tests SQLite alone).
    static var available: [StoreKind] {
        #if PostgreSQL
            ProcessInfo.processInfo.environment["BROWSERD_TEST_DATABASE_URL"] != nil
                || ProcessInfo.processInfo.environment["BROWSERD_REQUIRE_POSTGRES"] == "1" ? allCases : [.sqlite]
        #else
            [.sqlite]
        #endif
    }
}

/// One empty store of a kind, opened afresh as often as a test likes, removed at the end.
final class StoreFixture: Sendable {
    let kind: StoreKind
    /// SQLite: the file. PostgreSQL: the database's URL.
    let location: String
    private let adminURL: String?

    private init(kind: StoreKind, location: String, adminURL: String?) {
        self.kind = kind
        self.location = location
        self.adminURL = adminURL
    }

    static let logger = Logger(label: "store-conformance")
    /// How long a PostgreSQL statement may take here: these tests check what is stored, not how fast,
    /// and a loaded two-core machine (a fresh container, CI) once took over the default 5 s for one
    /// of 64 concurrent commits.
    static let callDeadline = Duration.seconds(30)

    /// Runs `body` with a new, empty store of `kind`, and removes it afterwards.
    static func with<T>(_ kind: StoreKind, _ body: (StoreFixture) async throws -> T) async throws -> T {
        let fixture: StoreFixture
        switch kind {
        case .sqlite:
            fixture = StoreFixture(
                kind: kind,
                location: FileManager.default.temporaryDirectory
                    .appendingPathComponent("browserd-conformance-\(UUID()).sqlite").path, adminURL: nil)
        case .postgres:
            #if PostgreSQL
                guard let admin = ProcessInfo.processInfo.environment["BROWSERD_TEST_DATABASE_URL"] else {
                    Issue.record("BROWSERD_TEST_DATABASE_URL is not set: run the tests under scripts/with-postgres.sh (make test does)")
                    throw CancellationError()
                }
                let name = "conformance_\(UInt64.random(in: 0...UInt64.max))"
                let url = try await PostgresStore.createDatabase(name, admin: try DatabaseURL(admin), logger: logger)
                fixture = StoreFixture(kind: kind, location: url.absoluteString, adminURL: admin)
            #else
                preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
            #endif
        }
        do {
            let result = try await body(fixture)
            await fixture.remove()
            return result
        } catch {
            await fixture.remove()
            throw error
        }
    }

    private func remove() async {
        switch kind {
        case .sqlite:
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: location + suffix) }
        case .postgres:
            #if PostgreSQL
                guard let adminURL, let admin = try? DatabaseURL(adminURL), let name = try? DatabaseURL(location).database else { return }
                try? await PostgresStore.dropDatabase(name, admin: admin, logger: Self.logger)
            #else
                preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
            #endif
        }
    }

    /// Opens the store (migrating it), runs `body` with it on a thread of its own (as the writer
    /// drives a store), and closes it.
    func withStore<T: Sendable>(_ body: @escaping @Sendable (any ChangeStore) throws -> T) async throws -> T {
        switch kind {
        case .sqlite:
            let path = location
            return try await onThread { try body(try PersistenceStore(path: path)) }
        case .postgres:
            #if PostgreSQL
                let store = PostgresStore(url: try DatabaseURL(location), callDeadline: Self.callDeadline, logger: Self.logger)
                return try await store.withRunningClient { _ in
                    try await store.prepare()
                    return try await onThread { try body(store) }
                }
            #else
                preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
            #endif
        }
    }

    /// Opens the store, runs `body` with a ``StoreWriter`` over it, then stops the writer.
    func withWriter<T: Sendable>(_ body: @Sendable (StoreWriter) async throws -> T) async throws -> T {
        func run(_ store: any ChangeStore) async throws -> T {
            let writer = StoreWriter(store: store)
            do {
                let result = try await body(writer)
                await writer.stop()
                return result
            } catch {
                await writer.stop()
                throw error
            }
        }
        switch kind {
        case .sqlite:
            return try await run(try PersistenceStore(path: location))
        case .postgres:
            #if PostgreSQL
                let store = PostgresStore(url: try DatabaseURL(location), callDeadline: Self.callDeadline, logger: Self.logger)
                return try await store.withRunningClient { _ in
                    try await store.prepare()
                    return try await run(store)
                }
            #else
                preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
            #endif
        }
    }

    /// Everything stored, with idempotency answers as of `now`.
    func read(now: Date = Date()) async throws -> StoredState {
        switch kind {
        case .sqlite:
            let path = location
            return try await onThread { try PersistenceStore(path: path).load(now: now) }
        case .postgres:
            #if PostgreSQL
                let store = PostgresStore(url: try DatabaseURL(location), callDeadline: Self.callDeadline, logger: Self.logger)
                return try await store.withRunningClient { _ in
                    try await store.prepare()
                    return try await store.load(now: now)
                }
            #else
                preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
            #endif
        }
    }

    /// The picture of a stored tab's page, with its bytes, as the API reads it.
    func snapshot(ofTab id: String) async throws -> SnapshotRecord? {
        switch kind {
        case .sqlite:
            let path = location
            return try await onThread { try PersistenceStore(path: path).snapshot(ofTab: id) }
        case .postgres:
            #if PostgreSQL
                let store = PostgresStore(url: try DatabaseURL(location), callDeadline: Self.callDeadline, logger: Self.logger)
                return try await store.withRunningClient { _ in
                    try await store.prepare()
                    return try await StoredLookups(store: store, logger: Self.logger).snapshot(ofTab: id)
                }
            #else
                preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
            #endif
        }
    }

    /// Marks the store as written by a newer browserd (a schema version past this program's).
    func makeNewer() async throws {
        switch kind {
        case .sqlite:
            let path = location
            try await onThread { try SQLiteConnection(path: path).execute("PRAGMA user_version = 99") }
        case .postgres:
            #if PostgreSQL
                let store = PostgresStore(url: try DatabaseURL(location), callDeadline: Self.callDeadline, logger: Self.logger)
                try await store.withRunningClient { client in
                    try await store.prepare()
                    try await client.query("INSERT INTO browserd_schema (version, name) VALUES (99, 'from the future')")
                }
            #else
                preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
            #endif
        }
    }

    /// The schema version a fresh open leaves.
    func schemaVersion() async throws -> Int {
        switch kind {
        case .sqlite:
            let path = location
            return try await onThread { try SQLiteMigrator.version(of: SQLiteConnection(path: path)) }
        case .postgres:
            #if PostgreSQL
                let store = PostgresStore(url: try DatabaseURL(location), callDeadline: Self.callDeadline, logger: Self.logger)
                return try await store.withRunningClient { _ in try await store.schemaVersion() }
            #else
                preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
            #endif
        }
    }

    /// Opens the store and says why it cannot be used, or nil when it can.
    func openError() async -> String? {
        do {
            switch kind {
            case .sqlite:
                let path = location
                _ = try await onThread { try PersistenceStore(path: path).schemaVersion() }
            case .postgres:
                #if PostgreSQL
                    let store = PostgresStore(url: try DatabaseURL(location), callDeadline: Self.callDeadline, logger: Self.logger)
                    try await store.withRunningClient { _ in try await store.prepare() }
                #else
                    preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
                #endif
            }
            return nil
        } catch {
            return "\(error)"
        }
    }
}

/// Runs `body` on a new thread (stores are driven from threads, never from tasks).
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(with: Result { try body() })
        }.start()
    }
}
