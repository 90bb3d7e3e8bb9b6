import LocketCore
import XCTest

/// Canonical attribute bytes from user text (SPEC §3): protocol and
/// authentication-type names, ports, four-char codes, UTF-8, the 64 KiB limit.
final class AttributeValueTests: XCTestCase {
    private func parse(_ attribute: Attribute, _ text: String) throws -> [UInt8] {
        try AttributeValue.parse(attribute, Array(text.utf8))
    }

    func testProtocolNamesBecomeApplesCodes() throws {
        let expected = ["https": "htps", "http": "http", "ftp": "ftp ", "ssh": "ssh ", "smtp": "smtp", "imap": "imap",
                        "imaps": "imps", "ldaps": "ldps", "socks": "sox ", "svn": "svn ", "smb": "smb ", "pop3s": "pops"]
        for (name, code) in expected {
            XCTAssertEqual(try parse(.protocol, name), Array(code.utf8), name)
        }
    }

    func testProtocolCodesAreAcceptedAsThemselves() throws {
        XCTAssertEqual(try parse(.protocol, "htps"), Array("htps".utf8))
        XCTAssertEqual(try parse(.protocol, "ftp "), Array("ftp ".utf8))
        XCTAssertEqual(try parse(.protocol, "zzzz"), Array("zzzz".utf8), "any four-char code passes, as in Apple's API")
    }

    func testBadProtocolsAreParameterErrors() {
        for text in ["httpss", "ht", "HTTPS", "h\u{e9}ps", "ab\tc"] {
            XCTAssertKeychainError(.param, try parse(.protocol, text), text)
        }
    }

    func testAuthenticationTypeNames() throws {
        let expected = ["default": "dflt", "http-basic": "http", "http-digest": "httd", "form": "form",
                        "html-form": "form", "ntlm": "ntlm"]
        for (name, code) in expected {
            XCTAssertEqual(try parse(.authenticationType, name), Array(code.utf8), name)
        }
        XCTAssertKeychainError(.param, try parse(.authenticationType, "basic"))
    }

    func testFourCharCodes() throws {
        XCTAssertEqual(try parse(.creator, "ABCD"), Array("ABCD".utf8))
        XCTAssertEqual(try parse(.type, "a b "), Array("a b ".utf8))
        XCTAssertEqual(try parse(.creator, ""), [], "the empty code is the empty value")
        XCTAssertKeychainError(.param, try parse(.creator, "ABC"))
        XCTAssertKeychainError(.param, try parse(.creator, "ABCDE"))
        XCTAssertKeychainError(.param, try AttributeValue.parse(.type, [0x41, 0x42, 0x43, 0x00]))
        XCTAssertKeychainError(.param, try AttributeValue.parse(.type, [0x41, 0x42, 0x43, 0xff]))
    }

    func testPorts() throws {
        XCTAssertEqual(try parse(.port, "443"), [0x01, 0xbb])
        XCTAssertEqual(try parse(.port, "1"), [0x00, 0x01])
        XCTAssertEqual(try parse(.port, "65535"), [0xff, 0xff])
        XCTAssertEqual(try parse(.port, "0"), [], "port 0 is the empty value")
        XCTAssertEqual(try parse(.port, "00080"), [0x00, 0x50])
        XCTAssertEqual(AttributeValue.port([0x01, 0xbb]), 443)
        XCTAssertEqual(AttributeValue.port([]), 0)
        for text in ["65536", "-1", "+80", " 80", "80 ", "8o", "", "100000", "0x50", "\u{661}"] {
            XCTAssertKeychainError(.param, try parse(.port, text), "'\(text)'")
        }
    }

    func testPortRoundTripsForEveryBoundary() throws {
        for n in [1, 255, 256, 8080, 65534, 65535] {
            XCTAssertEqual(AttributeValue.port(try parse(.port, String(n))), n)
        }
    }

    func testStringsMustBeUTF8() throws {
        for attribute: Attribute in [.account, .service, .label, .description, .comment, .server, .path, .securityDomain, .accessGroup] {
            XCTAssertKeychainError(.param, try AttributeValue.parse(attribute, [0x61, 0xff, 0x62]), attribute.longName)
            XCTAssertKeychainError(.param, try AttributeValue.parse(attribute, [0xc3]), "\(attribute.longName): truncated sequence")
            XCTAssertKeychainError(.param, try AttributeValue.parse(attribute, [0xed, 0xa0, 0x80]), "\(attribute.longName): surrogate")
            XCTAssertEqual(try parse(attribute, "caf\u{e9} \u{1f511}"), Array("caf\u{e9} \u{1f511}".utf8))
        }
    }

    func testStringsAreKeptByteForByte() throws {
        // No trimming, no normalization.
        for text in [" padded ", "cafe\u{301}", "tab\there", "", "nul\u{0}inside"] {
            XCTAssertEqual(try parse(.account, text), Array(text.utf8))
        }
    }

    func testGenericIsArbitraryBytes() throws {
        let raw: [UInt8] = [0x00, 0xff, 0xfe, 0x80]
        XCTAssertEqual(try AttributeValue.parse(.generic, raw), raw)
    }

    func testValuesUpTo64KiBAreAcceptedAndLongerOnesAreTooLarge() throws {
        let limit = Attribute.maximumValueLength
        XCTAssertEqual(limit, 65_536)
        XCTAssertEqual(try AttributeValue.parse(.comment, [UInt8](repeating: 0x61, count: limit)).count, limit)
        XCTAssertEqual(try AttributeValue.parse(.generic, [UInt8](repeating: 0, count: limit)).count, limit)
        for attribute: Attribute in [.comment, .account, .generic, .label] {
            XCTAssertKeychainError(.dataTooLarge,
                                   try AttributeValue.parse(attribute, [UInt8](repeating: 0x61, count: limit + 1)), attribute.longName)
        }
        XCTAssertKeychainError(.dataTooLarge, try AttributeValue.parse(.port, [UInt8](repeating: 0x31, count: limit + 1)))
        XCTAssertEqual(KeychainError(.dataTooLarge).status, -25302)
    }

    func testAttributeNamesForSet() {
        // `update --set NAME=VALUE`: the long option name or the four-char code.
        for attribute in Attribute.allCases {
            XCTAssertEqual(Attribute(name: attribute.longName), attribute)
            XCTAssertEqual(Attribute(name: attribute.code), attribute)
        }
        XCTAssertEqual(Attribute(name: "acct"), .account)
        XCTAssertEqual(Attribute(name: "access-group"), .accessGroup)
        XCTAssertEqual(Attribute(name: "security-domain"), .securityDomain)
        XCTAssertNil(Attribute(name: "Account"))
        XCTAssertNil(Attribute(name: "nope"))
    }

    func testProtectionClassParsing() throws {
        let table: [(String, String, String, ProtectionClass)] = [
            ("when-unlocked", "ak", "kSecAttrAccessibleWhenUnlocked", .whenUnlocked),
            ("after-first-unlock", "ck", "kSecAttrAccessibleAfterFirstUnlock", .afterFirstUnlock),
            ("always", "dk", "kSecAttrAccessibleAlways", .always),
            ("when-unlocked-this-device-only", "aku", "kSecAttrAccessibleWhenUnlockedThisDeviceOnly", .whenUnlockedThisDeviceOnly),
            ("after-first-unlock-this-device-only", "cku", "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly",
             .afterFirstUnlockThisDeviceOnly),
            ("always-this-device-only", "dku", "kSecAttrAccessibleAlwaysThisDeviceOnly", .alwaysThisDeviceOnly),
            ("when-passcode-set-this-device-only", "akpu", "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly",
             .whenPasscodeSetThisDeviceOnly),
        ]
        XCTAssertEqual(table.count, ProtectionClass.allCases.count)
        for (name, code, apple, pclass) in table {
            XCTAssertEqual(try ProtectionClass(parsing: name), pclass)
            XCTAssertEqual(try ProtectionClass(parsing: code), pclass)
            XCTAssertEqual(try ProtectionClass(parsing: apple), pclass)
            XCTAssertEqual(pclass.rawValue, code)
            XCTAssertEqual(pclass.name, name)
        }
        for text in ["", "unlocked", "AK", "whenUnlocked"] {
            XCTAssertKeychainError(.param, try ProtectionClass(parsing: text), text)
        }
    }

    func testProtectionClassTiers() {
        XCTAssertEqual(ProtectionClass.whenUnlocked.tier, .whenUnlocked)
        XCTAssertEqual(ProtectionClass.whenPasscodeSetThisDeviceOnly.tier, .whenUnlocked)
        XCTAssertEqual(ProtectionClass.afterFirstUnlockThisDeviceOnly.tier, .afterFirstUnlock)
        XCTAssertEqual(ProtectionClass.alwaysThisDeviceOnly.tier, .always)
        XCTAssertEqual(ProtectionClass.allCases.filter(\.thisDeviceOnly),
                       [.whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly, .whenPasscodeSetThisDeviceOnly])
    }
}
