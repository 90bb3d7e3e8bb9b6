import CSQLite
import Foundation

/// The one way the tests open a keychain's SQLite file directly (issue 12):
/// to look at it at rest, tamper with it, or check its integrity, while no
/// locket process and no Keychain object writes it.
public final class ReliabilityDatabase {
    public struct Failure: Error, CustomStringConvertible { public let description: String }

    private var db: OpaquePointer?
    public let path: String

    public init(_ path: String, readOnly: Bool = false) throws {
        self.path = path
        let flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        guard sqlite3_open_v2(path, &db, flags, nil) == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            db = nil
            throw Failure(description: "cannot open \(path): \(message)")
        }
        sqlite3_busy_timeout(db, 10_000)
    }

    deinit { sqlite3_close(db) }

    public func execute(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw Failure(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    /// Rows of `sql`, each column as bytes (text and blobs) or nil (NULL); integers as decimal text.
    public func rows(_ sql: String, _ bindings: [[UInt8]?] = []) throws -> [[[UInt8]?]] {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else {
            throw Failure(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(stmt) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (i, value) in bindings.enumerated() {
            if let value {
                _ = value.withUnsafeBytes { sqlite3_bind_blob(stmt, Int32(i + 1), $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), transient) }
            } else {
                sqlite3_bind_null(stmt, Int32(i + 1))
            }
        }
        var out: [[[UInt8]?]] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw Failure(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))") }
            var row: [[UInt8]?] = []
            for c in 0..<sqlite3_column_count(stmt) {
                switch sqlite3_column_type(stmt, c) {
                case SQLITE_NULL:
                    row.append(nil)
                case SQLITE_INTEGER:
                    row.append(Array(String(sqlite3_column_int64(stmt, c)).utf8))
                default:
                    let n = Int(sqlite3_column_bytes(stmt, c))
                    if n > 0, let p = sqlite3_column_blob(stmt, c) {
                        row.append(Array(UnsafeRawBufferPointer(start: p, count: n)))
                    } else {
                        row.append([])
                    }
                }
            }
            out.append(row)
        }
        return out
    }

    /// Runs an UPDATE/INSERT/DELETE with blob bindings; returns the number of changed rows.
    @discardableResult
    public func change(_ sql: String, _ bindings: [[UInt8]?] = []) throws -> Int {
        _ = try rows(sql, bindings)
        return Int(sqlite3_changes(db))
    }

    public func text(_ sql: String) throws -> String {
        try rows(sql).map { row in row.map { $0.map { String(decoding: $0, as: UTF8.self) } ?? "NULL" }.joined(separator: "|") }
            .joined(separator: "\n")
    }

    /// `PRAGMA integrity_check` of a file, "ok" when sound; the error text when it cannot even be opened.
    public static func integrity(_ path: String) -> String {
        do {
            let db = try ReliabilityDatabase(path)
            return try db.text("PRAGMA integrity_check")
        } catch {
            return "\(error)"
        }
    }

    /// Moves the WAL into the main file and empties it.
    public static func checkpoint(_ path: String) throws {
        let db = try ReliabilityDatabase(path)
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }
}

// MARK: - Files
