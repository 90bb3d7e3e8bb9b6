import CSQLite
import Foundation
import LocketCore
import XCTest

/// A keychain file as someone outside locket sees it: bytes to copy and put
/// back, and SQL to edit it with. Every Keychain object on the file must be
/// released first (the last connection to close checkpoints the WAL).
struct RawKeychainFile {
    let path: String

    /// The file's bytes (the WAL is empty once every connection is closed).
    func bytes() throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// Puts `bytes` back in place of the file, as a backup restore or a sync tool would.
    func putBack(_ bytes: Data) throws {
        for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        try bytes.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    /// Runs SQL statements on the file.
    func execute(_ sql: String, file: StaticString = #filePath, line: UInt = #line) {
        var db: OpaquePointer?
        XCTAssertEqual(sqlite3_open(path, &db), SQLITE_OK, file: file, line: line)
        defer { sqlite3_close(db) }
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        XCTAssertEqual(rc, SQLITE_OK, message.map { String(cString: $0) } ?? sql, file: file, line: line)
        sqlite3_free(message)
    }

    /// The value of one meta row, nil when absent.
    func meta(_ name: String) -> [UInt8]? {
        blobs("SELECT value FROM meta WHERE name = '\(name)'").first
    }

    /// The first column of every row of `sql`, as bytes.
    func blobs(_ sql: String) -> [[UInt8]] {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { return [] }
        defer { sqlite3_close(db) }
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { return [] }
        defer { sqlite3_finalize(stmt) }
        var out: [[UInt8]] = []
        while sqlite3_step(stmt) == SQLITE_ROW {
            let n = Int(sqlite3_column_bytes(stmt, 0))
            out.append(n == 0 ? [] : Array(UnsafeRawBufferPointer(start: sqlite3_column_blob(stmt, 0), count: n)))
        }
        return out
    }
}

extension TemporaryKeychain {
    var file: RawKeychainFile { RawKeychainFile(path: path) }

    /// This device's generation mirrors (`$XDG_STATE_HOME/locket/*.generation`).
    var mirrors: [String] {
        let dir = directory + "/state/locket"
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            .filter { $0.hasSuffix(".generation") }.map { dir + "/" + $0 }
    }
}

/// `hex` of bytes, for SQL literals.
func hexLiteral(_ bytes: [UInt8]) -> String {
    "x'" + bytes.map { String(format: "%02x", $0) }.joined() + "'"
}
