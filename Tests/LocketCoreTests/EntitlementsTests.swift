import Foundation
import LocketCore
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §6 and issue 4 (points 1, 2 and 4): entitlements files, the
/// access-group list they give, and every way a file can be refused.
final class EntitlementsTests: XCTestCase {
    // MARK: - Fixtures

    /// An `.entitlements` file as Xcode writes it: XML header, Apple's DOCTYPE,
    /// tab indentation, build variables, and keys locket has no use for
    /// (app A of the end-to-end tests, LocketTestSupport).
    static let xcode = Apps.xcodeA

    func parse(_ text: String, name: String = "app.entitlements") throws -> Entitlements {
        try Entitlements.parse(Array(text.utf8), name: name)
    }

    /// Asserts that parsing fails with errSecParam and a message that starts
    /// with the file's name and contains `problem`.
    func assertRefused(_ text: String, _ problem: String, name: String = "bad.entitlements",
                       file: StaticString = #filePath, line: UInt = #line) {
        assertRefused(bytes: Array(text.utf8), problem, name: name, file: file, line: line)
    }

    func assertRefused(bytes: [UInt8], _ problem: String, name: String = "bad.entitlements",
                       file: StaticString = #filePath, line: UInt = #line) {
        do {
            let parsed = try Entitlements.parse(bytes, name: name)
            XCTFail("accepted (groups \(parsed.accessGroups)); expected a refusal mentioning '\(problem)'", file: file, line: line)
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .param, "\(error)", file: file, line: line)
            XCTAssertTrue(error.message.hasPrefix("\(name): "), "the message must start with the file name: \(error)", file: file, line: line)
            XCTAssertTrue(error.message.contains(problem), "'\(error.message)' does not mention '\(problem)'", file: file, line: line)
            XCTAssertFalse(error.message.contains("\n"), "one line: \(error.message)", file: file, line: line)
        } catch {
            XCTFail("not a KeychainError: \(error)", file: file, line: line)
        }
    }

    // MARK: - Formats

    func testXcodeEntitlementsFileExpandsPrefixesInOrder() throws {
        let e = try parse(Self.xcode)
        XCTAssertEqual(e.applicationIdentifier, "SKMME9E2Y8.com.example.waffle-varnisher")
        // keychain-access-groups, then the application identifier, then the application groups.
        XCTAssertEqual(e.accessGroups, ["SKMME9E2Y8.groupA", "SKMME9E2Y8.groupB",
                                        "SKMME9E2Y8.com.example.waffle-varnisher", "group.com.example.waffle"])
    }

    func testJSONWithTheSameKeys() throws {
        let e = try parse("""
            {
              "aps-environment": "production",
              "application-identifier": "SKMME9E2Y8.com.example.waffle-varnisher",
              "keychain-access-groups": ["$(AppIdentifierPrefix)groupA", "$(TeamIdentifierPrefix)groupB"],
              "com.apple.security.application-groups": ["group.com.example.waffle"],
              "com.apple.security.app-sandbox": true,
              "nested": {"anything": [1, 2, {"x": null}]}
            }
            """, name: "app.json")
        XCTAssertEqual(e, try parse(Self.xcode), "JSON and XML with the same keys give the same entitlements")
    }

    func testAppleApplicationIdentifierSpelling() throws {
        let json = try parse(#"{"com.apple.application-identifier": "T1.com.example.mac", "keychain-access-groups": ["$(AppIdentifierPrefix)shared"]}"#)
        XCTAssertEqual(json.applicationIdentifier, "T1.com.example.mac")
        XCTAssertEqual(json.accessGroups, ["T1.shared", "T1.com.example.mac"])
        let xml = try parse("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>com.apple.application-identifier</key>
            \t<string>T1.com.example.mac</string>
            </dict>
            </plist>
            """)
        XCTAssertEqual(xml.accessGroups, ["T1.com.example.mac"], "the application identifier alone is a group")
    }

    func testTeamIdentifierPrefixInApplicationGroups() throws {
        // macOS app groups are named after the team: TEAM.group.
        let e = try parse(#"{"application-identifier": "AB12.com.example.app", "com.apple.security.application-groups": ["$(TeamIdentifierPrefix)com.example.suite"]}"#)
        XCTAssertEqual(e.accessGroups, ["AB12.com.example.app", "AB12.com.example.suite"])
    }

    func testOrderAndDuplicates() throws {
        let e = try parse("""
            {"com.apple.security.application-groups": ["group.z", "T.one", "group.z", "T.app"],
             "application-identifier": "T.app",
             "keychain-access-groups": ["T.one", "T.app", "$(AppIdentifierPrefix)one", "T.two"]}
            """)
        // Key order in the file does not matter; the first occurrence of a group wins.
        XCTAssertEqual(e.accessGroups, ["T.one", "T.app", "T.two", "group.z"])
    }

    func testApplicationIdentifierOnlyAndEmptyArrays() throws {
        XCTAssertEqual(try parse(#"{"keychain-access-groups": [], "application-identifier": "T.x", "com.apple.security.application-groups": []}"#).accessGroups,
                       ["T.x"])
        // No team prefix is fine as long as nothing asks for one.
        XCTAssertEqual(try parse(#"{"application-identifier": "noprefix"}"#).accessGroups, ["noprefix"])
        XCTAssertNil(try parse(#"{"keychain-access-groups": ["G"]}"#).applicationIdentifier)
    }

    func testUnicodeAndLeadingByteOrderMarkAndWhitespace() throws {
        XCTAssertEqual(try parse("\u{FEFF}\n  {\"keychain-access-groups\": [\"T.caf\u{e9}\", \"T.\u{1F511}\"]}").accessGroups,
                       ["T.caf\u{e9}", "T.\u{1F511}"])
        XCTAssertEqual(try parse("\n\n" + Self.xcode).accessGroups.count, 4)
    }

    func testBinaryPropertyList() throws {
        struct Raw: Encodable {
            var groups = ["T.bin"]
            var app = "T.app"
            enum CodingKeys: String, CodingKey {
                case groups = "keychain-access-groups"
                case app = "application-identifier"
            }
        }
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        let data = try encoder.encode(Raw())
        XCTAssertEqual(try Entitlements.parse(Array(data), name: "bin.entitlements").accessGroups, ["T.bin", "T.app"])
    }

    // MARK: - Refusals

    func testTruncatedXMLAndInvalidJSON() {
        let truncated = String(Self.xcode.prefix(Self.xcode.count / 2))
        assertRefused(truncated, "malformed")
        assertRefused(#"{"keychain-access-groups": ["T.a","#, "malformed")
        assertRefused(#"{"keychain-access-groups": ["T.a"]"#, "malformed")
        assertRefused("", "not an entitlements file")
        assertRefused("keychain-access-groups = T.a", "not an entitlements file")
        assertRefused(#"["T.a"]"#, "not an entitlements file")
        assertRefused("<?xml version=\"1.0\"?><plist version=\"1.0\"><array><string>T.a</string></array></plist>",
                      "the top level must be a dictionary")
    }

    func testWrongTypes() {
        assertRefused(#"{"keychain-access-groups": "T.a"}"#, "keychain-access-groups must be an array of strings")
        assertRefused(#"{"keychain-access-groups": [1, 2]}"#, "keychain-access-groups must be an array of strings")
        assertRefused(#"{"keychain-access-groups": ["T.a", ["T.b"]]}"#, "keychain-access-groups must be an array of strings")
        assertRefused(#"{"com.apple.security.application-groups": "group.x"}"#,
                      "com.apple.security.application-groups must be an array of strings")
        assertRefused(#"{"application-identifier": 42}"#, "application-identifier must be a string")
        assertRefused(#"{"com.apple.application-identifier": ["T.a"]}"#, "com.apple.application-identifier must be a string")
        assertRefused("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>keychain-access-groups</key>
            \t<string>T.a</string>
            </dict>
            </plist>
            """, "keychain-access-groups must be an array of strings")
        assertRefused("""
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0">
            <dict>
            \t<key>keychain-access-groups</key>
            \t<array>
            \t\t<integer>7</integer>
            \t</array>
            </dict>
            </plist>
            """, "keychain-access-groups must be an array of strings")
    }

    func testEmptyAndControlCharacterNames() {
        assertRefused(#"{"keychain-access-groups": [""]}"#, "empty")
        assertRefused(#"{"keychain-access-groups": ["T.a", ""]}"#, "empty")
        assertRefused(#"{"application-identifier": ""}"#, "empty")
        assertRefused(#"{"com.apple.security.application-groups": [""]}"#, "empty")
        for control in ["\\u0000", "\\u0001", "\\n", "\\t", "\\u001b[31m", "\\u007f"] {
            assertRefused(#"{"keychain-access-groups": ["T.a\#(control)"]}"#, "control characters")
        }
        assertRefused(#"{"application-identifier": "T.a\nb"}"#, "control characters")
        // A tab inside a <string>, as a careless edit of an Xcode file leaves it.
        assertRefused("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>keychain-access-groups</key><array><string>\tT.a</string></array></dict></plist>",
                      "control characters")
    }

    /// Unicode's control characters (category Cc) include C1, U+0080 to U+009F:
    /// U+009B is the 8-bit CSI that some terminals obey, U+0085 a line break.
    func testC1ControlCharactersAreControlCharactersToo() {
        for control in ["\\u0085", "\\u009b", "\\u0080", "\\u009f"] {
            assertRefused(#"{"keychain-access-groups": ["T.a\#(control)x"]}"#, "control characters")
        }
    }

    func testNoUsableGroup() {
        assertRefused("{}", "no access group")
        assertRefused(#"{"aps-environment": "development", "com.apple.security.app-sandbox": true}"#, "no access group")
        assertRefused(#"{"keychain-access-groups": [], "com.apple.security.application-groups": []}"#, "no access group")
        assertRefused("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>aps-environment</key>
            \t<string>development</string>
            </dict>
            </plist>
            """, "no access group")
    }

    func testPrefixWithoutApplicationIdentifier() {
        assertRefused(#"{"keychain-access-groups": ["$(AppIdentifierPrefix)shared"]}"#, "$(AppIdentifierPrefix)")
        assertRefused(#"{"com.apple.security.application-groups": ["$(TeamIdentifierPrefix)suite"]}"#, "$(TeamIdentifierPrefix)")
        // An identifier without a dot has no team prefix to give.
        assertRefused(#"{"application-identifier": "noteam", "keychain-access-groups": ["$(AppIdentifierPrefix)x"]}"#, "application-identifier")
    }

    func testLimits() {
        let many = (0..<65).map { "\"T.g\($0)\"" }.joined(separator: ",")
        assertRefused(#"{"keychain-access-groups": [\#(many)]}"#, "more than 64")
        assertRefused(#"{"keychain-access-groups": ["\#(String(repeating: "g", count: 201))"]}"#, "longer than 200")
        let sixtyFour = (0..<64).map { "\"T.g\($0)\"" }.joined(separator: ",")
        XCTAssertEqual(try parse(#"{"keychain-access-groups": [\#(sixtyFour)]}"#).accessGroups.count, 64)
    }

    // MARK: - Files

    var directory: String!

    override func setUpWithError() throws {
        var template = Array("/tmp/locket-entitlements.XXXXXX".utf8CString)
        directory = String(cString: try XCTUnwrap(mkdtemp(&template)))
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    func write(_ name: String, _ text: String, mode: mode_t = 0o644) throws -> String {
        let path = directory + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(chmod(path, mode), 0)
        return path
    }

    func assertLoadRefused(_ path: String, _ problem: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try Entitlements.load(path: path)
            XCTFail("\(path) was accepted", file: file, line: line)
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .param, "\(error)", file: file, line: line)
            XCTAssertTrue(error.message.hasPrefix("\(path): "), "\(error)", file: file, line: line)
            XCTAssertTrue(error.message.contains(problem), "'\(error.message)' does not mention '\(problem)'", file: file, line: line)
        } catch {
            XCTFail("not a KeychainError: \(error)", file: file, line: line)
        }
    }

    func testLoadReadsXcodeFile() throws {
        let path = try write("App.entitlements", Self.xcode)
        XCTAssertEqual(try Entitlements.load(path: path), try parse(Self.xcode))
        for mode: mode_t in [0o600, 0o400, 0o444, 0o640, 0o755] {
            chmod(path, mode)
            XCTAssertNoThrow(try Entitlements.load(path: path), "mode \(String(mode, radix: 8))")
        }
    }

    func testLoadRefusesFilesOthersCanWrite() throws {
        for mode: mode_t in [0o664, 0o646, 0o666, 0o620, 0o602, 0o777] {
            let path = try write("w\(String(mode, radix: 8)).entitlements", Self.xcode, mode: mode)
            assertLoadRefused(path, "writable")
        }
    }

    /// Issue 11 item 8: whoever can write the directory can replace the file.
    func testLoadRefusesAFileInADirectoryOthersCanWriteUnlessSticky() throws {
        let path = try write("App.entitlements", Self.xcode)
        for mode: mode_t in [0o777, 0o770, 0o722] {
            XCTAssertEqual(chmod(directory, mode), 0)
            assertLoadRefused(path, "its directory \(directory!) is writable by other users")
        }
        XCTAssertEqual(chmod(directory, 0o1777), 0)
        XCTAssertEqual(try Entitlements.load(path: path), try parse(Self.xcode), "a sticky directory keeps the caller's own file")
        XCTAssertEqual(chmod(directory, 0o755), 0)
        XCTAssertEqual(try Entitlements.load(path: path), try parse(Self.xcode))
    }

    func testLoadRefusesWhatItCannotRead() throws {
        assertLoadRefused(directory + "/missing.entitlements", "cannot read")
        assertLoadRefused(directory, "not a regular file")
        if geteuid() != 0 {
            let path = try write("unreadable.entitlements", Self.xcode, mode: 0o200)
            assertLoadRefused(path, "cannot read")
        }
    }

    func testLoadNamesThePathAsGiven() throws {
        _ = try write("bad.json", #"{"keychain-access-groups": "T.a"}"#)
        let cwd = FileManager.default.currentDirectoryPath
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(directory))
        defer { _ = FileManager.default.changeCurrentDirectoryPath(cwd) }
        assertLoadRefused("bad.json", "keychain-access-groups must be an array of strings")
        assertLoadRefused("./bad.json", "keychain-access-groups must be an array of strings")
    }
}
