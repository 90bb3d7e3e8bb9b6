import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 16, item 3: in a GitHub Actions step, exec registers each line of
/// each injected secret with `::add-mask::` before the command starts, and
/// `--github-env` appends variables to `$GITHUB_ENV`, read back here the way
/// actions/runner reads the file (FileCommandManager.cs, EnvFileKeyValuePairs).
final class EndToEndGitHubActionsTests: EndToEndCase {
    static let multiLine = "line one\nline two\r\n\n   \n100% sure\nline one"

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "github", "-a", "deploy", secret: "tok-123")
        addBytes("-s", "cert", "-a", "ci", data: Array(Self.multiLine.utf8))
    }

    var githubEnv: String { sandbox.root + "/set_env_1234" }
    var runner: [String: String] { ["GITHUB_ACTIONS": "true", "GITHUB_ENV": githubEnv] }

    func testMasksComeFirstOneLineAtATime() {
        writeFile(sandbox.root + "/ci.env", "PLAIN=not secret\nFROM_FILE=locket:github/deploy\n", mode: 0o600)
        let result = locket(["exec", "--env", "CERT=cert/ci", "--env-file", sandbox.root + "/ci.env", "--file", "F=github/deploy",
                             "--", "sh", "-c", "echo child output"], environment: runner)
        XCTAssertEqual(result.status, 0, result.summary)
        // Each line once, blank lines left out, % escaped; the command's output after all of them.
        XCTAssertEqual(result.out, """
            ::add-mask::tok-123
            ::add-mask::line one
            ::add-mask::line two
            ::add-mask::100%25 sure
            child output

            """)
        XCTAssertEqual(result.err, "")
        XCTAssertFalse(result.out.contains("not secret"), "a plain value was masked")
        // The runner reads the lines back as they were meant.
        let masks = result.out.split(separator: "\n").filter { $0.hasPrefix("::add-mask::") }
            .map { Self.unescapeData(String($0.dropFirst("::add-mask::".count))) }
        XCTAssertEqual(masks, ["tok-123", "line one", "line two", "100% sure"])
    }

    func testMasksAlsoWhenExecReplacesItselfAndWithMask() {
        let inPlace = locket(["exec", "--env", "T=github/deploy", "--", "printenv", "T"], environment: ["GITHUB_ACTIONS": "true"])
        XCTAssertEqual(inPlace.out, "::add-mask::tok-123\ntok-123\n")
        let masked = locket(["exec", "--mask", "--env", "T=github/deploy", "--", "printenv", "T"], environment: ["GITHUB_ACTIONS": "true"])
        XCTAssertEqual(masked.out, "::add-mask::tok-123\n<redacted>\n")
        // Not in a runner: nothing but the command's output.
        for value in [nil, "false", "1"] {
            let outside = locket(["exec", "--env", "T=github/deploy", "--", "printenv", "T"],
                                 environment: value.map { ["GITHUB_ACTIONS": $0] } ?? [:])
            XCTAssertEqual(outside.out, "tok-123\n", "GITHUB_ACTIONS=\(value ?? "unset")")
        }
    }

    func testGitHubEnvIsReadBackAsTheRunnerReadsIt() throws {
        writeFile(githubEnv, "EARLIER=from a previous step\n", mode: 0o644)
        let tricky = "a=b<<EOF\nEOF\nghadelimiter_\n=\nNAME<<X\n\n"
        add("-s", "tricky", "-a", "x", secret: tricky)
        writeFile(sandbox.root + "/ci.env", "PLAIN=plain value\nEMPTY=\nREF=locket:github/deploy\n", mode: 0o600)
        let result = locket(["exec", "--github-env", "--env", "CERT=cert/ci", "--env", "TRICKY=tricky/x",
                             "--env-file", sandbox.root + "/ci.env"],
                            environment: runner.merging(["INHERITED": "plain", "FROM_ENV": "locket:github/deploy"]) { $1 })
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertTrue(result.out.hasPrefix("::add-mask::"), "no masks before the variables: \(result.out)")
        let variables = try Self.runnerParse(XCTUnwrap(FileManager.default.contents(atPath: githubEnv)))
        XCTAssertEqual(variables.map(\.0), ["EARLIER", "FROM_ENV", "PLAIN", "EMPTY", "REF", "CERT", "TRICKY"])
        let values = Dictionary(variables, uniquingKeysWith: { $1 })
        XCTAssertEqual(values["EARLIER"], "from a previous step")
        XCTAssertEqual(values["FROM_ENV"], "tok-123", "an inherited reference is passed on resolved")
        XCTAssertNil(values["INHERITED"], "inherited plain variables are the runner's already")
        XCTAssertEqual(values["PLAIN"], "plain value")
        XCTAssertEqual(values["EMPTY"], "")
        XCTAssertEqual(values["REF"], "tok-123")
        XCTAssertEqual(values["CERT"], Self.multiLine)
        XCTAssertEqual(values["TRICKY"], tricky)

        // A new random delimiter each time.
        let again = locket(["exec", "--github-env", "--env", "T=github/deploy"], environment: runner)
        XCTAssertEqual(again.status, 0, again.summary)
        let text = String(decoding: FileManager.default.contents(atPath: githubEnv) ?? Data(), as: UTF8.self)
        let delimiters = Set(text.split(separator: "\n").filter { $0.contains("<<ghadelimiter_") }.map { $0.split(separator: "<<")[1] })
        XCTAssertEqual(delimiters.count, 2, text)
        XCTAssertTrue(delimiters.allSatisfy { $0.count == "ghadelimiter_".count + 32 })
    }

    func testGitHubEnvWithACommand() throws {
        writeFile(githubEnv, "", mode: 0o644)
        let result = locket(["exec", "--github-env", "--env", "T=github/deploy", "--", "printenv", "T"], environment: runner)
        XCTAssertEqual(result.out, "::add-mask::tok-123\ntok-123\n")
        XCTAssertEqual(try Self.runnerParse(XCTUnwrap(FileManager.default.contents(atPath: githubEnv))).map(\.1), ["tok-123"])
    }

    /// Issue 31, item 1: a step that wrote `printf 'A=1' >> $GITHUB_ENV` left
    /// no newline at the end; the heredoc header must not join that line,
    /// or the runner reads the secret's own lines as assignments.
    func testGitHubEnvWithoutAFinalNewlineKeepsEachValueWhole() throws {
        let hostile = "harmless\nLD_PRELOAD=/tmp/evil.so\nPATH=/tmp/evil"
        add("-s", "hostile", "-a", "x", secret: hostile)
        writeFile(githubEnv, "EARLIER=no newline after me", mode: 0o644)
        let result = locket(["exec", "--github-env", "--env", "T=hostile/x"], environment: runner)
        XCTAssertEqual(result.status, 0, result.summary)
        let text = try XCTUnwrap(readText(githubEnv))
        XCTAssertTrue(text.hasPrefix("EARLIER=no newline after me\nT<<ghadelimiter_"), text)
        let variables = try Self.runnerParse(Data(text.utf8))
        XCTAssertEqual(variables.map(\.0), ["EARLIER", "T"], text)
        XCTAssertEqual(variables.last?.1, hostile)

        // A file that ends in a newline, or is empty, gets none added.
        writeFile(githubEnv, "", mode: 0o644)
        XCTAssertEqual(locket(["exec", "--github-env", "--env", "T=hostile/x"], environment: runner).status, 0)
        XCTAssertTrue(try XCTUnwrap(readText(githubEnv)).hasPrefix("T<<ghadelimiter_"))
        writeFile(githubEnv, "A=1\n", mode: 0o644)
        XCTAssertEqual(locket(["exec", "--github-env", "--env", "T=hostile/x"], environment: runner).status, 0)
        XCTAssertTrue(try XCTUnwrap(readText(githubEnv)).hasPrefix("A=1\nT<<ghadelimiter_"))
    }

    func testGitHubEnvRefusals() {
        writeFile(githubEnv, "KEEP=1\n", mode: 0o644)
        let outside = locket(["exec", "--github-env", "--env", "T=github/deploy"], environment: ["GITHUB_ENV": githubEnv])
        XCTAssertEqual(outside.status, 206, outside.summary)
        XCTAssertTrue(outside.err.contains("GITHUB_ACTIONS=true"), outside.err)
        XCTAssertEqual(outside.stdout, [], "a secret was printed outside a runner")
        let noFile = locket(["exec", "--github-env", "--env", "T=github/deploy"], environment: ["GITHUB_ACTIONS": "true"])
        XCTAssertEqual(noFile.status, 206, noFile.summary)
        XCTAssertTrue(noFile.err.contains("GITHUB_ENV"), noFile.err)
        // Values $GITHUB_ENV can't carry: refused before the file is touched.
        addBytes("-s", "binary", "-a", "x", data: [0x61, 0xff, 0x62])
        let binary = locket(["exec", "--github-env", "--env", "B=binary/x"], environment: runner)
        XCTAssertEqual(binary.status, 206, binary.summary)
        XCTAssertTrue(binary.err.contains("B: "), binary.err)
        XCTAssertEqual(readText(githubEnv), "KEEP=1\n")
        let fifo = sandbox.root + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let waited = locket(["exec", "--github-env", "--env", "T=github/deploy"], environment: ["GITHUB_ACTIONS": "true", "GITHUB_ENV": fifo])
        XCTAssertEqual(waited.status, 220, waited.summary)
        XCTAssertLessThan(waited.duration, 10, "the run is killed at 20 s")
        let missing = locket(["exec", "--github-env", "--env", "T=github/deploy"],
                             environment: ["GITHUB_ACTIONS": "true", "GITHUB_ENV": sandbox.root + "/absent"])
        XCTAssertEqual(missing.status, 220, missing.summary)
        assertUsage(locket("exec", "--github-env", "--file", "F=github/deploy", environment: runner), mentions: ["--file needs a command"])
        assertUsage(locket("exec", "--env", "T=github/deploy"), mentions: ["no command"])
    }

    // MARK: - The runner's readers

    /// ActionCommand.UnescapeData: %0D, %0A, then %25, in that order.
    static func unescapeData(_ text: String) -> String {
        text.replacingOccurrences(of: "%0D", with: "\r").replacingOccurrences(of: "%0A", with: "\n").replacingOccurrences(of: "%25", with: "%")
    }

    struct RunnerError: Error, CustomStringConvertible { let description: String }

    /// FileCommandManager.cs's EnvFileKeyValuePairs on Linux: lines end at LF;
    /// `NAME=VALUE`, or `NAME<<DELIMITER` then lines up to one equal to the
    /// delimiter, the value being the text between, without the last newline.
    static func runnerParse(_ data: Data) throws -> [(String, String)] {
        let text = String(decoding: data, as: UTF8.self)
        let chars = Array(text.unicodeScalars)
        var index = 0
        func readLine() -> (String, Bool)? {
            guard index < chars.count else { return nil }
            let start = index
            while index < chars.count, chars[index] != "\n" { index += 1 }
            let line = String(String.UnicodeScalarView(chars[start..<index]))
            if index < chars.count { index += 1; return (line, true) }
            return (line, false)
        }
        var out: [(String, String)] = []
        while let (line, _) = readLine() {
            if line.isEmpty { continue }
            let equals = line.firstRange(of: "=")?.lowerBound
            let heredoc = line.firstRange(of: "<<")?.lowerBound
            if let equals, heredoc == nil || equals < heredoc! {
                out.append((String(line[..<equals]), String(line[line.index(after: equals)...])))
            } else if let heredoc {
                let key = String(line[..<heredoc])
                let delimiter = String(line[line.index(heredoc, offsetBy: 2)...])
                guard !key.isEmpty, !delimiter.isEmpty else { throw RunnerError(description: "Invalid format '\(line)'") }
                let start = index
                var end = index
                while true {
                    guard let (next, newline) = readLine() else { throw RunnerError(description: "Matching delimiter not found") }
                    if next == delimiter { break }
                    guard newline else { throw RunnerError(description: "EOF marker missing new line") }
                    end = index - 1
                }
                out.append((key, end > start ? String(String.UnicodeScalarView(chars[start..<end])) : ""))
            } else {
                throw RunnerError(description: "Invalid format '\(line)'")
            }
        }
        return out
    }
}
