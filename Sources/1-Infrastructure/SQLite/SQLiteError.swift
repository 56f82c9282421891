import CSQLite

/// An error from SQLite: its result code (extended codes on) and message.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The kinds callers act on; anything else is `.other`.
    public enum Reason: Sendable, Equatable {
        case busy, readOnly, ioError, full, corrupt, notADatabase, cantOpen, constraint, misuse, other
    }

    /// The extended result code.
    public let code: Int32
    public let message: String
    /// The SQL that failed, when there was one.
    public let sql: String?

    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    public var reason: Reason {
        switch code & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED: .busy
        case SQLITE_READONLY: .readOnly
        case SQLITE_IOERR: .ioError
        case SQLITE_FULL: .full
        case SQLITE_CORRUPT: .corrupt
        case SQLITE_NOTADB: .notADatabase
        case SQLITE_CANTOPEN: .cantOpen
        case SQLITE_CONSTRAINT: .constraint
        case SQLITE_MISUSE: .misuse
        default: .other
        }
    }

    public var description: String {
        let base = "SQLite error \(code): \(message)"
        return sql.map { "\(base) (in: \($0.prefix(120)))" } ?? base
    }
}
