import Foundation
import LocketCore
import XCTest

/// A keychain file as someone outside locket sees it: bytes to copy and put
/// back, and SQL to edit it with (through ReliabilityDatabase, the tests' one
/// way into a keychain's SQLite). Every Keychain object on the file must be
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
        XCTAssertNoThrow(try ReliabilityDatabase(path).execute(sql), file: file, line: line)
    }

    /// The value of one meta row, nil when absent.
    func meta(_ name: String) throws -> [UInt8]? {
        try blobs("SELECT value FROM meta WHERE name = '\(name)'").first
    }

    /// The first column of every row of `sql`, as bytes.
    /// A statement that fails throws: an empty answer must mean no rows.
    func blobs(_ sql: String) throws -> [[UInt8]] {
        try ReliabilityDatabase(path, readOnly: true).rows(sql).map { $0.first.flatMap { $0 } ?? [] }
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
