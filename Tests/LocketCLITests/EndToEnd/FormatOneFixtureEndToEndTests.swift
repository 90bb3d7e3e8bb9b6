import CSQLite
import Foundation
import XCTest

/// Issue 12 item 4 (SPEC §7): keychains made by the format-1 release
/// (Tests/Fixtures/format1, see its README) read with every item as it was
/// made: attributes, secrets, dates, references, availability, and the git
/// credential's kept fields. A keychain of a newer format is refused, untouched.
final class EndToEndFormatOneFixtureTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    static let fixtures = LocketBinary.repositoryRoot + "/Tests/Fixtures/format1"

    /// Copies the fixture `name`.keychain and its device secret into the sandbox.
    private func install(_ name: String) throws {
        let manager = FileManager.default
        for directory in [sandbox.dataHome + "/locket", sandbox.stateHome + "/locket"] {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let keychain = sandbox.dataHome + "/locket/\(name).keychain"
        let device = sandbox.stateHome + "/locket/device.key"
        try manager.copyItem(atPath: Self.fixtures + "/\(name).keychain", toPath: keychain)
        try manager.copyItem(atPath: Self.fixtures + "/device.key", toPath: device)
        chmod(keychain, 0o600)
        chmod(device, 0o600)
    }

    private func file(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: Self.fixtures + "/" + name)))
    }

    /// ThisDeviceOnly items open only on the machine that made the fixtures.
    private var sameMachine: Bool {
        let here = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8)) ?? ""
        let there = (try? String(contentsOfFile: Self.fixtures + "/machine-id", encoding: .utf8)) ?? "-"
        return here.trimmingCharacters(in: .whitespacesAndNewlines) == there.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func assertSameItems(_ dumped: [[String: Any]], _ expected: [[String: Any]],
                                 file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(dumped.count, expected.count, "every item is there", file: file, line: line)
        for (got, want) in zip(dumped, expected) {
            let thisDeviceOnly = (want["accessible"] as? String)?.hasSuffix("this-device-only") == true
            if thisDeviceOnly && !sameMachine {
                // Another machine: listed, never opened.
                XCTAssertEqual(got["status"] as? String, "unavailable-on-this-device", "\(got)", file: file, line: line)
                for key in ["class", "accessGroup", "accessible", "persistentRef"] {
                    XCTAssertEqual(got[key] as? String, want[key] as? String, key, file: file, line: line)
                }
                continue
            }
            XCTAssertEqual(NSDictionary(dictionary: got), NSDictionary(dictionary: want), file: file, line: line)
        }
    }

    func testTheFormatOneKeychainReadsEveryItem() throws {
        try install("fixture")
        let expected = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(try file("expected.json"))) as? [[String: Any]])
        XCTAssertEqual(expected.count, 14, "the fixture's items")
        ok("-k", "fixture", "unlock", "--password-stdin", input: .bytes(try file("password")))
        assertSameItems(try ok("-k", "fixture", "--json", "dump", "--data").jsonArray(), expected)
        // Lookups by attribute use the format's blind indexes.
        XCTAssertEqual(secret("-k", "fixture", "-s", "ünïcödé service", "-a", "ユーザー"), Array("päßwörd ✓".utf8))
        XCTAssertEqual(secret("-k", "fixture", "--class", "inet", "-s", "example.com", "-a", "alice", "-P", "8443"), Array("https-pw".utf8))
        // The git credential's kept fields come back.
        let credential = locket(["-k", "fixture", "credential", "get"], input: .text("protocol=https\nhost=git.example.org\n\n"))
        XCTAssertEqual(credential.status, 0, credential.summary)
        for line in ["username=carol", "password=git-secret", "password_expiry_utc=2000000000", "oauth_refresh_token=refresh-xyz"] {
            XCTAssertTrue(credential.out.contains(line + "\n"), "\(line) missing: \(credential.summary)")
        }
    }

    /// What the file holds: its meta format, whether it has format 1's
    /// columns, and whether it has format 2's blind table.
    private func layout(_ name: String) -> (format: Int64, hasColumns: Bool, hasBlind: Bool) {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        guard sqlite3_open_v2(sandbox.dataHome + "/locket/\(name).keychain", &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { return (-1, false, false) }
        func integer(_ sql: String) -> Int64 {
            var stmt: OpaquePointer?
            defer { sqlite3_finalize(stmt) }
            guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK, sqlite3_step(stmt) == SQLITE_ROW else { return -1 }
            if sqlite3_column_type(stmt, 0) == SQLITE_BLOB {
                let bytes = UnsafeRawBufferPointer(start: sqlite3_column_blob(stmt, 0), count: Int(sqlite3_column_bytes(stmt, 0)))
                return bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
            }
            return sqlite3_column_int64(stmt, 0)
        }
        return (integer("SELECT value FROM meta WHERE name = 'format'"),
                integer("SELECT count(*) FROM pragma_table_info('items') WHERE name LIKE 'i\\_%' ESCAPE '\\'") > 0,
                integer("SELECT count(*) FROM sqlite_master WHERE name = 'blind'") > 0)
    }

    private func checksum(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: sandbox.dataHome + "/locket/\(name).keychain"))
    }

    /// A writing command migrates the file to format 2 in place; every item
    /// reads as the format-1 release made it, and lookups by attribute (the
    /// empty port of a git credential included) find what they found before.
    func testAWritingCommandMigratesTheFormatOneKeychain() throws {
        try install("fixture")
        let expected = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(try file("expected.json"))) as? [[String: Any]])
        // Read-only commands leave format 1 as it is.
        let before = try checksum("fixture")
        ok("-k", "fixture", "--json", "dump")
        ok("-k", "fixture", "status")
        XCTAssertEqual(try checksum("fixture"), before, "a read-only command writes nothing")
        XCTAssertEqual(layout("fixture").format, 1)
        // The first writing command (unlock: it counts attempts) migrates, in
        // the same transaction as its own write.
        ok("-k", "fixture", "unlock", "--password-stdin", input: .bytes(try file("password")))
        ok("-k", "fixture", "add", "-s", "after migration", "-a", "me", "-w", input: .text("new-secret\n"))
        let migrated = layout("fixture")
        XCTAssertEqual(migrated.format, 2, "migrated")
        XCTAssertFalse(migrated.hasColumns, "no i_ column is left")
        XCTAssertTrue(migrated.hasBlind)
        ok("-k", "fixture", "delete", "-s", "after migration", "-a", "me")
        assertSameItems(try ok("-k", "fixture", "--json", "dump", "--data").jsonArray(), expected)
        XCTAssertEqual(secret("-k", "fixture", "-s", "ünïcödé service", "-a", "ユーザー"), Array("päßwörd ✓".utf8))
        XCTAssertEqual(secret("-k", "fixture", "--class", "inet", "-s", "example.com", "-a", "alice", "-P", "8443"), Array("https-pw".utf8))
        let credential = locket(["-k", "fixture", "credential", "get"], input: .text("protocol=https\nhost=git.example.org\n\n"))
        XCTAssertEqual(credential.status, 0, credential.summary)
        for line in ["username=carol", "password=git-secret", "password_expiry_utc=2000000000", "oauth_refresh_token=refresh-xyz"] {
            XCTAssertTrue(credential.out.contains(line + "\n"), "\(line) missing: \(credential.summary)")
        }
        // Format 2 keeps uniqueness and takes new items.
        ok("-k", "fixture", "add", "-s", "after migration", "-a", "me", "-w", input: .text("new-secret\n"))
        let duplicate = locket(["-k", "fixture", "add", "-s", "after migration", "-a", "me", "-w"], input: .text("other\n"))
        XCTAssertEqual(duplicate.status, 45, "errSecDuplicateItem -25299: \(duplicate.summary)")
        XCTAssertEqual(secret("-k", "fixture", "-s", "after migration"), Array("new-secret".utf8))
        ok("-k", "fixture", "delete", "-s", "after migration", "-a", "me")
        assertSameItems(try ok("-k", "fixture", "--json", "dump", "--data").jsonArray(), expected)
    }

    /// Where the blind-index key can't be had without the password (another
    /// device), a writing command refuses with a typed reason and writes nothing.
    func testAnUpgradeWithoutTheKeysIsRefusedUntouched() throws {
        try install("fixture")
        XCTAssertEqual(unlink(sandbox.stateHome + "/locket/device.key"), 0)
        let before = try checksum("fixture")
        let result = locket(["-k", "fixture", "delete", "-s", "anything"])
        XCTAssertEqual(result.status, 36, "errSecInteractionNotAllowed -25308: \(result.summary)")
        XCTAssertTrue(result.err.contains("unlock first to upgrade"), result.summary)
        XCTAssertEqual(try checksum("fixture"), before, "the file is left as it was")
        XCTAssertEqual(layout("fixture").format, 1)
    }

    func testTheFormatOneKeychainWithoutAPasswordMigrates() throws {
        try install("nopass")
        let expected = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(try file("nopass-expected.json"))) as? [[String: Any]])
        ok("-k", "nopass", "add", "-s", "after migration", "-w", input: .text("x\n"))
        XCTAssertEqual(layout("nopass").format, 2)
        ok("-k", "nopass", "delete", "-s", "after migration")
        assertSameItems(try ok("-k", "nopass", "--json", "dump", "--data").jsonArray(), expected)
    }

    func testTheFormatOneKeychainWithoutAPasswordReadsEveryItem() throws {
        try install("nopass")
        let expected = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(try file("nopass-expected.json"))) as? [[String: Any]])
        assertSameItems(try ok("-k", "nopass", "--json", "dump", "--data").jsonArray(), expected)
    }

    func testANewerFormatIsRefusedAndLeftUntouched() throws {
        try install("nopass")
        let path = sandbox.dataHome + "/locket/nopass.keychain"
        var db: OpaquePointer?
        XCTAssertEqual(sqlite3_open(path, &db), SQLITE_OK)
        XCTAssertEqual(sqlite3_exec(db, "UPDATE meta SET value = X'0000000000000063' WHERE name = 'format'", nil, nil, nil), SQLITE_OK)
        sqlite3_close(db)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        for command in [["find", "-s", "plain"], ["add", "-s", "new", "-w", "x"], ["status"], ["unlock", "--password-stdin"]] {
            let result = locket(["-k", "nopass"] + command, input: .text("x\n"))
            XCTAssertEqual(result.status, 49, "errSecInvalidKeychain -25295: \(result.summary)")
            XCTAssertTrue(result.err.contains("format 99, newer than this locket knows"), result.summary)
            XCTAssertTrue(result.err.contains("locket: hint: "), result.summary)
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before, "the file is left as it was")
    }
}
