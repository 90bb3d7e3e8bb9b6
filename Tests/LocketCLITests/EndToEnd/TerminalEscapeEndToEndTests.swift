import Foundation
import XCTest

/// Issue 11, defect 9: terminal control characters never reach the terminal.
/// C1 controls encoded in UTF-8 (U+009B is CSI, U+009D is OSC to many
/// terminals), ESC and other C0 controls, DEL, the line separators and the
/// bidirectional marks and overrides (U+202E) are escaped in text output and
/// in every message that quotes what the user typed; JSON escapes them as
/// `\uXXXX`, which parsers read back as the same string.
final class EndToEndTerminalEscapeTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    /// One of each kind, as real bytes: ESC [31m, CSI (C2 9B), OSC (C2 9D),
    /// RLO (E2 80 AE), LRI (E2 81 A6), ALM (D8 9C), LRM (E2 80 8E), LINE SEPARATOR (E2 80 A8), DEL, BEL.
    static let hostile = "a\u{1b}[31mb\u{9b}c\u{9d}d\u{202e}e\u{2066}f\u{61c}g\u{200e}h\u{2028}i\u{7f}j\u{7}k"
    /// How text output and messages show it.
    static let escaped = #"a\x1b[31mb\u{9b}c\u{9d}d\u{202e}e\u{2066}f\u{61c}g\u{200e}h\u{2028}i\x7fj\x07k"#

    /// The first raw terminal control in `bytes` other than the newlines that end lines, if any.
    static func rawControl(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if v == 0x0a { continue }
            if v < 0x20 || (0x7f...0x9f).contains(v) || v == 0x61c || v == 0x200e || v == 0x200f
                || (0x2028...0x202e).contains(v) || (0x2066...0x2069).contains(v) {
                return String(format: "U+%04X", v)
            }
        }
        return nil
    }

    func assertNoRawControl(_ result: RunResult, file: StaticString = #filePath, line: UInt = #line) {
        if let found = Self.rawControl(result.stdout) { XCTFail("raw \(found) on stdout: \(result.summary)", file: file, line: line) }
        if let found = Self.rawControl(result.stderr) { XCTFail("raw \(found) on stderr: \(result.summary)", file: file, line: line) }
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    func testTextOutputEscapesEveryControlAndBidiCharacter() throws {
        add("-s", "svc", "-a", "acct", "-l", Self.hostile, "-j", "x" + Self.hostile, secret: Self.hostile)
        let found = expect(0, "find", "-s", "svc", "-g")
        assertNoRawControl(found)
        XCTAssertEqual(found.fields["label"], Self.escaped)
        XCTAssertEqual(found.fields["comment"], "x" + Self.escaped)
        XCTAssertEqual(found.fields["data"], Self.escaped)
        let dumped = expect(0, "dump", "--data")
        assertNoRawControl(dumped)
        XCTAssertEqual(dumped.fields["label"], Self.escaped)
        // A backslash is escaped too, so an escape in a value can't pass for one in the output.
        add("-s", "slash", "-l", #"\x1b\u{9b}"#)
        XCTAssertEqual(expect(0, "find", "-s", "slash").fields["label"], #"\\x1b\\u{9b}"#)
        // find -w is data for programs: the secret's exact bytes.
        XCTAssertEqual(secret("-s", "svc"), Array(Self.hostile.utf8))
    }

    func testJSONEscapesThemAndParsesBackToTheSameString() throws {
        add("-s", "svc", "-l", Self.hostile, secret: Self.hostile)
        let found = expect(0, "--json", "find", "-s", "svc", "-g")
        assertNoRawControl(found)
        let object = try found.jsonObject()
        XCTAssertEqual(object["label"] as? String, Self.hostile)
        XCTAssertEqual(object["data"] as? String, Self.hostile)
        for escape in [#"\u001b"#, #"\u009b"#, #"\u009d"#, #"\u202e"#, #"\u2066"#, #"\u061c"#, #"\u200e"#, #"\u2028"#, #"\u007f"#] {
            XCTAssertTrue(found.out.contains(escape), "\(escape) missing: \(found.out)")
        }
        // Other non-ASCII text stays as it is.
        add("-s", "plain", "-l", "café ✓ 🔑 \u{a0}")
        XCTAssertTrue(expect(0, "--json", "find", "-s", "plain").out.contains("\"café ✓ 🔑 \u{a0}\""))
    }

    func testMessagesEscapeWhatTheUserTyped() throws {
        let h = Self.hostile
        let runs: [(Int32, [String])] = [
            (206, ["find", "--ref", h]),
            (2, ["find", "--bogus" + h]),
            (2, ["find", "-" + String(h.unicodeScalars.dropFirst().first!)]),  // -ESC
            (2, [h]),                                                          // unknown command
            (2, ["find", "-s", "x", h]),                                       // unexpected argument
            (2, ["help", h]),
            (50, ["-k", sandbox.root + "/" + h, "status"]),
            (2, ["update", "-s", "x", "--set", h]),
            (41, ["update", "-s", "x", "--set", h + "=v"]),
            (38, ["find", "--class", h]),
            (206, ["add", "-s", "x", "--accessible", h]),
            (206, ["find", "--class", "inet", "-P", h]),
            (206, ["exec", "--env", "X=" + h, "--", "true"]),
            (127, ["exec", "--", "prog" + h]),
            (220, ["add", "-s", "x", "--data-file", sandbox.root + "/" + h]),
            (206, ["-e", sandbox.root + "/" + h, "find", "-s", "x"]),
        ]
        for (status, arguments) in runs {
            let result = locket(arguments)
            XCTAssertEqual(result.status, status, result.summary)
            assertNoRawControl(result)
            XCTAssertTrue(result.err.contains(#"\x1b"#) || result.err.contains(#"\u{9b}"#), "the text is not shown escaped: \(result.summary)")
            // The same errors as JSON: parseable, and nothing raw either.
            let json = locket(["--json"] + arguments)
            assertNoRawControl(json)
            if json.status != 2 && json.status != 127 {
                XCTAssertNotNil(try? json.jsonError(), json.summary)
            }
        }
    }

    func testStatusEscapesTheKeychainPath() {
        let path = sandbox.root + "/k" + Self.hostile + ".keychain"
        initKeychain(path)
        let result = expect(0, "-k", path, "status")
        assertNoRawControl(result)
        XCTAssertEqual(result.fields["keychain"], sandbox.root + "/k" + Self.escaped + ".keychain")
        let json = try? expect(0, "--json", "-k", path, "status").jsonObject()
        XCTAssertEqual(json?["keychain"] as? String, path)
    }
}
