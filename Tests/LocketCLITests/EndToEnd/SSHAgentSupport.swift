import Foundation
import LocketTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// Support for the ssh-agent end-to-end tests: the agent is `locket ssh-agent`
// run by the test host (Tests/AgentTestHost) over keys that ssh-keygen makes
// here, since the keychain holds no keys yet (issue 13); the clients are
// OpenSSH's own (ssh-add, ssh, ssh-keygen -Y) and git, and an sshd the test
// starts on loopback.

/// The program that runs `locket ssh-agent` over a directory of keys, built next to the test bundle.
enum AgentTestHost {
    static let path: String? = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let bytes = buffer[0..<n].map { UInt8(bitPattern: $0) }
        let exe = String(decoding: bytes, as: UTF8.self)
        let candidate = String(exe[..<exe.lastIndex(of: "/")!]) + "/LocketAgentTestHost"
        return access(candidate, X_OK) == 0 ? candidate : nil
    }()
}

/// Key pairs of every type an agent serves, made by ssh-keygen: the private
/// keys in `keys/NAME.key` (read by the test host on every request; OpenSSH's
/// format, the RSA key PKCS#8), the
/// public keys apart in `pubs/NAME.pub`, so that no client can find a
/// private key next to the public one and sign without the agent.
final class AgentKeys {
    /// Names and ssh-keygen arguments. RSA at 2,048 bits: a type the agent
    /// serves, not a size (ssh-keygen's default 3,072 was a prime search of
    /// ~1 CPU-s a run; issue 38).
    static let types: [(name: String, arguments: [String])] = [
        ("ed25519", ["-t", "ed25519"]), ("ecdsa256", ["-t", "ecdsa", "-b", "256"]), ("ecdsa384", ["-t", "ecdsa", "-b", "384"]),
        ("ecdsa521", ["-t", "ecdsa", "-b", "521"]), ("rsa", ["-t", "rsa", "-b", "2048"]),
    ]

    let root: String
    var keys: String { root + "/keys" }
    var names: [String] { Self.types.map(\.name) }

    init(sshKeygen: String) throws {
        var template = Array("/tmp/locket-agent-keys.XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { throw POSIXError(.EIO) }
        root = String(cString: made)
        for dir in ["keys", "pubs"] { mkdir(root + "/" + dir, 0o700) }
        // The run's keys (`TestKeys`: the RSA one is a prime search), this class's copies.
        for (name, arguments) in Self.types {
            do {
                try TestKeys.sshKeygen(arguments, comment: "made-by-ssh-keygen", to: "\(keys)/\(name).key")
            } catch {
                throw XCTSkip("ssh-keygen could not make a \(name) key: \(error)")
            }
            rename("\(keys)/\(name).key.pub", publicKeyPath(name))
        }
        // The RSA key as PKCS#8 PEM (rewritten by ssh-keygen itself): the
        // OpenSSH format's import checks the pair, which OpenSSL 3 does by
        // testing p and q for primality, ~0.1 CPU-s at 2,048 bits in every
        // agent the tests start (about 20 a class); what the host parses is
        // not what these tests are about (KeysImportTests are).
        let pkcs8 = Spawn.run(sshKeygen, ["-q", "-p", "-m", "PKCS8", "-P", "", "-N", "", "-f", "\(keys)/rsa.key"],
                              environment: ["PATH": "/usr/bin:/bin"], input: .devNull, timeout: 120)
        guard pkcs8.status == 0 else { throw XCTSkip("ssh-keygen could not rewrite the RSA key as PKCS#8: \(pkcs8.err)") }
    }

    func publicKeyPath(_ name: String) -> String { "\(root)/pubs/\(name).pub" }

    /// `TYPE BASE64` of a public key (without ssh-keygen's comment).
    func publicKey(_ name: String) throws -> String {
        let line = try String(contentsOfFile: publicKeyPath(name), encoding: .utf8)
        return line.split(separator: " ").prefix(2).joined(separator: " ")
    }

    /// Whether the test host refuses signatures (`locked`) or listings (`hidden`), as a locked keychain would.
    func set(_ flag: String, _ on: Bool) {
        let path = keys + "/" + flag
        if on { close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)) } else { unlink(path) }
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// One `locket ssh-agent -D` over `keys`, its socket, and what it wrote on stderr.
final class RunningAgent {
    let process: BackgroundProcess
    let socket: String

    /// Starts the test host's agent over `keys` in the foreground.
    convenience init(keys: AgentKeys, arguments: [String] = [], environment: [String: String]) throws {
        let host = try XCTUnwrap(AgentTestHost.path, "LocketAgentTestHost was not built next to the tests")
        try self.init(program: host, [keys.keys, "-D"] + arguments, environment: environment)
    }

    /// Starts `program ARGUMENTS` (an agent in the foreground: the test host,
    /// or `locket ssh-agent -D`) and waits for the variables it prints once it listens.
    init(program: String, _ arguments: [String], environment: [String: String]) throws {
        let process = try BackgroundProcess(program, arguments, environment: environment)
        guard process.waitUntil(timeout: 20, { process.out.contains("echo Agent pid") || process.hasExited }),
              let line = process.out.split(separator: "\n").first(where: { $0.hasPrefix("SSH_AUTH_SOCK=") }) else {
            process.terminate()
            throw XCTSkip("the agent did not start: \(process.summary)")
        }
        self.process = process
        socket = String(line.dropFirst("SSH_AUTH_SOCK=".count).prefix { $0 != ";" })
    }

    /// The agent's stderr lines so far.
    var errLines: [String] {
        process.pump(0.05)
        return process.err.split(separator: "\n").map(String.init)
    }

    /// Waits briefly for `count` stderr lines (refusals are written as they happen).
    func errLines(atLeast count: Int) -> [String] {
        _ = process.waitUntil(timeout: 5) { self.process.err.split(separator: "\n").count >= count }
        return errLines
    }

    /// SIGTERM first, so the agent removes its socket and directory (in
    /// /dev/shm when XDG_RUNTIME_DIR is unset or not private); SIGKILL if it does not stop.
    func stop() {
        if !process.hasExited {
            kill(process.pid, SIGTERM)
            _ = process.wait(timeout: 10)
        }
        process.terminate()
    }
}

/// An sshd on a free loopback port with its own host key, configuration and
/// authorized_keys in a private directory, logging in the user running the
/// tests. sshd runs unprivileged as that user when the tests are not root.
final class LoopbackSSHD {
    /// The key exchange the tests' ssh asks for: what they show is the
    /// agent's signature in user authentication, and OpenSSH 9's default
    /// (sntrup761x25519) costs the client ~0.15 CPU-s a login (issue 38).
    static let keyExchange = "curve25519-sha256"

    let root: String
    let port: Int
    let user: String
    private let process: BackgroundProcess

    init(authorizedKeys: [String], sshKeygen: String) throws {
        let sshd = "/usr/sbin/sshd"
        guard access(sshd, X_OK) == 0 else { throw XCTSkip("\(sshd) is missing (openssh-server): make test-deps installs it") }
        guard let entry = getpwuid(geteuid()) else { throw XCTSkip("uid \(geteuid()) has no passwd entry for sshd to log in") }
        user = String(cString: entry.pointee.pw_name)
        let shell = String(cString: entry.pointee.pw_shell)
        guard access(shell, X_OK) == 0, !shell.hasSuffix("nologin"), !shell.hasSuffix("false") else {
            throw XCTSkip("\(user)'s shell \(shell) can't run a command over ssh")
        }
        var template = Array("/tmp/locket-sshd.XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { throw POSIXError(.EIO) }
        root = String(cString: made)
        let hostKey = Spawn.run(sshKeygen, ["-q", "-t", "ed25519", "-N", "", "-f", root + "/host_key"], environment: ["PATH": "/usr/bin:/bin"],
                                input: .devNull, timeout: 60)
        guard hostKey.status == 0 else { throw XCTSkip("ssh-keygen could not make a host key: \(hostKey.err)") }
        try (authorizedKeys.joined(separator: "\n") + "\n").write(toFile: root + "/authorized_keys", atomically: false, encoding: .utf8)
        port = try Loopback.freePort()
        // Every login the tests make is by public key through the agent; nothing else is offered.
        let config = """
        Port \(port)
        ListenAddress 127.0.0.1
        HostKey \(root)/host_key
        AuthorizedKeysFile \(root)/authorized_keys
        PidFile none
        StrictModes no
        UsePAM no
        PubkeyAuthentication yes
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        PermitRootLogin prohibit-password
        LogLevel VERBOSE

        """
        try config.write(toFile: root + "/sshd_config", atomically: false, encoding: .utf8)
        // Run as root, sshd wants its privilege-separation directory (the package's service would make it).
        if geteuid() == 0 { mkdir("/run/sshd", 0o755) }
        let process = try BackgroundProcess(sshd, ["-D", "-e", "-f", root + "/sshd_config"], environment: ["PATH": "/usr/sbin:/usr/bin:/bin"])
        self.process = process
        guard process.waitUntil(timeout: 20, { process.err.contains("Server listening") || process.hasExited }), !process.hasExited else {
            let summary = process.summary
            process.terminate()
            try? FileManager.default.removeItem(atPath: root)
            throw XCTSkip("sshd did not start: \(summary)")
        }
    }

    /// sshd's log so far.
    var log: String {
        process.pump(0.05)
        return process.err
    }

    func stop() {
        process.terminate()
        try? FileManager.default.removeItem(atPath: root)
    }

}
