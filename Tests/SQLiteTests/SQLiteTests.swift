import Foundation
import SQLite
import TestSupport
import Testing

/// Opens an in-memory database for one test and closes it after.
func withDatabase<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
    let connection = try SQLiteConnection(path: ":memory:")
    return try body(connection)
}

@Suite(.offThePool) struct SQLiteConnectionTests {
    @Test func bindsAndReadsEveryType() throws {
        try withDatabase { db in
            try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
            try db.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", 42, 2.5, "héllo \"x\"", [UInt8]([0, 1, 255]), String?.none)
            let row = try #require(try db.rows("SELECT i, r, s, b, n FROM t").first)
            #expect(row[0] == .integer(42))
            #expect(row[1] == .real(2.5))
            #expect(row[2] == .text("héllo \"x\""))
            #expect(row[3] == .blob([0, 1, 255]))
            #expect(row[4] == .null)
        }
    }

    @Test func preparedStatementRunsRepeatedly() throws {
        try withDatabase { db in
            try db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
            let insert = try db.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
            for k in 0..<100 { try insert.run(k, "v\(k)") }
            #expect(try db.scalar("SELECT count(*) FROM t").int == 100)
            #expect(try db.scalar("SELECT v FROM t WHERE k = ?", 7).string == "v7")
        }
    }

    /// Releasing memory lets the cached statements go (each keeps its last row's buffers); the next
    /// use prepares a new one that reads as before.
    @Test func releasingMemoryDropsTheCachedStatements() throws {
        try withDatabase { db in
            try db.execute("CREATE TABLE t (s TEXT)")
            try db.run("INSERT INTO t VALUES (?)", String(repeating: "x", count: 10_000))
            let first = try db.cached("SELECT s FROM t")
            #expect(try first.step())
            db.releaseMemory()
            let second = try db.cached("SELECT s FROM t")
            #expect(first !== second)
            #expect(try second.step())
            #expect(second.column(0) == .text(String(repeating: "x", count: 10_000)))
        }
    }

    @Test func transactionRollsBackOnError() throws {
        try withDatabase { db in
            try db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
            struct Boom: Error {}
            #expect(throws: Boom.self) {
                try db.transaction {
                    try db.run("INSERT INTO t VALUES (1)")
                    throw Boom()
                }
            }
            #expect(try db.scalar("SELECT count(*) FROM t").int == 0)
            #expect(db.isAutocommit)
        }
    }

    @Test func constraintViolationIsTyped() throws {
        try withDatabase { db in
            try db.execute("CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (p INTEGER REFERENCES p(id))")
            let error = try #require(throws: SQLiteError.self) { try db.run("INSERT INTO c VALUES (9)") }
            #expect(error.reason == .constraint)
        }
    }

    @Test func syntaxErrorNamesTheSQL() throws {
        try withDatabase { db in
            let error = try #require(throws: SQLiteError.self) { try db.execute("SELEC 1") }
            #expect(error.sql == "SELEC 1")
            #expect(error.description.contains("syntax error"))
        }
    }

    @Test func notADatabaseIsRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("notdb-\(UUID()).sqlite").path
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = try #require(throws: SQLiteError.self) {
            let db = try SQLiteConnection(path: path, mode: .readWrite)
            _ = try db.scalar("PRAGMA quick_check")
        }
        #expect(error.reason == .notADatabase)
    }
}

@Suite(.offThePool) struct SQLiteMigratorTests {
    let migrator = SQLiteMigrator([
        .init("create", sql: "CREATE TABLE a (x INTEGER)"),
        .init("add column", sql: "ALTER TABLE a ADD COLUMN y TEXT"),
    ])

    @Test func appliesInOrderOnce() throws {
        try withDatabase { db in
            #expect(try migrator.migrate(db) == [1, 2])
            let version = try SQLiteMigrator.version(of: db)
            #expect(version == 2)
            #expect(try migrator.migrate(db) == [])
            try db.run("INSERT INTO a (x, y) VALUES (1, 'y')")
        }
    }

    @Test func upgradesFromAnOlderVersion() throws {
        try withDatabase { db in
            try SQLiteMigrator(Array(migrator.migrations.prefix(1))).migrate(db)
            try db.run("INSERT INTO a (x) VALUES (5)")
            #expect(try migrator.migrate(db) == [2])
            #expect(try db.scalar("SELECT x FROM a").int == 5)
        }
    }

    @Test func refusesANewerDatabase() throws {
        try withDatabase { db in
            try db.execute("PRAGMA user_version = 7")
            #expect(throws: SQLiteMigrator.MigrationError.databaseIsNewer(found: 7, supported: 2)) { try migrator.migrate(db) }
        }
    }

    /// A version that cannot be read is an error, never 0 (issue 53: `PersistenceStore.schemaVersion`,
    /// which reads it so, answered 0 for a file it could not read).
    @Test func aVersionThatCannotBeReadIsAnErrorNotZero() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-notadb-\(UUID()).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
        let connection = try SQLiteConnection(path: path)
        #expect(throws: SQLiteError.self) { try SQLiteMigrator.version(of: connection) }
    }

    /// A migration that rebuilds a referenced table runs with foreign keys off (the old table's drop
    /// cascades to nothing), checks the tables it names before it commits (a rebuild that lost a
    /// referenced row is rolled back), and turns them on again.
    @Test func aTableRebuildKeepsReferencesOrRollsBack() throws {
        let base = SQLiteMigrator.Migration(
            "parent and child",
            sql: """
                CREATE TABLE parent (id TEXT PRIMARY KEY, junk BLOB);
                CREATE TABLE child (parent_id TEXT PRIMARY KEY REFERENCES parent(id) ON DELETE CASCADE);
                """)
        func rebuild(keeping filter: String) -> SQLiteMigrator.Migration {
            .init(
                "rebuild parent", rebuildingChecks: ["child"],
                sql: """
                    CREATE TABLE parent_rebuilt (id TEXT PRIMARY KEY);
                    INSERT INTO parent_rebuilt (id) SELECT id FROM parent WHERE \(filter);
                    DROP TABLE parent;
                    ALTER TABLE parent_rebuilt RENAME TO parent;
                    """)
        }
        for (filter, keeps) in [("1", true), ("id <> 'b'", false)] {
            try withDatabase { db in
                try db.execute("PRAGMA foreign_keys = ON")
                try SQLiteMigrator([base]).migrate(db)
                try db.run("INSERT INTO parent (id) VALUES ('a'), ('b')")
                try db.run("INSERT INTO child (parent_id) VALUES ('a'), ('b')")
                let migrator = SQLiteMigrator([base, rebuild(keeping: filter)])
                if keeps {
                    #expect(try migrator.migrate(db) == [2])
                    #expect(try db.scalar("SELECT COUNT(*) FROM child").int == 2, "the drop cascaded to nothing")
                } else {
                    #expect(throws: SQLiteMigrator.ForeignKeyViolation.self) { try migrator.migrate(db) }
                    #expect(try SQLiteMigrator.version(of: db) == 1 && db.scalar("SELECT COUNT(*) FROM parent").int == 2, "rolled back")
                }
                #expect(try db.scalar("PRAGMA foreign_keys").int == 1, "on again")
            }
        }
    }

    @Test func failingMigrationLeavesEarlierOnes() throws {
        try withDatabase { db in
            let broken = SQLiteMigrator(migrator.migrations + [.init("broken", sql: "CREATE TABLE a (z)")])
            #expect(throws: SQLiteError.self) { try broken.migrate(db) }
            let version = try SQLiteMigrator.version(of: db)
            #expect(version == 2)
        }
    }
}
