import Foundation
import Logging
import Testing

#if PostgreSQL
    import BrowserPostgres
#endif

/// The stores a process test runs browserd on: SQLite always; PostgreSQL when a server is given
/// (`BROWSERD_TEST_DATABASE_URL`, set by `scripts/with-postgres.sh`, under which `make test` runs the
/// tests). `BROWSERD_REQUIRE_POSTGRES=1` (set by `make test`) makes a missing server a failure.
enum TestStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// PostgreSQL only in a build with the `PostgreSQL` trait (the embedded build tests SQLite alone).
    static var available: [TestStore] {
        #if PostgreSQL
            let environment = ProcessInfo.processInfo.environment
            return environment["BROWSERD_TEST_DATABASE_URL"] != nil || environment["BROWSERD_REQUIRE_POSTGRES"] == "1" ? allCases : [.sqlite]
        #else
            return [.sqlite]
        #endif
    }

    /// Runs `body` with the command-line arguments that put a server on a new, empty store of this
    /// kind (a data directory, or a database of its own), and removes the store afterwards.
    func withArguments<T>(_ body: ([String]) async throws -> T) async throws -> T {
        switch self {
        case .sqlite:
            let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-store-\(UUID())").path
            defer { try? FileManager.default.removeItem(atPath: data) }
            return try await body(["--data-dir", data])
        case .postgres:
            #if PostgreSQL
                guard let text = ProcessInfo.processInfo.environment["BROWSERD_TEST_DATABASE_URL"] else {
                    Issue.record("BROWSERD_TEST_DATABASE_URL is not set: run the tests under scripts/with-postgres.sh (make test does)")
                    throw CancellationError()
                }
                let admin = try DatabaseURL(text)
                let logger = Logger(label: "test-store")
                let name = "apptest_\(UInt64.random(in: 0...UInt64.max))"
                let url = try await PostgresStore.createDatabase(name, admin: admin, logger: logger)
                // Instances on one database share a secret (a file, as in production).
                let secret = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-secret-\(UUID())").path
                try "app-test-cluster-secret-\(UUID())\n".write(toFile: secret, atomically: true, encoding: .utf8)
                defer { try? FileManager.default.removeItem(atPath: secret) }
                do {
                    let result = try await body(["--database-url", url.absoluteString, "--cluster-secret-file", secret])
                    try? await PostgresStore.dropDatabase(name, admin: admin, logger: logger)
                    return result
                } catch {
                    try? await PostgresStore.dropDatabase(name, admin: admin, logger: logger)
                    throw error
                }
            #else
                preconditionFailure("PostgreSQL is a trait this build does not have (`--traits PostgreSQL`)")
            #endif
        }
    }
}
