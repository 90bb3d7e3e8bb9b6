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

    var server: BackgroundProcess?
    var gitPath: String!
    var port = 0

    static let serverScript = #"""
        import base64, functools, http.server, sys
        root, user, password, log = sys.argv[1:5]
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="locket-test"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                super().do_GET()

            def do_HEAD(self):
                self.do_GET()

            def log_message(self, format, *args):
                with open(log, "a") as f:
                    f.write("%s %s\n" % (self.headers.get("Authorization") is not None, format % args))

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                 functools.partial(Handler, directory=root))
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    override func setUpWithError() throws {
        try super.setUpWithError()
        gitPath = try SystemTool.require("git", for: "the git clone test")
        let python = try SystemTool.require("python3", for: "the git clone test's HTTP server")
        initKeychain()

        // A bare repository with one pushed commit, prepared for dumb HTTP.
        let root = sandbox.root
        try runGit(["init", "-q", "-b", "main", root + "/work"])
        writeFile(root + "/work/README", "hello from locket\n")
        try runGit(["-C", root + "/work", "add", "README"])
        try runGit(["-C", root + "/work", "-c", "user.name=Locket Test", "-c", "user.email=test@example.com",
                    "commit", "-q", "-m", "first"])
        XCTAssertEqual(mkdir(root + "/srv", 0o755), 0)
        try runGit(["init", "-q", "--bare", "-b", "main", root + "/srv/repo.git"])
        try runGit(["-C", root + "/work", "push", "-q", root + "/srv/repo.git", "main"])
        try runGit(["-C", root + "/srv/repo.git", "update-server-info"])

        // The server, on a port the kernel picks; it prints the port.
        writeFile(root + "/server.py", Self.serverScript)
        let process = try BackgroundProcess(python, [root + "/server.py", root + "/srv", Self.user, Self.httpPassword, root + "/server.log"],
                                            environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": root])
        server = process
        guard process.waitUntil(timeout: 10, { process.out.hasSuffix("\n") || process.hasExited }),
              let chosen = Int(process.out.trimmingCharacters(in: .whitespacesAndNewlines)), chosen > 0 else {
            XCTFail("the HTTP server did not start within 10 s: \(process.summary)")
            throw POSIXError(.ECONNREFUSED)
        }
        port = chosen
    }

    override func tearDown() {
        server?.terminate()
        server = nil
        super.tearDown()
    }

    /// A directory with `git-credential-locket` (a symlink to the binary) for PATH.
    func helperDirectory() throws -> String {
        let directory = sandbox.root + "/bin"
        if !fileExists(directory) {
            XCTAssertEqual(mkdir(directory, 0o755), 0)
            try FileManager.default.createSymbolicLink(atPath: directory + "/git-credential-locket", withDestinationPath: binary)
        }
        return directory
    }

    /// The environment git runs in: the helper first in PATH, no prompts, no system or user config.
    func gitEnvironment() throws -> [String: String] {
        ["PATH": try helperDirectory() + ":/usr/local/bin:/usr/bin:/bin",
         "GIT_TERMINAL_PROMPT": "0",
         "GIT_CONFIG_NOSYSTEM": "1",
         "GIT_CONFIG_GLOBAL": "/dev/null",
         "GIT_ASKPASS": "",
         "SSH_ASKPASS": "",
         "GIT_HTTP_LOW_SPEED_LIMIT": "1",
         "GIT_HTTP_LOW_SPEED_TIME": "5"]
    }

    @discardableResult
    func runGit(_ arguments: [String], input: Input = .devNull, check: Bool = true,
                file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let result = runTool(gitPath, arguments, input: input, environment: try gitEnvironment(), timeout: 10, file: file, line: line)
        if check { XCTAssertEqual(result.status, 0, "git \(arguments.joined(separator: " ")): \(result.summary)", file: file, line: line) }
        return result
    }

    var url: String { "http://127.0.0.1:\(port)/repo.git" }

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
        let log = readText(sandbox.root + "/server.log") ?? ""
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
