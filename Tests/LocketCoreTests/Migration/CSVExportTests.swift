@testable import LocketCore
import XCTest

/// Issue 15: 1Password and KeePassXC CSV exports, with the cases users hit.
final class CSVExportTests: XCTestCase {
    private func csv(_ text: String) throws -> [CSV.Row] { CSV(input: try SecureBytes(copying: Array(text.utf8))).rows() }

    func testRFC4180Quoting() throws {
        let input = try SecureBytes(copying: Array("\u{FEFF}a,\"b,c\",\"d \"\"e\"\"\"\r\n\r\n\"multi\nline\",,\"\"\rlast,\"x\"y,z\n\"open".utf8))
        let reader = CSV(input: input)
        let rows = reader.rows()
        XCTAssertEqual(rows.count, 4)
        XCTAssertEqual(rows[0].fields.map { String(decoding: reader.bytes($0), as: UTF8.self) }, ["a", "b,c", "d \"e\""])
        XCTAssertEqual(rows[1].number, 2, "blank lines are not rows")
        XCTAssertEqual(rows[1].fields.map { String(decoding: reader.bytes($0), as: UTF8.self) }, ["multi\nline", "", ""])
        XCTAssertEqual(rows[2].problem, "text follows the closing quote of field 2")
        XCTAssertEqual(rows[3].problem, "a quoted field is not closed before the end of the file")
        XCTAssertEqual(String(decoding: try reader.secure(rows[0].fields[2]).bytes, as: UTF8.self), "d \"e\"")
        XCTAssertEqual(try csv("a,b,\n").first?.fields.count, 3, "a trailing comma is an empty last field")
        XCTAssertEqual(try csv("a,b,").first?.fields.count, 3)
    }

    func testOnePasswordExport() throws {
        let result = try MigrationResult(.onePasswordCSV, MigrationFixtures.bytes("1password.csv"))
        let spotify = try XCTUnwrap(result.item("row 2 'Spotify'"))
        XCTAssertEqual(spotify.itemClass, .internetPassword)
        XCTAssertEqual(spotify.text(.server), "accounts.spotify.com")
        XCTAssertEqual(spotify.text(.path), "login")
        XCTAssertEqual(spotify.text(.protocol), "htps")
        XCTAssertEqual(spotify.text(.account), "me@mail.com")
        XCTAssertEqual(spotify.text(.label), "Spotify")
        XCTAssertEqual(spotify.secret, "pw,with,commas")

        let gmail = try XCTUnwrap(result.item("row 3 'Gmail \"personal\"'"))
        XCTAssertEqual(gmail.text(.server), "mail.google.com")
        XCTAssertEqual(gmail.secret, "gm41l")
        XCTAssertEqual(gmail.text(.comment), "Line one\r\nLine two with \"quotes\" and ünïcode\ntags: Mail;Personal\nurl: https://accounts.google.com")
        let otp = try XCTUnwrap(result.item("row 3 'Gmail \"personal\"' (one-time code)"))
        XCTAssertEqual(otp.itemClass, .genericPassword)
        XCTAssertEqual(otp.text(.service), "otp:mail.google.com")
        XCTAssertEqual(otp.text(.account), "alice@gmail.com")
        XCTAssertEqual(otp.secret, "otpauth://totp/Google:alice?secret=JBSWY3DPEHPK3PXP&issuer=Google")

        let empty = try XCTUnwrap(result.item("row 4 'Empty password'"))
        XCTAssertEqual(empty.data.count, 0)
        XCTAssertEqual(result.reason("row 5 'Spotify'"), "duplicate of row 2 'Spotify' (same server, account, protocol, port and path)")
        XCTAssertEqual(result.reason("row 6 'Broken row'"), "it has 3 fields where the header has 9")
        let wifi = try XCTUnwrap(result.item("row 7 'Wi-Fi'"))
        XCTAssertEqual(wifi.itemClass, .genericPassword)
        XCTAssertEqual(wifi.text(.service), "Wi-Fi")
        XCTAssertEqual(wifi.text(.comment), "archived one\ntags: Home\narchived: true")
        XCTAssertEqual(result.items.count, 5)
        XCTAssertEqual(result.skipped.count, 2)
        assertNoSecret(result.skipped, ["pw,with,commas", "second", "gm41l"])
    }

    func testKeePassXCOlderHeaderAndOddRows() throws {
        let result = try MigrationResult(.keepassxcCSV, MigrationFixtures.bytes("keepassxc-old.csv"))
        let mail = try XCTUnwrap(result.item("row 2 'Mail'"))
        XCTAssertEqual(mail.itemClass, .internetPassword)
        XCTAssertEqual(mail.text(.protocol), "imps")
        XCTAssertEqual(mail.attributes[.port], [0x03, 0xe1])
        XCTAssertEqual(mail.secret, "p@ss \"w\"")
        XCTAssertEqual(mail.text(.comment), "multi\nline")
        let db = try XCTUnwrap(result.item("row 3 'db01'"))
        XCTAssertEqual(db.text(.protocol), "ssh ")
        XCTAssertEqual(db.text(.comment), "group: Servers")
        XCTAssertEqual(db.data.count, 0)
        XCTAssertEqual(result.reason("row 4 'db01'"), "duplicate of row 3 'db01' (same server, account, protocol, port and path)")
        XCTAssertEqual(result.reason("row 5 'Unclosed'"), "a quoted field is not closed before the end of the file")
        XCTAssertEqual(result.items.count, 2)
    }

    /// Found by fuzzing: a row shorter than the header, whose title column is past its end, crashed.
    func testShortRowWhoseTitleColumnIsMissing() throws {
        let text = "\"Group\",\"Username\",\"Password\",\"Title\"\n\"Root\",\"alice\"\n"
        let result = try MigrationResult(.keepassxcCSV, SecureBytes(copying: Array(text.utf8)))
        XCTAssertEqual(result.skipped, [MigrationSkip(origin: "row 2", reason: "it has 2 fields where the header has 4")])
    }

    func testHeadersThatAreNotTheFormat() {
        for (format, text, message) in [
            (MigrationFormat.keepassxcCSV, "", "the file is empty"),
            (.keepassxcCSV, "\"Group\",\"Title\",\"Username\"\n", "no 'password' column"),
            (.onePasswordCSV, "Title,Password,Password\nx,y,z\n", "the column 'password' twice"),
            (.onePasswordCSV, "\"Title,Password\n", "header row is malformed"),
        ] {
            XCTAssertThrowsError(try MigrationResult(format, SecureBytes(copying: Array(text.utf8))), text) {
                XCTAssertEqual(($0 as? KeychainError)?.code, .decode)
                XCTAssertTrue(($0 as? KeychainError)?.message.contains(message) == true, "\($0)")
            }
        }
    }

    func testURLMapping() {
        func parts(_ s: String) -> URLParts? { URLParts(Array(s.utf8)) }
        XCTAssertEqual(parts("https://bob:pw@Example.com:8443/a/b?q=1#f").map { String(decoding: $0.user, as: UTF8.self) }, "bob")
        XCTAssertEqual(parts("https://bob:pw@Example.com:8443/a/b?q=1#f").map { String(decoding: $0.path, as: UTF8.self) }, "a/b")
        XCTAssertEqual(parts("https://h:8443").map(\.port), [0x20, 0xfb])
        XCTAssertEqual(parts("github.com").map { String(decoding: $0.protocolCode, as: UTF8.self) }, "htps")
        XCTAssertNil(parts("androidapp://com.example"))
        XCTAssertNil(parts("just a name"))
        XCTAssertNil(parts("https://"))
        XCTAssertNil(parts("https://h:99999/"))
        XCTAssertEqual(parts("ftp://[::1]:21/x").map { String(decoding: $0.host, as: UTF8.self) }, "[::1]")
    }

    func testISO8601() {
        XCTAssertEqual(ISO8601.milliseconds(Array("1970-01-01T00:00:00Z".utf8)), 0)
        XCTAssertEqual(ISO8601.milliseconds(Array("2024-02-03T04:05:06.789Z".utf8)), 1_706_933_106_789)
        XCTAssertEqual(ISO8601.milliseconds(Array("2024-02-03T05:05:06+01:00".utf8)), 1_706_933_106_000)
        XCTAssertNil(ISO8601.milliseconds(Array("yesterday".utf8)))
    }
}
