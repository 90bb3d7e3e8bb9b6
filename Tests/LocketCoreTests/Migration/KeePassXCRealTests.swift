import Foundation
@testable import LocketCore
import LocketTestSupport
import XCTest

/// Issue 15: a KeePassXC database made and exported to CSV by the real
/// keepassxc-cli (Debian's keepassxc package; `make test-deps` installs it).
final class KeePassXCRealTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        guard let tool = Self.find("keepassxc-cli") else {
            throw XCTSkip("keepassxc-cli is not installed (Debian package keepassxc; make test-deps installs it)")
        }
        _ = tool
        directory = NSTemporaryDirectory() + "/locket-kpx-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func find(_ name: String) -> String? { executableOnPath(name) }

    /// Runs keepassxc-cli with `input` on stdin (its password prompts read stdin); returns stdout.
    @discardableResult
    private func cli(_ arguments: [String], input: String) throws -> Data {
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = directory
        environment["QT_QPA_PLATFORM"] = "offscreen"
        let result = Spawn.run(Self.find("keepassxc-cli")!, arguments, environment: environment, input: .text(input), timeout: 120)
        guard result.status == 0 else {
            throw XCTSkip("keepassxc-cli \(arguments.first ?? "") failed (\(result.summary)): \(result.err)")
        }
        return Data(result.stdout)
    }

    func testDatabaseMadeAndExportedByKeePassXC() throws {
        let db = directory + "/test.kdbx"
        let key = "db-pass-phrase"
        try cli(["db-create", "-p", db], input: "\(key)\n\(key)\n")
        try cli(["mkdir", db, "Servers"], input: "\(key)\n")
        try cli(["add", "-p", "-u", "alice", "--url", "https://github.com/login", "--notes", "first line\nsecond, \"quoted\" ünïcode",
                 db, "GitHub"], input: "\(key)\ngh pass, \"q\"\ngh pass, \"q\"\n")
        try cli(["add", "-u", "postgres", "--url", "ssh://db01.internal:2222/", db, "Servers/db01"], input: "\(key)\n")
        try cli(["add", "-p", "-u", "bob", db, "Servers/Plain"], input: "\(key)\nplain-pw\nplain-pw\n")
        try cli(["add", "-p", "-u", "alice", "--url", "https://github.com/login", db, "GitHub copy"], input: "\(key)\nother\nother\n")
        // A one-time code: keepassxc-cli has no option for one, but imports KeePass XML with an otp attribute.
        let xml = directory + "/otp.xml"
        try """
            <?xml version="1.0" encoding="utf-8" standalone="yes"?>
            <KeePassFile><Meta><Generator>locket test</Generator></Meta><Root><Group><UUID>AAAAAAAAAAAAAAAAAAAAAA==</UUID><Name>Root</Name>
            <Entry><UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID>
            <String><Key>Title</Key><Value>Mail</Value></String>
            <String><Key>UserName</Key><Value>alice@example.com</Value></String>
            <String><Key>Password</Key><Value>m4il</Value></String>
            <String><Key>URL</Key><Value>imaps://mail.example.com:993</Value></String>
            <String><Key>otp</Key><Value>otpauth://totp/Mail:alice?secret=JBSWY3DPEHPK3PXP&amp;issuer=Mail</Value></String>
            </Entry></Group></Root></KeePassFile>
            """.write(toFile: xml, atomically: true, encoding: .utf8)
        let otpDB = directory + "/otp.kdbx"
        try cli(["import", "-p", xml, otpDB], input: "\(key)\n\(key)\n")

        let csv = try cli(["export", "-q", "--format", "csv", db], input: "\(key)\n")
        XCTAssertTrue(csv.starts(with: Data("\"Group\",\"Title\",\"Username\",\"Password\",\"URL\",\"Notes\",\"TOTP\",\"Icon\",\"Last Modified\",\"Created\"".utf8)),
                      String(decoding: csv.prefix(200), as: UTF8.self))
        let result = try MigrationResult(.keepassxcCSV, SecureBytes(copying: Array(csv)))
        let github = try XCTUnwrap(result.items.first { $0.origin.hasSuffix("'GitHub'") })
        XCTAssertEqual(github.itemClass, .internetPassword)
        XCTAssertEqual(github.text(.server), "github.com")
        XCTAssertEqual(github.text(.path), "login")
        XCTAssertEqual(github.text(.account), "alice")
        XCTAssertEqual(github.secret, "gh pass, \"q\"")
        XCTAssertEqual(github.text(.comment), "first line\nsecond, \"quoted\" ünïcode")
        XCTAssertNotNil(github.creationDate)
        let db01 = try XCTUnwrap(result.items.first { $0.origin.hasSuffix("'db01'") })
        XCTAssertEqual(db01.text(.protocol), "ssh ")
        XCTAssertEqual(db01.attributes[.port], [0x08, 0xae])
        XCTAssertEqual(db01.data.count, 0, "an entry without a password")
        XCTAssertEqual(db01.text(.comment), "group: Servers")
        let plain = try XCTUnwrap(result.items.first { $0.origin.hasSuffix("'Plain'") })
        XCTAssertEqual(plain.itemClass, .genericPassword)
        XCTAssertEqual(plain.text(.service), "Plain")
        XCTAssertEqual(plain.secret, "plain-pw")
        XCTAssertTrue(result.skipped.contains { $0.origin.hasSuffix("'GitHub copy'") && $0.reason.hasPrefix("duplicate of row") },
                      "\(result.skipped)")
        XCTAssertEqual(result.items.count, 3)

        let otpCSV = try cli(["export", "-q", "--format", "csv", otpDB], input: "\(key)\n")
        let otpResult = try MigrationResult(.keepassxcCSV, SecureBytes(copying: Array(otpCSV)))
        let mail = try XCTUnwrap(otpResult.items.first { $0.origin.hasSuffix("'Mail'") })
        XCTAssertEqual(mail.text(.protocol), "imps")
        let otp = try XCTUnwrap(otpResult.items.first { $0.origin.hasSuffix("(one-time code)") })
        XCTAssertTrue(otp.secret.hasPrefix("otpauth://totp/"), otp.secret)
        XCTAssertTrue(otp.secret.contains("secret=JBSWY3DPEHPK3PXP"))
        XCTAssertEqual(otp.text(.service), "otp:mail.example.com")
    }
}
