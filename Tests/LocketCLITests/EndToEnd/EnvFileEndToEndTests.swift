import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 16, item 2: `exec --env-file FILE` (the dotenv cases themselves are
/// DotEnvParsingTests): precedence, secrets among plain values, failures.
final class EndToEndEnvFileTests: EndToEndCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "github", "-a", "deploy", secret: "tok-123")
        add("-s", "npm", "-a", "ci", secret: "npm-secret")
    }

    func envFile(_ name: String, _ text: String) -> String {
        let path = sandbox.root + "/" + name
        writeFile(path, text, mode: 0o600)
        return path
    }

    /// `env` of the command, as a dictionary.
    func childEnvironment(_ arguments: [String], environment: [String: String] = [:],
                          file: StaticString = #filePath, line: UInt = #line) -> [String: String] {
        let result = locket(["exec"] + arguments + ["--", "env", "-0"], environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        var out: [String: String] = [:]
        for entry in result.stdout.split(separator: 0) {
            let text = String(decoding: entry, as: UTF8.self)
            if let eq = text.firstIndex(of: "=") { out[String(text[..<eq])] = String(text[text.index(after: eq)...]) }
        }
        return out
    }

    func testSecretsAndPlainValues() {
        let file = envFile("ci.env", """
            # deploy settings
            export API_URL=https://api.example.com
            GH_TOKEN=locket:github/deploy
            QUOTED="locket:npm/ci"
            MULTI="line one
            line two"
            NOT_A_REF='Locket:github/deploy'

            """)
        let env = childEnvironment(["--env-file", file])
        XCTAssertEqual(env["API_URL"], "https://api.example.com")
        XCTAssertEqual(env["GH_TOKEN"], "tok-123")
        XCTAssertEqual(env["QUOTED"], "npm-secret")
        XCTAssertEqual(env["MULTI"], "line one\nline two")
        XCTAssertEqual(env["NOT_A_REF"], "Locket:github/deploy")
        XCTAssertEqual(env["HOME"], sandbox.home, "the rest of the environment passes through")
    }

    /// Lowest first: the environment, each file in order, then --env.
    func testPrecedence() {
        let first = envFile("a.env", "A=from-a\nB=from-a\nC=from-a\nINHERITED=from-a\n")
        let second = envFile("b.env", "B=from-b\nC=locket:npm/ci\n")
        let env = childEnvironment(["--env-file", first, "--env-file", second, "--env", "C=github/deploy"],
                                   environment: ["INHERITED": "from-environment", "KEPT": "kept", "A": "locket:missing/item"])
        XCTAssertEqual(env["A"], "from-a", "a file's value replaces an environment reference, which is then not resolved")
        XCTAssertEqual(env["B"], "from-b")
        XCTAssertEqual(env["C"], "tok-123")
        XCTAssertEqual(env["INHERITED"], "from-a")
        XCTAssertEqual(env["KEPT"], "kept")
    }

    func testMissingReferenceStartsNothing() {
        let marker = sandbox.root + "/ran"
        let file = envFile("ci.env", "GOOD=locket:github/deploy\nDEPLOY_KEY=locket:deploy/missing\n")
        let result = locket(["exec", "--env-file", file, "--", "sh", "-c", ": > \"$1\"", "sh", marker])
        XCTAssertEqual(result.status, 44, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: error: DEPLOY_KEY: "), result.err)
        XCTAssertFalse(fileExists(marker))
    }

    func testMalformedFiles() {
        let bad = envFile("bad.env", "A=1\nB=\"unclosed\n")
        let result = expect(206, ["exec", "--env-file", bad, "--", "true"])
        XCTAssertTrue(result.err.contains("\(bad) line 2: the double-quoted value of B is not closed"), result.err)
        let fifo = sandbox.root + "/fifo.env"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let waited = expect(206, ["exec", "--env-file", fifo, "--", "true"])
        XCTAssertTrue(waited.err.contains("not a regular file"), waited.err)
        XCTAssertLessThan(waited.duration, 10, "the run is killed at 20 s")
        expect(220, ["exec", "--env-file", sandbox.root + "/absent.env", "--", "true"])
        let big = envFile("big.env", "A=" + String(repeating: "x", count: 1 << 20) + "\n")
        expect(42, ["exec", "--env-file", big, "--", "true"])
    }
}
