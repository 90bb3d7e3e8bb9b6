import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How the tests run the system git: the credential helper first in PATH,
/// and no system or user configuration, no terminal prompt.
public enum GitClient {
    /// The environment git runs in, with `helpers` (a `HelperLinks` directory) first in PATH; `extra` added.
    public static func environment(helpers: String, _ extra: [String: String] = [:]) -> [String: String] {
        var environment = ["PATH": helpers + ":/usr/local/bin:/usr/bin:/bin", "GIT_TERMINAL_PROMPT": "0",
                           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"]
        for (name, value) in extra { environment[name] = value }
        return environment
    }

    /// The git commands that make `repository` and commit to it signed with
    /// the SSH key `publicKey` (`TYPE BASE64`, its private half reached through
    /// an agent), verifiable against `allowedSigners`.
    public static func signedCommitSteps(_ repository: String, publicKey: String, allowedSigners: String, message: String) -> [[String]] {
        [
            ["init", "-q", repository],
            ["-C", repository, "config", "user.name", "Signer"],
            ["-C", repository, "config", "user.email", "signer@example"],
            ["-C", repository, "config", "gpg.format", "ssh"],
            ["-C", repository, "config", "user.signingkey", "key::" + publicKey],
            ["-C", repository, "config", "gpg.ssh.allowedSignersFile", allowedSigners],
            ["-C", repository, "commit", "-q", "-S", "--allow-empty", "-m", message],
        ]
    }
}

/// A bare repository with one commit served over git's dumb HTTP protocol by
/// a Python server on 127.0.0.1 that demands HTTP Basic auth for `user` and
/// `password`, logging each request (and whether it carried credentials)
/// to `log`: the server of the git clone test.
public final class DumbHTTPGitServer {
    public let port: Int
    public let log: String
    public let process: BackgroundProcess
    /// The clone URL.
    public var url: String { "http://127.0.0.1:\(port)/repo.git" }

    /// Builds the repository under `root` with `git` (run in `environment`)
    /// and starts the server with `python`; throws when a step fails or the
    /// server does not start within 10 s.
    public init(git: String, python: String, root: String, user: String, password: String, environment: [String: String]) throws {
        func run(_ arguments: [String]) throws {
            let result = Spawn.run(git, arguments, environment: environment, input: .devNull, timeout: 10)
            guard result.status == 0 else { throw UnexpectedOutput("git \(arguments.joined(separator: " ")): \(result.summary)") }
        }
        try run(["init", "-q", "-b", "main", root + "/work"])
        try Data("hello from locket\n".utf8).write(to: URL(fileURLWithPath: root + "/work/README"))
        try run(["-C", root + "/work", "add", "README"])
        try run(["-C", root + "/work", "-c", "user.name=Locket Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "first"])
        guard mkdir(root + "/srv", 0o755) == 0 else { throw UnexpectedOutput("cannot create \(root)/srv") }
        try run(["init", "-q", "--bare", "-b", "main", root + "/srv/repo.git"])
        try run(["-C", root + "/work", "push", "-q", root + "/srv/repo.git", "main"])
        try run(["-C", root + "/srv/repo.git", "update-server-info"])
        log = root + "/server.log"
        try Data(Self.script.utf8).write(to: URL(fileURLWithPath: root + "/server.py"))
        // The server picks its port and prints it.
        process = try BackgroundProcess(python, [root + "/server.py", root + "/srv", user, password, log],
                                        environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": root])
        let process = process
        guard process.waitUntil(timeout: 10, { process.out.hasSuffix("\n") || process.hasExited }),
              let chosen = Int(process.out.trimmingCharacters(in: .whitespacesAndNewlines)), chosen > 0 else {
            process.terminate()
            throw UnexpectedOutput("the HTTP server did not start within 10 s: \(process.summary)")
        }
        port = chosen
    }

    deinit { stop() }

    public func stop() { process.terminate() }

    static let script = #"""
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
}
