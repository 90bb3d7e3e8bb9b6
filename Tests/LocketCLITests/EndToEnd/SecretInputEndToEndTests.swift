import Foundation
import XCTest

/// How secrets come in: `-w` on stdin, `--data-file`, `-w VALUE`, empty and oversized secrets.
final class EndToEndSecretInputTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

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
        expect(0, "add", "-s", "empty-stdin", "-w", input: .text(""))
        expect(0, "add", "-s", "empty-newline", "-w", input: .text("\n"))
        ok("add", "-s", "no-secret")
        addBytes("-s", "empty-file", data: [])
        for name in ["empty-stdin", "empty-newline", "no-secret", "empty-file"] {
            XCTAssertEqual(secret("-s", name), [], name)
            XCTAssertEqual(expect(0, "find", "-s", name, "-w").stdout, [0x0a], name)
            XCTAssertEqual(try expect(0, "--json", "find", "-s", name, "-w").jsonObject()["data"] as? String, "", name)
        }
    }

    // MARK: - Issue 11, defect 4: a secret that starts with '-'

    /// `locket add -s s -a a -w '-lX9secret'` stored an empty secret and the
    /// label "X9secret", exit 0. After -w, an argument that starts with '-'
    /// and is not one option standing alone is a usage error that stores
    /// nothing and does not echo the argument (it may be the secret).
    func testDashSecretAfterWIsRefusedNeverSplitIntoOptions() {
        // The one test besides testSecretAsArgumentWorksWithOneLineWarning that puts a secret in argv.
        for args in [["add", "-s", "s", "-a", "a", "-w", "-lX9secret"], ["add", "-s", "s", "--password", "-lX9secret"],
                     ["add", "-s", "s", "-w", "-x"], ["add", "-s", "s", "-w", "-Ua"]] {
            let result = locket(args, input: .text("from stdin\n"))
            assertUsage(result, mentions: ["--password=SECRET"])
            XCTAssertFalse(result.err.contains(args.last!) || result.err.contains("X9secret"), "the argument is echoed: \(result.summary)")
            expect(44, "find", "-s", "s")
        }
        expect(44, "find", "-l", "X9secret")
    }

    /// `--password=VALUE` always takes VALUE, and `-wVALUE` does as getopt
    /// would; both warn once that argv is visible.
    func testPasswordEqualsTakesADashSecret() {
        let long = locket("add", "-s", "s", "-a", "a", "--password=-lX9secret")
        XCTAssertEqual(long.status, 0, long.summary)
        XCTAssertEqual(long.errLines.count, 1, long.summary)
        XCTAssertTrue(long.err.hasPrefix("locket: warning: "), long.summary)
        XCTAssertEqual(secret("-s", "s"), Array("-lX9secret".utf8))
        XCTAssertEqual(expect(0, "find", "-s", "s").fields["label"], "s", "no label taken from the secret")
        let short = locket("add", "-s", "t", "-w-lX9secret")
        XCTAssertEqual(short.status, 0, short.summary)
        XCTAssertEqual(secret("-s", "t"), Array("-lX9secret".utf8))
        let update = locket("update", "-s", "t", "--password=--account")
        XCTAssertEqual(update.status, 0, update.summary)
        XCTAssertEqual(secret("-s", "t"), Array("--account".utf8))
    }

    /// An option standing alone after -w still ends it: -w reads stdin.
    func testOptionStandingAloneAfterWReadsStdin() {
        for (i, tail) in [["-a", "x"], ["--account", "x"], ["--account=x"], ["-U"], ["--json"], ["--"]].enumerated() {
            ok(["add", "-s", "alone\(i)", "-w"] + tail, input: .text("piped \(i)\n"))
            XCTAssertEqual(secret("-s", "alone\(i)"), Array("piped \(i)".utf8), "\(tail)")
        }
    }

    /// `-w` reading zero bytes (or a blank line) from a non-terminal stdin
    /// stores an empty secret, with one warning: a closed or /dev/null stdin
    /// is a common CI mistake.
    func testEmptyStdinStoresAnEmptySecretOnlyWithAWarning() {
        for (i, input) in [Input.devNull, .bytes([]), .text("\n")].enumerated() {
            let added = expect(0, "add", "-s", "empty\(i)", "-w", input: input)
            XCTAssertEqual(added.errLines.count, 1, added.summary)
            XCTAssertTrue(added.err.hasPrefix("locket: warning: "), added.summary)
            XCTAssertTrue(added.err.contains("empty"), added.summary)
            XCTAssertEqual(secret("-s", "empty\(i)"), [])
            ok("update", "-s", "empty\(i)", "-w", input: .text("filled\n"))
            let emptied = expect(0, "update", "-s", "empty\(i)", "-w", input: input)
            XCTAssertTrue(emptied.err.hasPrefix("locket: warning: "), emptied.summary)
            XCTAssertEqual(secret("-s", "empty\(i)"), [])
        }
        // An empty secret on purpose needs no warning.
        ok("add", "-s", "on-purpose", "--data-file", "/dev/null")
        ok("add", "-s", "none-given")
    }

    /// Passwords for init, unlock and passwd: an empty stdin is still refused.
    func testEmptyStdinIsNoPassword() {
        for input in [Input.devNull, .bytes([]), .text("\n")] {
            let other = sandbox.root + "/other.keychain"
            assertError(expect(36, "-k", other, "init", "--password-stdin", input: input), "errSecInteractionNotAllowed", -25308)
            expect(50, "-k", other, "status")
            ok("lock")
            assertError(expect(36, "unlock", "--password-stdin", input: input), "errSecInteractionNotAllowed", -25308)
            assertError(expect(36, "passwd", input: input), "errSecInteractionNotAllowed", -25308)
            unlock()
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

    /// A regular data file is read with the keychain's file still open (the
    /// write then neither opens it nor parses its schema again), byte exact.
    func testRegularDataFileIsStoredByteExact() {
        let path = sandbox.root + "/secret.bin"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(Self.binary)))
        ok("add", "-s", "file", "--data-file", path)
        XCTAssertEqual(secret("-s", "file"), Self.binary)
    }

    /// A FIFO as the data file may wait for its writer: `add` waits without
    /// the keychain's file, so other commands go on meanwhile.
    func testDataFileFIFOWaitsWithoutHoldingTheKeychain() throws {
        addBytes("-s", "other", data: Array("o".utf8))
        let fifo = sandbox.root + "/secret.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let add = try startLocket(["add", "-s", "fifo", "--data-file", fifo])
        // Until it waits in the FIFO's open (as far as /proc tells).
        for _ in 0..<100 {
            if let wchan = try? String(contentsOfFile: "/proc/\(add.pid)/wchan", encoding: .utf8), wchan.contains("fifo") { break }
            usleep(50_000)
        }
        let find = expect(0, "find", "-s", "other", "-w")
        XCTAssertLessThan(find.duration, 10, "add held the keychain while it waited for the FIFO (the run is killed at 20 s)")
        let fd = open(fifo, O_WRONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        _ = Array("from-fifo".utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        XCTAssertTrue(add.wait(timeout: 60), add.summary)
        XCTAssertEqual(add.status, 0, add.summary)
        XCTAssertEqual(secret("-s", "fifo"), Array("from-fifo".utf8))
    }

    func testMissingDataFileIsAnError() {
        let result = locket("add", "-s", "x", "--data-file", sandbox.root + "/does-not-exist")
        XCTAssertNotEqual(result.status, 0, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
        expect(44, "find", "-s", "x")
    }
}
