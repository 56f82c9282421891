#if PostgreSQL
    import BrowserPostgres
    import Foundation
    import Logging
    import Testing

    /// A new, empty database on the test cluster (scripts/with-postgres.sh sets
    /// `BROWSERD_TEST_DATABASE_URL`), migrated, with a running store; dropped afterwards.
    enum PostgresDatabase {
        static let logger = Logger(label: "browserpostgres-tests")

        static var available: Bool { ProcessInfo.processInfo.environment["BROWSERD_TEST_DATABASE_URL"] != nil }

        static func with<T: Sendable>(_ body: (PostgresStore) async throws -> T) async throws -> T {
            guard let adminText = ProcessInfo.processInfo.environment["BROWSERD_TEST_DATABASE_URL"] else {
                Issue.record("BROWSERD_TEST_DATABASE_URL is not set: run the tests under scripts/with-postgres.sh (make test does)")
                throw CancellationError()
            }
            let admin = try DatabaseURL(adminText)
            let name = "browserpostgres_\(UInt64.random(in: 0...UInt64.max))"
            let url = try await PostgresStore.createDatabase(name, admin: admin, logger: logger)
            let store = PostgresStore(url: url, callDeadline: .seconds(30), logger: logger)
            do {
                let result = try await store.withRunningClient { _ in
                    try await store.prepare()
                    return try await body(store)
                }
                try? await PostgresStore.dropDatabase(name, admin: admin, logger: logger)
                return result
            } catch {
                try? await PostgresStore.dropDatabase(name, admin: admin, logger: logger)
                throw error
            }
        }
    }
#endif
