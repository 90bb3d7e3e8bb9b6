import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 5, item 3: the real client. The system git clones over HTTP (dumb
/// protocol) from a server on 127.0.0.1 that demands HTTP Basic auth, with
/// `credential.helper=locket`: credentials stored by `git credential approve`
/// let the clone in; a wrong stored password makes the clone fail and git's
/// `reject` erases it.
final class EndToEndGitCloneTests: EndToEndCase {
    static let user = "alice"
    static let httpPassword = "right-pass"

    var server: DumbHTTPGitServer?
    var gitPath: String!
    var port: Int { server?.port ?? 0 }

    override func setUpWithError() throws {
        try super.setUpWithError()
        gitPath = try SystemTool.require("git", for: "the git clone test")
        let python = try SystemTool.require("python3", for: "the git clone test's HTTP server")
        initKeychain()
        // A bare repository with one pushed commit, served over dumb HTTP on a port the server picks.
        var environment = sandbox.environment
        for (name, value) in try gitEnvironment() { environment[name] = value }
        server = try DumbHTTPGitServer(git: gitPath, python: python, root: sandbox.root, user: Self.user, password: Self.httpPassword,
                                       environment: environment)
    }

    override func tearDown() {
        server?.stop()
        server = nil
        super.tearDown()
    }

    /// A directory with `git-credential-locket` (a symlink to the binary) for PATH.
    func helperDirectory() throws -> String {
        try HelperLinks.directory(in: sandbox.root, linking: "git-credential-locket", to: binary)
    }

    /// The environment git runs in: the helper first in PATH, no prompts, no system or user config.
    func gitEnvironment() throws -> [String: String] {
        GitClient.environment(helpers: try helperDirectory(), ["GIT_ASKPASS": "", "SSH_ASKPASS": "",
                                                               "GIT_HTTP_LOW_SPEED_LIMIT": "1", "GIT_HTTP_LOW_SPEED_TIME": "5"])
    }

    @discardableResult
    func runGit(_ arguments: [String], input: Input = .devNull, check: Bool = true,
                file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let result = runTool(gitPath, arguments, input: input, environment: try gitEnvironment(), timeout: 10, file: file, line: line)
        if check { XCTAssertEqual(result.status, 0, "git \(arguments.joined(separator: " ")): \(result.summary)", file: file, line: line) }
        return result
    }

    var url: String { server?.url ?? "" }

    /// The internet passwords stored for the server.
    func storedItems(file: StaticString = #filePath, line: UInt = #line) -> [[String: Any]] {
        let result = locket(["--json", "find", "--class", "inet", "--all", "-g"], file: file, line: line)
        if result.status == 44 { return [] }
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        return (try? result.jsonArray(file: file, line: line)) ?? []
    }

    func clone(into name: String) throws -> RunResult {
        try runGit(["-c", "credential.helper=locket", "clone", "-q", url, sandbox.root + "/" + name], check: false)
    }

    func testCloneWithStoredCredentialsThenWrongPasswordIsRejected() throws {
        // Without credentials: git may not prompt, so the clone fails and nothing is stored.
        let anonymous = try clone(into: "anonymous")
        XCTAssertNotEqual(anonymous.status, 0, anonymous.summary)
        XCTAssertEqual(storedItems().count, 0)

        // Credentials stored through git itself.
        try runGit(["-c", "credential.helper=locket", "credential", "approve"],
                   input: .text("protocol=http\nhost=127.0.0.1:\(port)\nusername=\(Self.user)\npassword=\(Self.httpPassword)\n\n"))
        let stored = storedItems()
        XCTAssertEqual(stored.count, 1)
        XCTAssertEqual(stored.first?["server"] as? String, "127.0.0.1")
        XCTAssertEqual(stored.first?["port"] as? Int, port)
        XCTAssertEqual(stored.first?["protocol"] as? String, "http")

        let good = try clone(into: "good")
        XCTAssertEqual(good.status, 0, good.summary)
        XCTAssertEqual(readText(sandbox.root + "/good/README"), "hello from locket\n")
        XCTAssertFalse(good.err.contains("locket"), "the helper is silent on success: \(good.err)")
        let log = readText(server?.log ?? "") ?? ""
        XCTAssertTrue(log.contains("False \"GET /repo.git/info/refs?service=git-upload-pack HTTP/1.1\" 401"),
                      "the server asked for credentials first:\n\(log)")
        XCTAssertTrue(log.contains("True \"GET /repo.git/info/refs?service=git-upload-pack HTTP/1.1\" 200"),
                      "then let git in with them:\n\(log)")
        // git approved the working credentials again: still one item, the same password.
        XCTAssertEqual(storedItems().map { $0["data"] as? String }, [Self.httpPassword])

        // A wrong password, stored by the helper directly (same host and user: it replaces the good one).
        let wrong = locket(["credential", "store"],
                           input: .text("protocol=http\nhost=127.0.0.1:\(port)\nusername=\(Self.user)\npassword=wrong-pass\n\n"))
        XCTAssertEqual(wrong.status, 0, wrong.summary)
        XCTAssertEqual(storedItems().map { $0["data"] as? String }, ["wrong-pass"])

        let bad = try clone(into: "bad")
        XCTAssertNotEqual(bad.status, 0, "the clone must fail with a wrong password: \(bad.summary)")
        XCTAssertTrue(bad.err.contains("Authentication failed"), bad.err)
        XCTAssertFalse(fileExists(sandbox.root + "/bad/README"))
        // git's reject erased the item.
        XCTAssertEqual(storedItems().count, 0, "git's reject did not erase the wrong password")
        let find = locket(["find", "--class", "inet", "-s", "127.0.0.1"])
        XCTAssertEqual(find.status, 44, find.summary)

        // Approve the right one again: the clone works again.
        try runGit(["-c", "credential.helper=locket", "credential", "approve"],
                   input: .text("protocol=http\nhost=127.0.0.1:\(port)\nusername=\(Self.user)\npassword=\(Self.httpPassword)\n\n"))
        let again = try clone(into: "again")
        XCTAssertEqual(again.status, 0, again.summary)
    }
}
