import CSQLite

/// A prepared statement: bind typed values, step through rows, reset to run again.
///
/// Owned by one connection and used on the thread that uses that connection.
public final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String
    private unowned let connection: SQLiteConnection

    init(connection: SQLiteConnection, sql: String) throws {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(connection.handle, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw connection.error(code, sql: sql)
        }
        self.handle = statement
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds values to the parameters `?1…?n` in order, after clearing earlier bindings.
    /// - Throws: ``SQLiteError`` when a value cannot be bound (e.g. too many values).
    public func bind(_ values: [any SQLiteBindable]) throws {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value.sqliteValue {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let v): code = sqlite3_bind_int64(handle, index, v)
            case .real(let v): code = sqlite3_bind_double(handle, index, v)
            // With its byte length, not up to a NUL: the text is stored exactly as given.
            case .text(let v): code = sqlite3_bind_text(handle, index, v, Int32(v.utf8.count), CSQLite_transient())
            case .blob(let v):
                code = v.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), CSQLite_transient()) }
            }
            guard code == SQLITE_OK else { throw connection.error(code, sql: sql) }
        }
    }

    /// Advances to the next row. - Returns: true when a row is available, false when done.
    public func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(handle)
            throw connection.error(code, sql: sql)
        }
    }

    /// Runs the statement to completion with `values` bound.
    public func run(_ values: any SQLiteBindable...) throws {
        try bind(values)
        while try step() {}
        sqlite3_reset(handle)
    }

    /// Runs a query and collects every row.
    public func rows(_ values: any SQLiteBindable...) throws -> [SQLiteRow] { try rows(bindings: values) }

    /// Binds `values` (as many as the statement's parameters), steps to the end and returns every row.
    public func rows(bindings values: [any SQLiteBindable]) throws -> [SQLiteRow] {
        try bind(values)
        var rows: [SQLiteRow] = []
        while try step() { rows.append(currentRow()) }
        sqlite3_reset(handle)
        return rows
    }

    /// Number of columns in a result row.
    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// The value of column `index` (0-based) in the current row.
    public func column(_ index: Int) -> SQLiteValue {
        let i = Int32(index)
        switch sqlite3_column_type(handle, i) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, i))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, i))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(handle, i) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, i))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, i))
            guard count > 0, let blob = sqlite3_column_blob(handle, i) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
        default: return .null
        }
    }

    /// The current row's values.
    public func currentRow() -> SQLiteRow {
        SQLiteRow(values: (0..<columnCount).map(column))
    }
}

/// One result row.
public struct SQLiteRow: Sendable, Equatable {
    public var values: [SQLiteValue]
    public subscript(index: Int) -> SQLiteValue { values[index] }
}
