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
        /// It rebuilds a table other tables refer to (SQLite's twelve steps: create the new table,
        /// copy, drop the old, rename): foreign keys are off while it runs (dropping the old table
        /// would otherwise cascade to the rows that refer to it), and these tables' are checked
        /// before it commits (only these: a row another table held dangling before is no failure
        /// of this step's). Empty: foreign keys stay as they are.
        public let checkedTables: [String]
        public var rebuildsTables: Bool { !checkedTables.isEmpty }

        public init(_ name: String, rebuildingChecks checkedTables: [String] = [], apply: @escaping (SQLiteConnection) throws -> Void) {
            self.name = name
            self.checkedTables = checkedTables
            self.apply = apply
        }

        /// A migration that is plain SQL.
        public init(_ name: String, rebuildingChecks checkedTables: [String] = [], sql: String) {
            self.init(name, rebuildingChecks: checkedTables) { try $0.execute(sql) }
        }
    }

    /// A migration that rebuilt tables left a row whose foreign key refers to nothing.
    public struct ForeignKeyViolation: Error, CustomStringConvertible {
        public let migration: String
        public var description: String { "migration \(migration) left rows whose foreign keys refer to nothing" }
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
            let migration = migrations[version - 1]
            // Outside the transaction: SQLite ignores this pragma inside one.
            let keysWereOn = try migration.rebuildsTables && (connection.scalar("PRAGMA foreign_keys").int ?? 0) == 1
            if keysWereOn { try connection.execute("PRAGMA foreign_keys = OFF") }
            defer { if keysWereOn { try? connection.execute("PRAGMA foreign_keys = ON") } }
            try connection.transaction {
                try migration.apply(connection)
                for table in migration.checkedTables where try connection.scalar("SELECT COUNT(*) FROM pragma_foreign_key_check(?)", table).int != 0 {
                    throw ForeignKeyViolation(migration: migration.name)
                }
                try connection.execute("PRAGMA user_version = \(version)")
            }
            applied.append(version)
        }
        return applied
    }
}
