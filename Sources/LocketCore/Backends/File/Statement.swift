import CLocketSQLite
import CSQLite

/// A prepared statement. Binds are 1-based, columns 0-based.
final class Statement {
    private let stmt: OpaquePointer
    private unowned let database: Database

    init(_ stmt: OpaquePointer, database: Database) {
        self.stmt = stmt
        self.database = database
    }

    deinit { sqlite3_finalize(stmt) }

    func bind(_ index: Int32, _ value: Int64?) throws {
        if let value { try database.check(sqlite3_bind_int64(stmt, index, value)) } else { try bindNull(index) }
    }

    func bind(_ index: Int32, _ value: String) throws {
        try database.check(sqlite3_bind_text(stmt, index, value, -1, locket_sqlite_transient()))
    }

    func bind(_ index: Int32, _ value: [UInt8]) throws {
        _ = try value.withUnsafeBytes { raw in
            // A zero-length blob must still be a blob, not NULL.
            try database.check(sqlite3_bind_blob(stmt, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                                 Int32(raw.count), locket_sqlite_transient()))
        }
    }

    func bindNull(_ index: Int32) throws {
        try database.check(sqlite3_bind_null(stmt, index))
    }

    /// Advances; true while a row is available.
    func step() throws -> Bool {
        try database.check(sqlite3_step(stmt)) == SQLITE_ROW
    }

    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(stmt, column) else { return "" }
        return String(cString: p)
    }

    func blob(_ column: Int32) -> [UInt8] {
        let n = Int(sqlite3_column_bytes(stmt, column))
        guard n > 0, let p = sqlite3_column_blob(stmt, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }

    /// The column's bytes without copying, valid until the next step.
    func withBlob<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let p = sqlite3_column_blob(stmt, column)
        let n = Int(sqlite3_column_bytes(stmt, column))
        return try body(UnsafeRawBufferPointer(start: p, count: n))
    }
}
