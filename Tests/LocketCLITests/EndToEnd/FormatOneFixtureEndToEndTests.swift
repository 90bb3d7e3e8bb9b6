import CSQLite
import Foundation
import XCTest

/// Issue 12 item 4 (SPEC §7): keychains made by the format-1 release
/// (Tests/Fixtures/format1, see its README) read with every item as it was
/// made: attributes, secrets, dates, references, availability, and the git
/// credential's kept fields. A keychain of a newer format is refused, untouched.
final class EndToEndFormatOneFixtureTests: EndToEndCase {
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
