import CSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One connection to a SQLite database file (or `:memory:`).
///
/// Not `Sendable`: a connection is used by one thread at a time; the layer that owns it (e.g. a
/// persistence writer on its own thread) decides how it is shared. Opened with extended result codes
/// and SQLite's own mutexes (serialized: a slip in that sharing is serialized, not a crash) unless the
/// owner confines it (`serialized: false`, SQLite's multi-thread mode: a lock taken and released in
/// every `sqlite3_column_*` call was 6 % of a cold profile's load), with foreign keys on and
/// double-quoted string literals off.
public final class SQLiteConnection {
    /// How to open the file.
    public enum Mode: Sendable {
        /// Read and write; create the file when missing.
        case readWriteCreate
        /// Read and write an existing file.
        case readWrite
        /// Read only.
        case readOnly
    }

    let handle: OpaquePointer
    public let path: String
    private var statementCache: [String: SQLiteStatement] = [:]

    /// Opens a database.
    /// - Parameters:
    ///   - path: a file path, or `:memory:`.
    ///   - mode: whether to create, write or only read.
    ///   - serialized: false only for a connection its owner uses from one thread at a time, by
    ///     construction (a serial queue, a thread of its own): no mutex guards it then.
    /// - Throws: ``SQLiteError`` when the file cannot be opened.
    public init(path: String, mode: Mode = .readWriteCreate, serialized: Bool = true) throws {
        var flags = (serialized ? SQLITE_OPEN_FULLMUTEX : SQLITE_OPEN_NOMUTEX) | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        if mode == .readWriteCreate, !path.hasPrefix(":"), !path.isEmpty { Self.ownerOnly(path) }
        var db: OpaquePointer?
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: code, message: message)
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5_000)
        _ = CSQLite_db_config_no_dqs(db)
        try execute("PRAGMA foreign_keys = ON")
    }

    /// Makes `path` readable and writable by its owner only (0600), creating it empty when missing: it
    /// holds secrets (tokens' hashes, profiles' cookies), and SQLite gives its journal and WAL files the
    /// database file's mode. Best effort: a file that cannot be made so is opened as it is.
    public static func ownerOnly(_ path: String) {
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
        _ = chmod(path, 0o600)
    }

    deinit {
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return nothing.
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw SQLiteError(code: sqlite3_extended_errcode(handle), message: text, sql: sql)
        }
    }

    /// Frees what the connection holds between uses: its cached statements (each keeps the buffers of
    /// the last row it read) and its page cache (`sqlite3_db_release_memory`). For a connection that
    /// read much once (a profile's load) and may sit idle for long; statements are prepared again on
    /// next use.
    public func releaseMemory() {
        statementCache.removeAll()
        sqlite3_db_release_memory(handle)
    }

    /// Prepares a statement for repeated use.
    public func prepare(_ sql: String) throws -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    /// The prepared statement for `sql`, prepared once per connection and reused (for hot paths).
    public func cached(_ sql: String) throws -> SQLiteStatement {
        if let statement = statementCache[sql] { return statement }
        let statement = try prepare(sql)
        statementCache[sql] = statement
        return statement
    }

    /// Runs one statement with `values` bound.
    public func run(_ sql: String, _ values: any SQLiteBindable...) throws {
        let statement = try prepare(sql)
        try statement.bind(values)
        while try statement.step() {}
    }

    /// Runs a query and returns every row.
    public func rows(_ sql: String, _ values: any SQLiteBindable...) throws -> [SQLiteRow] {
        let statement = try prepare(sql)
        try statement.bind(values)
        var rows: [SQLiteRow] = []
        while try statement.step() { rows.append(statement.currentRow()) }
        return rows
    }

    /// The first column of the first row, or `.null`.
    public func scalar(_ sql: String, _ values: any SQLiteBindable...) throws -> SQLiteValue {
        let statement = try prepare(sql)
        try statement.bind(values)
        return try statement.step() ? statement.column(0) : .null
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    /// - Parameter immediate: take the write lock at once (`BEGIN IMMEDIATE`).
    public func transaction<T>(immediate: Bool = true, _ body: () throws -> T) throws -> T {
        try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if !isAutocommit { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Whether no transaction is open.
    public var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    func error(_ code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}
