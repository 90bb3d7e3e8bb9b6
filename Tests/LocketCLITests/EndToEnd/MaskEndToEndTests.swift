import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 5, item 1: `exec --mask` passes the child's stdout and stderr
/// through a filter that replaces every injected value with `<redacted>`,
/// also when a value is split across writes, and without holding back output
/// that cannot be a secret (a prompt without a newline still shows).
/// Issue 11, defect 5 (SPEC §16): a partial match is held until more output
/// or the end of the stream decides it, never released by a timer.
final class EndToEndMaskTests: EndToEndCase {
    static let token = "tok-123"
    static let other = "other-secret"
    static let redacted = "<redacted>"

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "github", "-a", "deploy", secret: Self.token)
        add("-s", "other", "-a", "x", secret: Self.other)
    }

    /// `locket exec --mask --env T=github/deploy --env U=other/x [--env EXTRA]... -- sh -c SCRIPT`.
    @discardableResult
    func masked(_ script: String, extra: [String] = [], status: Int32 = 0,
                file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let env = ["--env", "T=github/deploy", "--env", "U=other/x"] + extra.flatMap { ["--env", $0] }
        let result = locket(["exec", "--mask"] + env + ["--", "sh", "-c", script], file: file, line: line)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }

    /// Asserts that no secret shows in `text`: with every `<redacted>` taken
    /// out, what is left is `visible` (and at least one was there).
    func assertMasked(_ text: String, leaves visible: String, secrets: [String] = [EndToEndMaskTests.token, EndToEndMaskTests.other],
                      file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(text.contains(Self.redacted), "nothing redacted: \(text.debugDescription)", file: file, line: line)
        XCTAssertEqual(text.replacingOccurrences(of: Self.redacted, with: ""), visible,
                       "output \(text.debugDescription)", file: file, line: line)
        for secret in secrets { XCTAssertFalse(text.contains(secret), "\(secret) shows: \(text.debugDescription)", file: file, line: line) }
    }

    func testMasksStdoutAndStderr() {
        let result = masked("printf '%s\\n' \"$T\"; printf 'x%sy\\n' \"$T\" >&2; echo \"token=$T; again $T.\"")
        XCTAssertEqual(result.out, "<redacted>\ntoken=<redacted>; again <redacted>.\n")
        XCTAssertEqual(result.err, "x<redacted>y\n")
    }

    func testOutputWithoutSecretsPassesUnchanged() {
        let result = masked("printf 'plain\\n'; printf 'tok-12'; printf 'tok-' >&2")
        XCTAssertEqual(result.out, "plain\ntok-12", "a prefix of a secret at the end is not a secret")
        XCTAssertEqual(result.err, "tok-")
        // Bytes that are not text pass through as they are.
        let binary = masked("printf '\\000\\377\\001t\\000'")
        XCTAssertEqual(binary.stdout, [0x00, 0xff, 0x01, UInt8(ascii: "t"), 0x00])
    }

    func testSecretSplitAcrossWritesWithAPause() {
        XCTAssertEqual(masked("printf tok-; sleep 0.2; printf 123").out, "<redacted>")
        XCTAssertEqual(masked("printf tok- >&2; sleep 0.2; printf 123 >&2").err, "<redacted>")
        XCTAssertEqual(masked("printf 'a to'; sleep 0.15; printf 'k-1'; sleep 0.15; printf '23 b\\n'").out, "a <redacted> b\n")
        // Split on both streams at once, each with its own state.
        let both = masked("printf tok-; printf other- >&2; sleep 0.2; printf 123; printf secret >&2")
        XCTAssertEqual(both.out, "<redacted>")
        XCTAssertEqual(both.err, "<redacted>")
    }

    func testTwoDifferentSecrets() {
        let result = masked("printf '%s and %s\\n' \"$T\" \"$U\"; printf '%s|%s' \"$U\" \"$T\" >&2")
        XCTAssertEqual(result.out, "<redacted> and <redacted>\n")
        XCTAssertEqual(result.err, "<redacted>|<redacted>")
    }

    func testAdjacentOccurrences() {
        let result = masked("printf '%s%s%s\\n' \"$T\" \"$T\" \"$U\"")
        assertMasked(result.out, leaves: "\n")
        // A secret that contains another is masked whole, not in part.
        add("-s", "long", "-a", "x", secret: "tok-123-long")
        let nested = masked("printf '%s %s\\n' \"$L\" \"$T\"", extra: ["L=long/x"])
        XCTAssertEqual(nested.out, "<redacted> <redacted>\n")
    }

    func testOverlappingOccurrences() {
        // One secret overlapping itself: both occurrences in "abcabcabc" are hidden.
        add("-s", "periodic", "-a", "x", secret: "abcabc")
        let selfOverlap = masked("printf 'abcabcabc\\n'", extra: ["P=periodic/x"])
        assertMasked(selfOverlap.out, leaves: "\n", secrets: ["abcabc", "abc"])
        // Two secrets overlapping: "tok-123" and "123-xyz" in "tok-123-xyz".
        add("-s", "tail", "-a", "x", secret: "123-xyz")
        let overlap = masked("printf '[tok-123-xyz]\\n'", extra: ["X=tail/x"])
        assertMasked(overlap.out, leaves: "[]\n", secrets: [Self.token, "123-xyz", "xyz"])
    }

    func testSecretsAcrossReadBoundaries() throws {
        // Far more than a pipe holds, with the secret at every offset modulo 61:
        // some occurrence straddles every read boundary the filter sees.
        var content = ""
        var expected = ""
        var count = 0
        while content.utf8.count < 400_000 {
            let filler = String(repeating: "x", count: 1 + count % 61)
            content += filler + Self.token
            expected += filler + Self.redacted
            count += 1
        }
        content += "tok-"
        expected += "tok-"
        let path = sandbox.root + "/big"
        writeFile(path, content)
        let result = locket(["exec", "--mask", "--env", "T=github/deploy", "--", "cat", path, path])
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertEqual(result.out.count, expected.count * 2)
        XCTAssertTrue(result.out == expected + expected, "the output differs from the expected masking")
        XCTAssertFalse(result.out.contains(Self.token))
    }

    func testOutputFlowsWithoutANewline() throws {
        // A prompt without a newline, then a pause: it must show while the command waits.
        // The second part ("tok-") could start a secret: held until "done" shows it is none.
        let process = try startLocket(["exec", "--mask", "--env", "T=github/deploy", "--",
                                       "sh", "-c", "printf 'Password: '; sleep 1; printf 'tok-'; sleep 1.5; printf done"])
        var promptAt: Double?, prefixSeen: String?
        var runningWhenSeen = false
        _ = process.waitUntil(timeout: 10) {
            if promptAt == nil, process.out.hasPrefix("Password: ") { promptAt = process.elapsed; runningWhenSeen = !process.hasExited }
            if prefixSeen == nil, process.out.hasPrefix("Password: tok-") { prefixSeen = process.out }
            return prefixSeen != nil || process.hasExited
        }
        XCTAssertTrue(process.wait(timeout: 10), process.summary)
        // The held "tok-" comes out with "done" just before the command ends: the
        // poll that found it ended may not have read them yet, wait(timeout:) has.
        if prefixSeen == nil, process.out.hasPrefix("Password: tok-") { prefixSeen = process.out }
        XCTAssertEqual(process.out, "Password: tok-done")
        let prompt = try XCTUnwrap(promptAt, "the prompt never arrived on its own: \(process.summary)")
        XCTAssertTrue(runningWhenSeen, "the prompt only arrived when the command exited")
        XCTAssertLessThan(prompt, 0.9, "the prompt was held back")
        XCTAssertEqual(prefixSeen, "Password: tok-done", "the undecided prefix came out before the output that decided it")
    }

    // MARK: - Issue 11, defect 5: no timer

    /// The reproduction: a 16-byte token written in two parts with a
    /// 0.7 s pause came out whole, the held first half released by a 500 ms timer.
    func testSecretWrittenInTwoPartsWithALongPauseStaysMasked() {
        let token = "ghp_0123456789ab"
        add("-s", "long", "-a", "x", secret: token)
        let extra = ["L=long/x"]
        let stdout = masked("printf 'a=%s' \"${L%????????}\"; sleep 0.7; printf '%s\\n' \"${L#????????}\"", extra: extra)
        XCTAssertEqual(stdout.out, "a=<redacted>\n")
        let stderr = masked("printf 'b=%s' \"${L%????????}\" >&2; sleep 1.2; printf '%s\\n' \"${L#????????}\" >&2", extra: extra)
        XCTAssertEqual(stderr.err, "b=<redacted>\n")
        // Three parts, two long pauses, and the short token too.
        let three = masked("printf 'c=ghp_01'; sleep 0.6; printf '23456'; sleep 0.6; printf '789ab.'; printf tok-; sleep 0.7; printf '123!'",
                           extra: extra)
        XCTAssertEqual(three.out, "c=<redacted>.<redacted>!")
        for result in [stdout, stderr, three] {
            XCTAssertFalse(result.out.contains("ghp_") || result.err.contains("ghp_"), result.summary)
            XCTAssertFalse(result.out.contains("tok-") || result.err.contains("tok-"), result.summary)
        }
    }

    /// A command that writes the start of a secret and then waits keeps that
    /// start held for as long as it waits; its end of stream releases it.
    func testAPartialMatchIsHeldWhileTheCommandWaits() throws {
        let process = try startLocket(["exec", "--mask", "--env", "T=github/deploy", "--",
                                       "sh", "-c", "printf 'ready tok-'; exec sleep 30"])
        XCTAssertTrue(process.waitUntil(timeout: 10) { process.out.hasPrefix("ready ") || process.hasExited }, process.summary)
        process.pump(1.5)
        XCTAssertFalse(process.hasExited, process.summary)
        XCTAssertEqual(process.out, "ready ", "the undecided 'tok-' was let out while the command waited")
        XCTAssertEqual(kill(process.pid, SIGTERM), 0)
        XCTAssertTrue(process.wait(timeout: 10), process.summary)
        XCTAssertEqual(process.status, 128 + SIGTERM, process.summary)
        XCTAssertEqual(process.out, "ready tok-", "the end of the stream decides: no secret, written as it is")
    }

    /// The command's exit ends the stream even while something it started
    /// holds the pipe: the held tail is written and locket does not wait.
    func testExitWithAGrandchildHoldingThePipeReleasesTheHeldTail() {
        let result = masked("sleep 15 & printf 'x tok-'")
        XCTAssertEqual(result.out, "x tok-")
        XCTAssertLessThan(result.duration, 10, "locket waited for the grandchild (15 s): \(result.summary)")
    }

    func testMaskWithoutSecretsIsAPassThrough() {
        let result = locket(["exec", "--mask", "--", "sh", "-c", "printf 'out'; printf 'err' >&2; exit 4"])
        XCTAssertEqual(result.status, 4, result.summary)
        XCTAssertEqual(result.out, "out")
        XCTAssertEqual(result.err, "err")
    }

    func testClosedOutputEndsTheCommand() throws {
        // `locket exec --mask -- yes | head -1`: once the reader is gone, the command
        // must learn it (SIGPIPE / EPIPE) as it would without the filter, not run forever.
        let process = try startLocket(["exec", "--mask", "--env", "T=github/deploy", "--", "yes", "tok-123"])
        XCTAssertTrue(process.waitUntil(timeout: 10) { process.stdout.count >= 100 || process.hasExited }, process.summary)
        process.closeStdout()
        let ended = process.wait(timeout: 5)
        XCTAssertTrue(ended, "locket and yes still run 5 s after their reader went away")
        if ended {
            XCTAssertEqual(process.status, 128 + SIGPIPE, "the command died of SIGPIPE, and locket says so: \(process.summary)")
        }
        XCTAssertFalse(process.out.contains(Self.token))
        // The same without the filter, for comparison: locket is yes, and SIGPIPE ends it.
        let direct = try startLocket(["exec", "--env", "T=github/deploy", "--", "yes"])
        XCTAssertTrue(direct.waitUntil(timeout: 10) { direct.stdout.count >= 100 || direct.hasExited }, direct.summary)
        direct.closeStdout()
        XCTAssertTrue(direct.wait(timeout: 5))
        XCTAssertEqual(direct.signal, SIGPIPE, direct.summary)
    }

    func testStdinReachesTheCommand() {
        let result = locket(["exec", "--mask", "--env", "T=github/deploy", "--", "cat"], input: .text("typed tok-123\n"))
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(result.out, "typed <redacted>\n")
    }
}
