@testable import LocketCore
import XCTest

/// Issue 15: Bitwarden's JSON export and the text of `security dump-keychain -d`.
final class BitwardenAndDumpTests: XCTestCase {
    func testBitwardenExport() throws {
        let result = try MigrationResult(.bitwardenJSON, MigrationFixtures.bytes("bitwarden.json"))
        let github = try XCTUnwrap(result.item("item 1 'GitHub'"))
        XCTAssertEqual(github.itemClass, .internetPassword)
        XCTAssertEqual(github.text(.server), "github.com")
        XCTAssertEqual(github.attributes[.port], [0x20, 0xfb])
        XCTAssertEqual(github.text(.path), "login")
        XCTAssertEqual(github.text(.account), "alice@example.com")
        XCTAssertEqual(github.secret, "gh-päss \"quoted\" \\ back")
        XCTAssertEqual(github.text(.comment), """
            Recovery codes are in the safe.
            Second line with "quotes" and ünïcödé 🔑
            Team: platform
            Admin: true
            folder: Work ✓
            url: https://gist.github.com/
            """)
        XCTAssertEqual(github.creationDate, 1_683_356_889_000)
        XCTAssertEqual(github.modificationDate, 1_706_933_106_789)
        let otp = try XCTUnwrap(result.item("item 1 'GitHub' (one-time code)"))
        XCTAssertEqual(otp.text(.service), "otp:github.com")
        XCTAssertEqual(otp.secret, "otpauth://totp/GitHub%3Aalice%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=GitHub")
        let pin = try XCTUnwrap(result.item("item 1 'GitHub' (field 'PIN')"))
        XCTAssertEqual(pin.text(.service), "field:github.com:PIN")
        XCTAssertEqual(pin.text(.description), "hidden field")
        XCTAssertEqual(pin.secret, "4321")

        let router = try XCTUnwrap(result.item("item 2 'Router'"))
        XCTAssertEqual(router.itemClass, .genericPassword)
        XCTAssertEqual(router.text(.service), "Router")
        XCTAssertEqual(router.data.count, 0)
        XCTAssertEqual(result.reason("item 3 'GitHub again'"), "duplicate of item 1 'GitHub' (same server, account, protocol, port and path)")
        XCTAssertEqual(result.reason("item 3 'GitHub again' (one-time code)"),
                       "duplicate of item 1 'GitHub' (one-time code) (same service and account)")

        let note = try XCTUnwrap(result.item("item 4 'Safe combination'"))
        XCTAssertEqual(note.text(.description), "secure note")
        XCTAssertEqual(note.secret, "12-34-56\nturn left twice")
        XCTAssertEqual(note.text(.comment), "Location: basement")
        let card = try XCTUnwrap(result.item("item 5 'Visa'"))
        XCTAssertEqual(card.secret, "cardholderName: Alice Example\nbrand: Visa\nnumber: 4111111111111111\nexpMonth: 4\nexpYear: 2030\ncode: 123")
        XCTAssertEqual(card.text(.account), "Alice Example")
        XCTAssertEqual(card.text(.comment), "backup card")
        let passport = try XCTUnwrap(result.item("item 6 'Passport'"))
        XCTAssertEqual(passport.text(.account), "alice@example.com")
        XCTAssertTrue(passport.secret.contains("ssn: 078-05-1120"))
        XCTAssertEqual(result.reason("item 7 'Old site'"), "it is in Bitwarden's trash")
        XCTAssertEqual(result.reason("item 8 'From the future'"), "its type 9 is not one locket knows (1 login, 2 secure note, 3 card, 4 identity, 5 SSH key)")
        let bank = try XCTUnwrap(result.item("item 9 'Bank app'"))
        XCTAssertEqual(bank.itemClass, .internetPassword, "the first URI locket can map decides")
        XCTAssertEqual(bank.text(.server), "bank.example.com")
        XCTAssertEqual(bank.text(.comment), "url: androidapp://com.example.bank")
        let key = try XCTUnwrap(result.item("item 10 'Deploy key'"))
        XCTAssertEqual(key.text(.description), "ssh key")
        XCTAssertTrue(key.secret.hasPrefix("-----BEGIN OPENSSH PRIVATE KEY-----\n"))
        XCTAssertEqual(key.text(.comment), "public key: ssh-ed25519 AAAAC3 deploy\nfingerprint: SHA256:abc")
        assertNoSecret(result.skipped, ["trashed", "s3cond-pw", "4321", "old-password"])
    }

    /// Issue 31: a hand-made or converted export may write a number where
    /// Bitwarden writes text (`"password": 123`, a card's `"expYear": 2030`).
    /// It is taken as the number's text, exactly as written; a value of
    /// another type where text belongs (true, an array, an object) skips the
    /// item with a reason naming the field, never an empty secret.
    func testBitwardenNumbersAreTheirTextAndOtherTypesAreSkipped() throws {
        let export = #"""
            {"encrypted": false, "items": [
              {"type": 1, "name": "Numeric", "login": {"username": 4711, "password": 123, "totp": null}},
              {"type": 1, "name": "Exponent", "login": {"username": "u", "password": -1.50e3}},
              {"type": 3, "name": "Card", "card": {"cardholderName": "A", "number": 4111111111111111, "expMonth": 4, "expYear": 2030, "code": 7}},
              {"type": 1, "name": "Boolean", "login": {"username": "u", "password": true}},
              {"type": 1, "name": "Listed", "login": {"username": ["u"], "password": "p"}},
              {"type": 2, "name": "Note", "notes": {"text": "x"}},
              {"type": 1, "name": "Hidden", "login": {"username": "u", "password": "p"}, "fields": [{"name": "PIN", "type": 1, "value": 4321}]},
              {"type": 1, "name": "Null", "login": {"username": "n", "password": null}}
            ]}
            """#
        let result = try MigrationResult(.bitwardenJSON, SecureBytes(copying: Array(export.utf8)))
        let numeric = try XCTUnwrap(result.item("item 1 'Numeric'"))
        XCTAssertEqual(numeric.secret, "123")
        XCTAssertEqual(numeric.text(.account), "4711")
        XCTAssertEqual(try XCTUnwrap(result.item("item 2 'Exponent'")).secret, "-1.50e3")
        XCTAssertEqual(try XCTUnwrap(result.item("item 3 'Card'")).secret,
                       "cardholderName: A\nnumber: 4111111111111111\nexpMonth: 4\nexpYear: 2030\ncode: 7")
        XCTAssertEqual(result.reason("item 4 'Boolean'"), "its login.password is not text (true or false)")
        XCTAssertEqual(result.reason("item 5 'Listed'"), "its login.username is not text (an array)")
        XCTAssertEqual(result.reason("item 6 'Note'"), "its notes is not text (an object)")
        XCTAssertEqual(try XCTUnwrap(result.item("item 7 'Hidden' (field 'PIN')")).secret, "4321")
        XCTAssertEqual(try XCTUnwrap(result.item("item 8 'Null'")).data.count, 0, "null is no password, as before")
    }

    func testBitwardenRefusals() {
        for (text, message) in [
            ("{\"encrypted\": true, \"items\": []}", "encrypted"),
            ("{\"encrypted\": true, \"passwordProtected\": true, \"data\": \"2.x\"}", "encrypted"),
            ("[1, 2]", "not an object"),
            ("{\"folders\": []}", "no items list"),
            ("{\"items\": [}", "not a JSON document"),
            ("{\"items\": [\"\u{1}\"]}", "control character"),
            ("{\"items\": []} x", "text after the document"),
            (String(repeating: "[", count: 100), "nesting"),
        ] {
            XCTAssertThrowsError(try MigrationResult(.bitwardenJSON, SecureBytes(copying: Array(text.utf8))), text) {
                XCTAssertEqual(($0 as? KeychainError)?.code, .decode)
                XCTAssertTrue(($0 as? KeychainError)?.message.contains(message) == true, "\(text): \($0)")
            }
        }
        var invalid = Array("{\"items\": [{\"type\": 1, \"name\": \"".utf8)
        invalid += [0xc3, 0x28] + Array("\"}]}".utf8)
        XCTAssertThrowsError(try MigrationResult(.bitwardenJSON, SecureBytes(copying: invalid))) {
            XCTAssertTrue(($0 as? KeychainError)?.message.contains("not UTF-8") == true)
        }
    }

    func testSecurityDumpAsSecurityToolPrintsIt() throws {
        let result = try MigrationResult(.securityDump, MigrationFixtures.bytes("security-dump.txt"))
        let token = try XCTUnwrap(result.item("item 1 'GitHub token'"))
        XCTAssertEqual(token.itemClass, .genericPassword)
        XCTAssertEqual(token.text(.service), "GitHub token")
        XCTAssertEqual(token.text(.account), "alice")
        XCTAssertEqual(token.text(.description), "application password")
        XCTAssertEqual(token.text(.comment), "for the CI")
        XCTAssertEqual(token.attributes[.generic], [1, 2] + Array("xyz".utf8))
        XCTAssertEqual(token.secret, "ghp_abcdef123456")
        XCTAssertEqual(token.creationDate, 1_546_344_000_000)
        XCTAssertEqual(token.modificationDate, 1_580_646_896_000)

        let github = try XCTUnwrap(result.item("item 2 'github.com'"))
        XCTAssertEqual(github.itemClass, .internetPassword)
        XCTAssertEqual(github.text(.server), "github.com")
        XCTAssertEqual(github.attributes[.port], [0x01, 0xbb])
        XCTAssertEqual(github.text(.protocol), "htps")
        XCTAssertEqual(github.text(.authenticationType), "form")
        XCTAssertEqual(github.text(.path), "login")
        XCTAssertNil(github.attributes[.securityDomain])
        XCTAssertEqual(github.secret, "pa\"ss\\word")

        let intranet = try XCTUnwrap(result.item("item 3 'intranet ü'"))
        XCTAssertEqual(intranet.text(.account), "jürgen")
        XCTAssertEqual(intranet.attributes[.port], [0, 80])
        XCTAssertEqual(intranet.data.bytes, [0, 1, 2, 0xff, 0x41])
        let empty = try XCTUnwrap(result.item("item 4 'empty'"))
        XCTAssertEqual(empty.data.count, 0)
        XCTAssertEqual(empty.text(.comment), "line one\nline \"two\"")
        XCTAssertEqual(result.reason("item 5"), "it has no data: run security dump-keychain -d and allow access to every item")
        XCTAssertEqual(result.reason("item 6 'Alice'"), "it is a certificate, not a password")
        XCTAssertEqual(result.reason("item 7"), "it is a private key, not a password")
        XCTAssertEqual(result.reason("item 8 'bank.example'"), "it is a 'never remember this password' entry, with no password")
        XCTAssertEqual(result.reason("item 9 'GitHub token'"), "duplicate of item 1 'GitHub token' (same service and account)")
        let wifi = try XCTUnwrap(result.item("item 10 'Wi-Fi'"))
        XCTAssertEqual(wifi.text(.creator), "aapl")
        XCTAssertEqual(wifi.text(.type), "note")
        XCTAssertEqual(result.items.count, 5)
        assertNoSecret(result.skipped, ["ghp_abcdef123456", "other", "wifi pass"])
    }

    func testSecurityDumpWithoutDataAndNotADump() throws {
        let text = "keychain: \"/k\"\nclass: \"genp\"\nattributes:\n    \"acct\"<blob>=\"a\"\n    \"svce\"<blob>=\"s\"\n"
        let result = try MigrationResult(.securityDump, SecureBytes(copying: Array(text.utf8)))
        XCTAssertEqual(result.items.count, 0)
        XCTAssertEqual(result.skipped.count, 1)
        XCTAssertThrowsError(try MigrationResult(.securityDump, SecureBytes(copying: Array("hello\n".utf8)))) {
            XCTAssertTrue(($0 as? KeychainError)?.message.contains("not the output of security dump-keychain") == true)
        }
        let bad = "keychain: \"/k\"\nclass: \"genp\"\nattributes:\n    \"acct\"<blob>=\"unterminated\n    \"svce\"<blob>=\"s\"\ndata:\n\"x\"\n"
        XCTAssertEqual(try MigrationResult(.securityDump, SecureBytes(copying: Array(bad.utf8))).skipped.first?.reason, "an attribute line is malformed")
    }
}
