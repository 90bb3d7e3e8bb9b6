import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `locket ssh-agent` as a process: `-- COMMAND` for CI, the `-s`/`-c`
/// lines and detaching for `eval`, `-D`, `-a`, where the socket goes and
/// with which modes, signals that stop it cleanly, and other users kept out.
final class SSHAgentProcessEndToEndTests: XCTestCase {
    nonisolated(unsafe) private static var sharedKeys: AgentKeys?
    private var keys: AgentKeys!
    private var scratch: String!
    private var host: String!
    /// Agents that detached: stopped after each test whatever happened.
    private var daemons: [pid_t] = []

    override class func tearDown() {
        sharedKeys?.remove()
        sharedKeys = nil
        LocalAccounts.removeAll()
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        let sshKeygen = try SystemTool.require("ssh-keygen", for: "making the keys the agent serves")
        host = try XCTUnwrap(AgentTestHost.path, "LocketAgentTestHost was not built next to the tests")
        if Self.sharedKeys == nil { Self.sharedKeys = try AgentKeys(sshKeygen: sshKeygen) }
        keys = Self.sharedKeys
        var template = Array("/tmp/locket-agent-proc.XXXXXX".utf8CString)
        scratch = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
        mkdir(scratch + "/run", 0o700)
    }

    override func tearDown() {
        for pid in daemons { kill(pid, SIGKILL) }
        daemons = []
        if let scratch { try? FileManager.default.removeItem(atPath: scratch) }
        super.tearDown()
    }

    private var environment: [String: String] {
        ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "XDG_RUNTIME_DIR": scratch + "/run", "SHELL": "/bin/bash"]
    }

    private func agent(_ arguments: [String], environment extra: [String: String] = [:], input: Input = .devNull) -> RunResult {
        var env = environment
        for (k, v) in extra { env[k] = v }
        let result = Spawn.run(host, [keys.keys] + arguments, environment: env, input: input, timeout: 60)
        XCTAssertFalse(result.timedOut, result.summary)
        return result
    }

    private func sshAdd(_ socket: String) throws -> RunResult {
        Spawn.run(try SystemTool.require("ssh-add", for: "talking to the agent"), ["-L"],
                  environment: ["PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": socket], input: .devNull, timeout: 30)
    }

    /// What agents left in the runtime directory: its entries, the kept
    /// parent `locket-agent-UID` counted by what is in it.
    private func leftInRuntime() throws -> [String] {
        let run = scratch + "/run", parent = "locket-agent-\(geteuid())"
        return try FileManager.default.contentsOfDirectory(atPath: run).flatMap { name in
            name == parent ? try FileManager.default.contentsOfDirectory(atPath: run + "/" + parent) : [name]
        }
    }

    private func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Waits until `pid` is gone (or a zombie no one reaps).
    private func waitGone(_ pid: pid_t, seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "Z" { return true }
            usleep(20_000)
        }
        return false
    }

    // MARK: - COMMAND

    /// COMMAND sees SSH_AUTH_SOCK (and no SSH_AGENT_PID), reaches the agent,
    /// and its exit status is locket's; the socket and directory are gone after.
    func testCommandRunsWithTheAgentAndGivesItsStatus() throws {
        let script = """
        ssh-add -L | wc -l
        echo "sock=$SSH_AUTH_SOCK"
        echo "pid=${SSH_AGENT_PID-unset}"
        exit 7
        """
        let result = agent(["--", "sh", "-c", script], environment: ["SSH_AGENT_PID": "1", "SSH_AUTH_SOCK": "/elsewhere"])
        XCTAssertEqual(result.status, 7, result.summary)
        let lines = result.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first?.trimmingCharacters(in: .whitespaces), String(keys.names.count), result.summary)
        let socket = String(try XCTUnwrap(lines.first { $0.hasPrefix("sock=") }).dropFirst(5))
        XCTAssertTrue(socket.hasPrefix(scratch + "/run/locket-agent-\(geteuid())/locket-agent."), socket)
        XCTAssertTrue(lines.contains("pid=unset"), result.summary)
        XCTAssertFalse(exists(socket), "the socket outlived the command")
        XCTAssertFalse(exists(String(socket[..<socket.lastIndex(of: "/")!])), "the directory outlived the command")
        XCTAssertEqual(result.err, "")
    }

    /// A command killed by a signal: 128+N, as a shell reports it.
    func testACommandKilledBySignalGives128PlusN() {
        let result = agent(["--", "sh", "-c", "kill -TERM $$"])
        XCTAssertEqual(result.status, 128 + SIGTERM, result.summary)
    }

    func testACommandThatCannotRunGives127AndLeavesNothing() throws {
        let result = agent(["--", "/nonexistent/program"])
        XCTAssertEqual(result.status, 127, result.summary)
        XCTAssertTrue(result.err.contains("cannot run /nonexistent/program"), result.summary)
        XCTAssertEqual(try leftInRuntime(), [])
    }

    /// SIGTERM to locket goes on to COMMAND; COMMAND's exit ends the agent.
    func testSignalsGoOnToTheCommand() throws {
        var env = environment
        env["PATH"] = "/usr/bin:/bin"
        let process = try BackgroundProcess(host, [keys.keys, "--", "sh", "-c", "trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.05; done"],
                                            environment: env)
        defer { process.terminate() }
        XCTAssertTrue(process.waitUntil(timeout: 20) { process.out.contains("ready") }, process.summary)
        kill(process.pid, SIGTERM)
        XCTAssertTrue(process.wait(timeout: 20), process.summary)
        XCTAssertEqual(process.status, 3, process.summary)
        XCTAssertTrue(process.out.contains("got-term"), process.summary)
        XCTAssertEqual(try leftInRuntime(), [])
    }

    // MARK: - -s, -c, detaching

    /// `eval "$(locket ssh-agent -s)"`: the lines come back at once (the agent
    /// detached), ssh-add reaches the socket they name, and SIGTERM to
    /// SSH_AGENT_PID removes the socket and its directory.
    func testShLinesAndDetachingAndSIGTERM() throws {
        let result = agent(["-s"])
        XCTAssertEqual(result.status, 0, result.summary)
        let lines = result.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, result.out)
        let socket = try XCTUnwrap(lines[0].firstMatch(of: /^SSH_AUTH_SOCK=([^;]+); export SSH_AUTH_SOCK;$/)?.1).description
        let pidText = try XCTUnwrap(lines[1].firstMatch(of: /^SSH_AGENT_PID=([0-9]+); export SSH_AGENT_PID;$/)?.1).description
        let pid = try XCTUnwrap(pid_t(pidText))
        daemons.append(pid)
        XCTAssertEqual(lines[2], "echo Agent pid \(pid);")
        XCTAssertLessThan(result.duration, 10)
        XCTAssertEqual(try sshAdd(socket).status, 0)
        // The same lines through a real shell's eval.
        let eval = Spawn.run("/bin/sh", ["-c", "eval \"$(printf '%s\\n' \"$LINES\")\" >/dev/null; echo \"$SSH_AUTH_SOCK $SSH_AGENT_PID\""],
                             environment: ["PATH": "/usr/bin:/bin", "LINES": result.out], input: .devNull, timeout: 10)
        XCTAssertEqual(eval.out, "\(socket) \(pid)\n")

        kill(pid, SIGTERM)
        XCTAssertTrue(waitGone(pid), "the agent did not stop on SIGTERM")
        XCTAssertFalse(exists(socket), "SIGTERM left the socket")
        XCTAssertFalse(exists(String(socket[..<socket.lastIndex(of: "/")!])), "SIGTERM left the directory")
    }

    func testCshLines() throws {
        for (arguments, shell) in [(["-c"], "/bin/bash"), ([], "/bin/tcsh")] {
            let result = agent(arguments, environment: ["SHELL": shell])
            XCTAssertEqual(result.status, 0, result.summary)
            let lines = result.out.split(separator: "\n").map(String.init)
            let pid = try XCTUnwrap(lines.count == 3 ? lines[1].firstMatch(of: /^setenv SSH_AGENT_PID ([0-9]+);$/)?.1 : nil, result.out)
            daemons.append(try XCTUnwrap(pid_t(String(pid))))
            XCTAssertNotNil(lines[0].firstMatch(of: /^setenv SSH_AUTH_SOCK \/[^ ;]+;$/), result.out)
            kill(pid_t(String(pid))!, SIGTERM)
        }
    }

    /// `-D` in the foreground: SIGINT and SIGHUP stop it as SIGTERM does, with status 0.
    func testForegroundStopsCleanlyOnEachSignal() throws {
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            let running = try RunningAgent(keys: keys, environment: environment)
            defer { running.stop() }
            XCTAssertEqual(try sshAdd(running.socket).status, 0)
            kill(running.process.pid, sig)
            XCTAssertTrue(running.process.wait(timeout: 20), running.process.summary)
            XCTAssertEqual(running.process.status, 0, "signal \(sig): \(running.process.summary)")
            XCTAssertFalse(exists(running.socket), "signal \(sig) left the socket")
            XCTAssertEqual(running.process.err, "")
        }
    }

    /// SIGTERM at any moment of start-up leaves no socket and no directory:
    /// signals are held from before the socket exists.
    func testASignalDuringStartUpLeavesNothing() throws {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<20 {
            let process = try BackgroundProcess(host, [keys.keys, "-D"], environment: environment)
            defer { process.terminate() }
            usleep(UInt32.random(in: 0...30_000, using: &rng))
            kill(process.pid, SIGTERM)
            XCTAssertTrue(process.wait(timeout: 20), process.summary)
            XCTAssertEqual(try leftInRuntime(), [], "round \(round): \(process.summary)")
        }
    }

    // MARK: - the socket

    func testTheSocketIsPrivateInXDGRuntimeDirOrDevShm() throws {
        for runtime in [scratch + "/run", nil] {
            var env = environment
            env["XDG_RUNTIME_DIR"] = runtime
            let running = try RunningAgent(keys: keys, environment: env)
            defer { running.stop() }
            let directory = String(running.socket[..<running.socket.lastIndex(of: "/")!])
            XCTAssertTrue(directory.hasPrefix((runtime ?? "/dev/shm") + "/locket-agent-\(geteuid())/locket-agent."), directory)
            var st = stat()
            XCTAssertEqual(lstat(directory, &st), 0)
            XCTAssertEqual(st.st_mode & 0o7777, 0o700)
            XCTAssertEqual(st.st_uid, geteuid())
            XCTAssertEqual(lstat(running.socket, &st), 0)
            XCTAssertEqual(st.st_mode & S_IFMT, S_IFSOCK)
            XCTAssertEqual(st.st_mode & 0o7777, 0o600)
        }
    }

    /// Issue 31, item 3: an `$XDG_RUNTIME_DIR` that someone else could write
    /// or swap (mode 777, a symbolic link, inside a directory others can
    /// write, another user's) is not used: the socket goes to /dev/shm, and
    /// nothing is made in the given directory.
    func testAnXDGRuntimeDirThatIsNotTheUsersAloneIsNotUsed() throws {
        let open = scratch + "/open", opened = scratch + "/open/run", link = scratch + "/link", theirs = scratch + "/theirs"
        XCTAssertEqual(mkdir(open, 0o700), 0)
        XCTAssertEqual(chmod(open, 0o777), 0)
        XCTAssertEqual(mkdir(opened, 0o700), 0)
        XCTAssertEqual(symlink(scratch + "/run", link), 0)
        var cases = [("mode 777", scratch + "/run", { chmod(self.scratch + "/run", 0o777) }), ("inside a directory anyone may write", opened, { 0 }),
                     ("a symbolic link", link, { 0 }), ("a symbolic link with a slash", link + "/", { 0 })]
        if geteuid() == 0 {
            XCTAssertEqual(mkdir(theirs, 0o700), 0)
            XCTAssertEqual(chown(theirs, 4242, 4242), 0)
            cases.append(("another user's", theirs, { 0 }))
        }
        for (what, runtime, prepare) in cases {
            XCTAssertEqual(prepare(), 0)
            let running = try RunningAgent(keys: keys, environment: environment.merging(["XDG_RUNTIME_DIR": runtime]) { $1 })
            defer { running.stop() }
            XCTAssertTrue(running.socket.hasPrefix("/dev/shm/locket-agent-\(geteuid())/locket-agent."), "\(what): \(running.socket)")
            XCTAssertEqual(try sshAdd(running.socket).status, 0, what)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: runtime), [], "\(what): something was made in it")
            chmod(scratch + "/run", 0o700)
        }
    }

    /// `-a SOCKET`: the socket is there, 0600; an existing path is refused and left alone.
    func testAGivenSocketPath() throws {
        let path = scratch + "/agent.sock"
        let running = try RunningAgent(keys: keys, arguments: ["-a", path], environment: environment)
        XCTAssertEqual(running.socket, path)
        var st = stat()
        XCTAssertEqual(lstat(path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o7777, 0o600)
        let taken = agent(["-D", "-a", path])
        XCTAssertEqual(taken.status, Int32(UInt8(truncatingIfNeeded: -36)), taken.summary)
        XCTAssertTrue(taken.err.hasPrefix("locket: error: cannot bind the agent socket \(path): Address already in use"), taken.summary)
        XCTAssertEqual(try sshAdd(path).status, 0, "the first agent lost its socket")
        kill(running.process.pid, SIGTERM)
        XCTAssertTrue(running.process.wait(timeout: 20))
        XCTAssertFalse(exists(path))
        // A file planted at the path is refused, not replaced.
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("planted".utf8)))
        XCTAssertEqual(agent(["-D", "-a", path]).status, 220)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "planted")
    }

    func testUsageErrors() {
        for arguments in [["-s", "-c"], ["-s", "--", "true"], ["-D", "--", "true"], ["-c", "--", "true"], ["--bogus"], ["-a"]] {
            let result = agent(arguments)
            XCTAssertEqual(result.status, 2, "\(arguments): \(result.summary)")
            XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
            XCTAssertTrue(result.err.contains("usage: locket ssh-agent [-a SOCKET] [-s | -c] [-D] [-- COMMAND [ARG]...]"), result.summary)
            XCTAssertEqual(try leftInRuntime(), [], "\(arguments) left a socket")
        }
    }

    /// A missing or malformed entitlements file (`-e`) stops the agent before it listens.
    func testABadEntitlementsFileStopsTheAgentBeforeItListens() throws {
        let malformed = scratch + "/bad.entitlements"
        try "<plist><dict><key>keychain-access-groups</key>".write(toFile: malformed, atomically: false, encoding: .utf8)
        for path in [scratch + "/missing.entitlements", malformed] {
            let result = agent(["-e", path, "--", "true"])
            XCTAssertNotEqual(result.status, 0, result.summary)
            XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
            XCTAssertEqual(try leftInRuntime(), [], "a socket was made")
        }
    }

    // MARK: - other users

    /// Another uid is kept out twice: by the 0700 directory, and (were the
    /// modes loosened) by the peer check, which closes its connection before
    /// reading a byte and says so on stderr.
    func testAnotherUserCannotConnect() throws {
        let other = try LocalAccounts.account("agentpeer")
        let sshAdd = try SystemTool.require("ssh-add", for: "connecting as another user")
        let running = try RunningAgent(keys: keys, environment: environment)
        defer { running.stop() }
        // The scratch directory must be traversable for the second attempt to reach the socket at all.
        chmod(scratch, 0o755)
        chmod(scratch + "/run", 0o755)
        let env = ["PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": running.socket]
        let blocked = LocalAccounts.run(as: other, sshAdd, ["-L"], environment: env)
        XCTAssertNotEqual(blocked.status, 0, blocked.summary)
        XCTAssertTrue(blocked.err.contains("Permission denied"), blocked.summary)
        XCTAssertEqual(running.errLines, [], "the agent heard from a client it should never have seen")

        // The socket's directory and its parent, locket-agent-UID.
        let directory = String(running.socket[..<running.socket.lastIndex(of: "/")!])
        chmod(String(directory[..<directory.lastIndex(of: "/")!]), 0o755)
        chmod(directory, 0o755)
        chmod(running.socket, 0o666)
        let refused = LocalAccounts.run(as: other, sshAdd, ["-L"], environment: env)
        XCTAssertNotEqual(refused.status, 0, refused.summary)
        XCTAssertFalse(refused.out.contains("ssh-"), "another user got the identities: \(refused.out)")
        XCTAssertEqual(running.errLines(atLeast: 1), ["locket ssh-agent: connection refused: uid \(other.uid) is not the agent's user"])
        // Its own user is still served.
        XCTAssertEqual(try self.sshAdd(running.socket).status, 0)
    }

    /// Root is another user too: an agent run by someone else refuses root's connection.
    func testRootIsRefusedByAnotherUsersAgent() throws {
        let other = try LocalAccounts.account("agentowner")
        let sshAdd = try SystemTool.require("ssh-add", for: "connecting as root")
        // The other user's copy of the keys, and a directory of theirs for the socket.
        chmod(scratch, 0o755)
        let home = scratch + "/owner"
        mkdir(home, 0o700)
        try FileManager.default.copyItem(atPath: keys.keys, toPath: home + "/keys")
        for path in [home, home + "/keys"] + keys.names.map({ home + "/keys/\($0).key" }) { chown(path, other.uid, other.gid) }
        let socket = home + "/agent.sock"
        let process = try BackgroundProcess("/usr/bin/setpriv", ["--reuid=\(other.uid)", "--regid=\(other.gid)", "--clear-groups", "--",
                                                                  host, home + "/keys", "-D", "-a", socket],
                                            environment: ["PATH": "/usr/bin:/bin", "HOME": home])
        defer { process.terminate() }
        XCTAssertTrue(process.waitUntil(timeout: 20) { process.out.contains("echo Agent pid") || process.hasExited }, process.summary)
        let asOwner = LocalAccounts.run(as: other, sshAdd, ["-L"], environment: ["PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": socket])
        XCTAssertEqual(asOwner.status, 0, asOwner.summary)
        let asRoot = Spawn.run(sshAdd, ["-L"], environment: ["PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": socket], input: .devNull, timeout: 30)
        XCTAssertNotEqual(asRoot.status, 0, asRoot.summary)
        XCTAssertFalse(asRoot.out.contains("ssh-"), "root got the identities: \(asRoot.out)")
        XCTAssertTrue(process.waitUntil(timeout: 5) { process.err.contains("connection refused") }, process.summary)
        XCTAssertEqual(process.err, "locket ssh-agent: connection refused: uid 0 is not the agent's user\n")
    }
}
