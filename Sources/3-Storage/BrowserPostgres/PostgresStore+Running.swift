package import Logging
package import PostgresNIO

extension PostgresStore {
    /// Runs `body` while the connection pool runs, then stops the pool: for tools and tests (the
    /// application runs ``run()`` for as long as it serves).
    package func withRunningClient<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await self.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}

extension PostgresStore {
    /// Makes an empty database next to `admin`'s (for tests and tools) and returns its address.
    package static func createDatabase(_ name: String, admin: DatabaseURL, logger: Logger) async throws -> DatabaseURL {
        precondition(name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }, "a plain database name")
        let store = PostgresStore(url: admin, maximumConnections: 1, logger: logger)
        _ = try await store.withRunningClient { try await $0.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)")) }
        var url = admin
        url.database = name
        return url
    }

    /// Removes a database made by ``createDatabase(_:admin:logger:)``, ending its sessions.
    package static func dropDatabase(_ name: String, admin: DatabaseURL, logger: Logger) async throws {
        precondition(name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }, "a plain database name")
        let store = PostgresStore(url: admin, maximumConnections: 1, logger: logger)
        _ = try await store.withRunningClient { try await $0.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")) }
    }
}
