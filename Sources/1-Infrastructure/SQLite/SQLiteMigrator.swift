/// Forward-only schema migrations, recorded in `PRAGMA user_version`.
///
/// Migration `n` (1-based, in order) takes the schema from version n−1 to n inside one transaction.
/// A database whose version is newer than the last migration was written by a newer program and is
/// refused rather than touched.
public struct SQLiteMigrator {
    /// Why migrating failed.
    public enum MigrationError: Error, CustomStringConvertible, Equatable {
        case databaseIsNewer(found: Int, supported: Int)

        public var description: String {
            switch self {
            case .databaseIsNewer(let found, let supported):
                "the database has schema version \(found), but this program knows only up to \(supported): it was written by a newer version"
            }
        }
    }

    /// One step of the schema.
    public struct Migration {
        public let name: String
        public let apply: (SQLiteConnection) throws -> Void

        public init(_ name: String, apply: @escaping (SQLiteConnection) throws -> Void) {
            self.name = name
            self.apply = apply
        }

        /// A migration that is plain SQL.
        public init(_ name: String, sql: String) {
            self.init(name) { try $0.execute(sql) }
        }
    }

    public let migrations: [Migration]

    public init(_ migrations: [Migration]) { self.migrations = migrations }

    /// The newest schema version these migrations produce.
    public var latestVersion: Int { migrations.count }

    /// The version recorded in the database.
    public static func version(of connection: SQLiteConnection) throws -> Int {
        try connection.scalar("PRAGMA user_version").int ?? 0
    }

    /// Applies every migration the database has not had yet.
    /// - Returns: the versions applied, in order (empty when already current).
    /// - Throws: ``MigrationError/databaseIsNewer(found:supported:)``, or the failing migration's error
    ///   (that migration is rolled back; earlier ones stay).
    @discardableResult
    public func migrate(_ connection: SQLiteConnection) throws -> [Int] {
        let current = try Self.version(of: connection)
        guard current <= latestVersion else {
            throw MigrationError.databaseIsNewer(found: current, supported: latestVersion)
        }
        var applied: [Int] = []
        for version in (current + 1)..<(latestVersion + 1) {
            try connection.transaction {
                try migrations[version - 1].apply(connection)
                try connection.execute("PRAGMA user_version = \(version)")
            }
            applied.append(version)
        }
        return applied
    }
}
