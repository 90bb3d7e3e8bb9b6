import Foundation
import XCTest

/// How secrets come in: `-w` on stdin, `--data-file`, `-w VALUE`, empty and oversized secrets.
final class EndToEndSecretInputTests: EndToEndCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    /// Every byte value, NUL and 0xff included, plus a trailing newline that must survive.
    static let binary: [UInt8] = [0x00, 0xff, 0x00, 0x0a, 0x0d] + (0...255).map { UInt8($0) } + [0xfe, 0xff, 0x00, 0x0a]

    func testBinarySecretRoundTripsByteExact() throws {
        addBytes("-s", "bin", data: Self.binary)
        XCTAssertEqual(secret("-s", "bin"), Self.binary)
        XCTAssertEqual(expect(0, "find", "-s", "bin", "-w").stdout, Self.binary + [0x0a])
        let json = try expect(0, "--json", "find", "-s", "bin", "-w").jsonObject()
        XCTAssertNil(json["data"], "bytes that are not UTF-8 go in dataBase64")
        let base64 = try XCTUnwrap(json["dataBase64"] as? String)
        XCTAssertEqual(Array(try XCTUnwrap(Data(base64Encoded: base64))), Self.binary)
        // Text output escapes rather than writing raw control bytes.
        let g = expect(0, "find", "-s", "bin", "-g")
        XCTAssertFalse(g.stdout.contains(0x00), "find -g must not print raw NUL bytes")
        // Update with binary data, from a file this time.
        let path = sandbox.root + "/secret.bin"
        let reversed = Array(Self.binary.reversed())
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(reversed)))
        ok("update", "-s", "bin", "--data-file", path)
        XCTAssertEqual(secret("-s", "bin"), reversed)
        // And dump --data --json carries it as base64 too.
        let dump = try expect(0, "--json", "dump", "--data").jsonArray()
        XCTAssertEqual(dump.first?["dataBase64"] as? String, Data(reversed).base64EncodedString())
    }

    func testUTF8SecretInJSONIsData() throws {
        addBytes("-s", "utf8", data: Array("pässwörd ✓ \"quoted\" \\ \t".utf8))
        let json = try expect(0, "--json", "find", "-s", "utf8", "-g").jsonObject()
        XCTAssertEqual(json["data"] as? String, "pässwörd ✓ \"quoted\" \\ \t")
        XCTAssertNil(json["dataBase64"])
    }

    func testDataFileKeepsTrailingNewlines() {
        addBytes("-s", "nl", data: Array("line\n\n".utf8))
        XCTAssertEqual(secret("-s", "nl"), Array("line\n\n".utf8))
    }

    func testStdinDropsExactlyOneTrailingNewline() {
        let cases: [(String, String)] = [("plain", "plain"), ("one\n", "one"), ("two\n\n", "two\n"), ("crlf\r\n", "crlf\r"),
                                         ("inner\nline\n", "inner\nline")]
        for (i, (input, stored)) in cases.enumerated() {
            ok("add", "-s", "nl\(i)", "-w", input: .text(input))
            XCTAssertEqual(secret("-s", "nl\(i)"), Array(stored.utf8), "stdin \(input.debugDescription)")
        }
        // -w followed by another option still reads stdin.
        ok("add", "-w", "-s", "wfirst", input: .text("from stdin\n"))
        XCTAssertEqual(secret("-s", "wfirst"), Array("from stdin".utf8))
        // update -w reads stdin the same way.
        ok("update", "-s", "wfirst", "-w", input: .text("updated\n"))
        XCTAssertEqual(secret("-s", "wfirst"), Array("updated".utf8))
    }

    func testSecretAsArgumentWorksWithOneLineWarning() {
        // The one test that puts a secret in argv, as security(1) allows.
        let result = locket("add", "-s", "argv", "-w", "visible-value")
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(result.errLines.count, 1, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: warning: "), result.summary)
        XCTAssertFalse(result.err.contains("visible-value"), "the warning must not repeat the secret")
        XCTAssertEqual(secret("-s", "argv"), Array("visible-value".utf8))
        // --password=VALUE as well.
        let long = locket("update", "-s", "argv", "--password=second-value")
        XCTAssertEqual(long.status, 0, long.summary)
        XCTAssertTrue(long.err.hasPrefix("locket: warning: "), long.summary)
        XCTAssertEqual(secret("-s", "argv"), Array("second-value".utf8))
        // A failure after the warning does not echo the value either.
        let dup = locket("add", "-s", "argv", "-w", "visible-value")
        XCTAssertEqual(dup.status, 45, dup.summary)
        XCTAssertFalse(dup.err.contains("visible-value"), dup.summary)
    }

    func testEmptySecret() throws {
        ok("add", "-s", "empty-stdin", "-w", input: .text(""))
        ok("add", "-s", "empty-newline", "-w", input: .text("\n"))
        ok("add", "-s", "no-secret")
        addBytes("-s", "empty-file", data: [])
        for name in ["empty-stdin", "empty-newline", "no-secret", "empty-file"] {
            XCTAssertEqual(secret("-s", name), [], name)
            XCTAssertEqual(expect(0, "find", "-s", name, "-w").stdout, [0x0a], name)
            XCTAssertEqual(try expect(0, "--json", "find", "-s", name, "-w").jsonObject()["data"] as? String, "", name)
        }
    }

    func testOversizedSecretIsRefusedAndNothingAdded() {
        let limit = 16 * 1024 * 1024
        let big = [UInt8](repeating: 0x61, count: limit + 1)
        let viaStdin = locket("add", "-s", "big", "--data-file", "-", input: .bytes(big))
        XCTAssertEqual(viaStdin.status, 42, viaStdin.summary)
        assertError(viaStdin, "errSecDataTooLarge", -25302)
        expect(44, "find", "-s", "big")

        let path = sandbox.root + "/big.bin"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(big)))
        let viaFile = locket("add", "-s", "big", "--data-file", path)
        XCTAssertEqual(viaFile.status, 42, viaFile.summary)
        let viaW = locket("add", "-s", "big", "-w", input: .bytes(big + [0x0a, 0x0a]))
        XCTAssertEqual(viaW.status, 42, viaW.summary)
        expect(44, "find", "-s", "big")

        // Exactly the limit is accepted.
        let exact = locket("add", "-s", "exact", "--data-file", "-", input: .bytes(Array(big.dropLast())))
        XCTAssertEqual(exact.status, 0, exact.summary)
        XCTAssertEqual(secret("-s", "exact").count, limit)
    }

    func testMissingDataFileIsAnError() {
        let result = locket("add", "-s", "x", "--data-file", sandbox.root + "/does-not-exist")
        XCTAssertNotEqual(result.status, 0, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
        expect(44, "find", "-s", "x")
    }
}
