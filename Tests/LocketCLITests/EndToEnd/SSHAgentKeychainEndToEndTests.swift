import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `locket ssh-agent` over the keychain's own keys (SPEC §13, issue 14): keys
/// made non-extractable by `locket key generate`, served by the real binary
/// to OpenSSH's clients and git: `ssh-add -L` lists exactly the keys the
/// caller may see; `ssh` logs in to a loopback sshd with every key type (RSA
/// with rsa-sha2-256 and -512); `locket lock` refuses and `unlock` restores;
/// `ssh-keygen -Y`; `git commit -S`; `-e` limits the keys to an app's groups;
/// another uid can't connect.
final class SSHAgentKeychainEndToEndTests: EndToEndCase {
    /// Labels and `key generate --type`.
    static let types: [(label: String, type: String)] = [
        ("ed25519", "ed25519"), ("p256", "p256"), ("p384", "p384"), ("p521", "p521"), ("rsa", "rsa2048"),
    ]

    private var agent: RunningAgent!
    /// `TYPE BASE64` of each key by label, as `key generate --openssh` printed it.
    private var publicKeys: [String: String] = [:]

    /// The sandbox as setUp first made it (the keychain, its device secret
    /// and session, the keys and their public files) and the public keys:
    /// made once through the binary, copied into every later test's sandbox.
    /// Generating the RSA key's primes took ~0.3 CPU-s a test (issue 38).
    nonisolated(unsafe) private static var made: (root: String, publicKeys: [String: String])?

    override class func tearDown() {
        if let made { try? FileManager.default.removeItem(atPath: made.root) }
        made = nil
        LocalAccounts.removeAll()
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        _ = try SystemTool.require("ssh-add", for: "talking to the agent")
        if let made = Self.made {
            try copyTree(made.root, to: sandbox.root)
            publicKeys = made.publicKeys
        } else {
            initKeychain()
            for (label, type) in Self.types { try generate(type, label: label) }
            // Not an SSH key: never offered.
            ok("key", "generate", "--type", "x25519", "--label", "backup-recipient")
            var template = Array("/tmp/locket-agent-keychain.XXXXXX".utf8CString)
            let root = String(cString: try XCTUnwrap(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }))
            try copyTree(sandbox.root, to: root)
            Self.made = (root, publicKeys)
        }
        agent = try startAgent([])
        addTeardownBlock { [agent] in agent?.stop() }
    }

    @discardableResult
    private func generate(_ type: String, label: String, _ extra: String...) throws -> String {
        let made = ok(["key", "generate", "--type", type, "--label", label, "--non-extractable", "--openssh"] + extra)
        let fields = made.out.split(separator: " ")
        XCTAssertEqual(fields.last.map { String($0) }, label + "\n")
        publicKeys[label] = fields.prefix(2).joined(separator: " ")
        try (publicKeys[label]! + "\n").write(toFile: publicKeyPath(label), atomically: false, encoding: .utf8)
        return publicKeys[label]!
    }

    /// Everything in the directory `source` into the directory `target`, modes kept.
    private func copyTree(_ source: String, to target: String) throws {
        let copied = Spawn.run("/bin/cp", ["-a", source + "/.", target], environment: ["PATH": "/usr/bin:/bin"], input: .devNull, timeout: 60)
        guard copied.status == 0 else {
            XCTFail("cp could not copy the keychain's sandbox: \(copied.summary)")
            throw POSIXError(.EIO)
        }
    }

    /// Public keys only, apart from anything private: the clients can sign through the agent alone.
    private func publicKeyPath(_ label: String) -> String { sandbox.root + "/\(label).pub" }

    private func startAgent(_ globals: [String]) throws -> RunningAgent {
        do {
            return try RunningAgent(program: binary, globals + ["ssh-agent", "-D"], environment: sandbox.environment)
        } catch let skip as XCTSkip {
            // The test host may be missing; locket's own agent must start.
            XCTFail("locket ssh-agent did not start: \(skip)")
            throw skip
        }
    }

    private var clientEnvironment: [String: String] {
        var env = sandbox.environment
        env["SSH_AUTH_SOCK"] = agent.socket
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_CONFIG_GLOBAL"] = sandbox.root + "/gitconfig"
        return env
    }

    private func client(_ program: String, _ arguments: [String], input: Input = .devNull, socket: String? = nil) throws -> RunResult {
        let path = try SystemTool.require(program, for: "this test")
        var env = clientEnvironment
        if let socket { env["SSH_AUTH_SOCK"] = socket }
        let result = Spawn.run(path, arguments, environment: env, input: input, timeout: 60)
        XCTAssertFalse(result.timedOut, "\(program) timed out: \(result.summary)")
        return result
    }

    private func listed(_ socket: String? = nil) throws -> [String] {
        let result = try client("ssh-add", ["-L"], socket: socket)
        XCTAssertEqual(result.status, 0, result.summary)
        return result.out.split(separator: "\n").map(String.init)
    }

    func testSSHAddListsExactlyTheVisibleKeysAsTheyAreNow() throws {
        XCTAssertEqual(try listed(), Self.types.map { "\(publicKeys[$0.label]!) \($0.label)" })
        // Asked afresh per request: a key made while the agent runs is offered at once, one deleted is gone.
        let late = try generate("ed25519", label: "late")
        XCTAssertEqual(try listed().last, "\(late) late")
        ok("delete", "--class", "keys", "--label", "late")
        XCTAssertEqual(try listed().count, Self.types.count)
        XCTAssertEqual(agent.errLines, [])
    }

    /// A key with access control opens only with a proof the agent can't ask
    /// for: it is left out of the list, and the other keys are listed as usual.
    func testAKeyWithAccessControlIsNotOffered() throws {
        try generate("ed25519", label: "guarded", "--access-control", "when-unlocked:user-presence")
        XCTAssertEqual(try listed(), Self.types.map { "\(publicKeys[$0.label]!) \($0.label)" })
        XCTAssertEqual(agent.errLines, [])
    }

    func testSSHLogsInWithEveryKeyTypeThroughTheAgent() throws {
        let sshKeygen = try SystemTool.require("ssh-keygen", for: "the sshd host key")
        let sshd = try LoopbackSSHD(authorizedKeys: Self.types.map { publicKeys[$0.label]! }, sshKeygen: sshKeygen)
        defer { sshd.stop() }
        // RSA twice: with only one of rsa-sha2-256/512 allowed, the agent must sign with that one.
        let logins: [(label: String, options: [String])] = Self.types.map { ($0.label, []) } + [
            ("rsa", ["-o", "PubkeyAcceptedAlgorithms=rsa-sha2-256"]), ("rsa", ["-o", "PubkeyAcceptedAlgorithms=rsa-sha2-512"]),
        ]
        for (label, options) in logins {
            let result = try ssh(sshd, key: label, options, command: "echo logged-in-with-\(label)")
            XCTAssertEqual(result.status, 0, "\(label) \(options): \(result.summary)\nsshd: \(sshd.log.suffix(2000))")
            XCTAssertEqual(result.out, "logged-in-with-\(label)\n", label)
            let fingerprint = try client("ssh-keygen", ["-l", "-f", publicKeyPath(label)]).out.split(separator: " ")[1]
            XCTAssertTrue(sshd.log.contains(String(fingerprint)), "\(label): sshd did not log the key \(fingerprint)")
        }
        XCTAssertEqual(agent.errLines, [])
    }

    /// `locket lock` (the keys are when-unlocked): ssh and ssh-keygen fail and
    /// the agent says why on stderr; after `locket unlock` both work again,
    /// with the same agent.
    func testLockRefusesUntilUnlock() throws {
        let sshKeygen = try SystemTool.require("ssh-keygen", for: "the sshd host key")
        let sshd = try LoopbackSSHD(authorizedKeys: [publicKeys["ed25519"]!], sshKeygen: sshKeygen)
        defer { sshd.stop() }
        XCTAssertEqual(try ssh(sshd, key: "ed25519", command: "true").status, 0)

        ok("lock")
        let login = try ssh(sshd, key: "ed25519", command: "true")
        XCTAssertEqual(login.status, 255, login.summary)
        XCTAssertTrue(login.err.contains("Permission denied"), login.summary)
        let sign = try client("ssh-keygen", ["-Y", "sign", "-f", publicKeyPath("ed25519"), "-n", "file"], input: .text("x"))
        XCTAssertNotEqual(sign.status, 0, sign.summary)
        let lines = agent.errLines(atLeast: 2)
        XCTAssertGreaterThanOrEqual(lines.count, 2, "a line per refusal: \(lines)")
        for line in lines {
            XCTAssertTrue(line.hasPrefix("locket ssh-agent: ") && line.contains("refused: the keychain is locked")
                          && line.hasSuffix("(errSecInteractionNotAllowed -25308)"), line)
        }

        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(try ssh(sshd, key: "ed25519", command: "true").status, 0)
        XCTAssertEqual(try client("ssh-keygen", ["-Y", "sign", "-f", publicKeyPath("ed25519"), "-n", "file"], input: .text("x")).status, 0)
        XCTAssertEqual(agent.errLines.count, lines.count, "refusals after unlock: \(agent.errLines)")
        XCTAssertFalse(agent.process.hasExited, agent.process.summary)
    }

    func testSSHKeygenSignsAndVerifiesWithEveryKeyType() throws {
        let message = Array("a file to sign\n".utf8)
        for (label, _) in Self.types {
            let allowed = sandbox.root + "/allowed_signers"
            try "signer@example \(publicKeys[label]!)\n".write(toFile: allowed, atomically: false, encoding: .utf8)
            let sign = try client("ssh-keygen", ["-Y", "sign", "-f", publicKeyPath(label), "-n", "file"], input: .bytes(message))
            XCTAssertEqual(sign.status, 0, "\(label): \(sign.summary)")
            let signature = sandbox.root + "/\(label).sig"
            try sign.out.write(toFile: signature, atomically: false, encoding: .utf8)
            let verify = try client("ssh-keygen", ["-Y", "verify", "-f", allowed, "-I", "signer@example", "-n", "file", "-s", signature],
                                    input: .bytes(message))
            XCTAssertEqual(verify.status, 0, "\(label): \(verify.summary)")
            XCTAssertTrue(verify.out.contains("Good \"file\" signature for signer@example"), "\(label): \(verify.summary)")
            let tampered = try client("ssh-keygen", ["-Y", "verify", "-f", allowed, "-I", "signer@example", "-n", "file", "-s", signature],
                                      input: .bytes(message + [0x21]))
            XCTAssertNotEqual(tampered.status, 0, "\(label): a changed file verifies")
        }
        XCTAssertEqual(agent.errLines, [])
    }

    func testGitCommitSignedThroughTheAgentVerifies() throws {
        _ = try SystemTool.require("git", for: "signing a commit")
        for label in ["ed25519", "p256", "rsa"] {
            let repo = sandbox.root + "/repo-\(label)"
            let allowed = sandbox.root + "/allowed-\(label)"
            try "signer@example \(publicKeys[label]!)\n".write(toFile: allowed, atomically: false, encoding: .utf8)
            for step in GitClient.signedCommitSteps(repo, publicKey: publicKeys[label]!, allowedSigners: allowed,
                                                    message: "signed by a key that never left the keychain") {
                let result = try client("git", step)
                XCTAssertEqual(result.status, 0, "\(label): git \(step.joined(separator: " ")): \(result.summary)")
            }
            let verify = try client("git", ["-C", repo, "verify-commit", "HEAD"])
            XCTAssertEqual(verify.status, 0, "\(label): \(verify.summary)")
            XCTAssertTrue(verify.err.contains("Good \"git\" signature for signer@example"), "\(label): \(verify.summary)")
        }
        XCTAssertEqual(agent.errLines, [])
    }

    /// An agent started with `-e` serves that app's access groups only, and
    /// refuses a signature with another group's key even when asked by blob.
    func testAnAgentWithEntitlementsOffersOnlyThatAppsKeys() throws {
        let mine = try generate("ed25519", label: "app-a", "--access-group", "T.a")
        let theirs = try generate("p256", label: "app-b", "--access-group", "T.b")
        let entitlements = sandbox.root + "/a.json"
        try #"{"keychain-access-groups": ["T.a"]}"#.write(toFile: entitlements, atomically: false, encoding: .utf8)
        let app = try startAgent(["-e", entitlements])
        defer { app.stop() }
        XCTAssertEqual(try listed(app.socket), ["\(mine) app-a"])
        let refused = try client("ssh-keygen", ["-Y", "sign", "-f", publicKeyPath("app-b"), "-n", "file"], input: .text("x"), socket: app.socket)
        XCTAssertNotEqual(refused.status, 0, refused.summary)
        XCTAssertEqual(try client("ssh-keygen", ["-Y", "sign", "-f", publicKeyPath("app-a"), "-n", "file"], input: .text("x"),
                                  socket: app.socket).status, 0)
        // The owner's agent sees both.
        XCTAssertTrue(try listed().contains("\(theirs) app-b"))
    }

    /// Another uid gets nowhere: the 0700 directory first, and with the modes
    /// loosened the peer check, which closes the connection unread.
    func testAnotherUserCannotConnect() throws {
        let other = try LocalAccounts.account("keyagent")
        let sshAdd = try SystemTool.require("ssh-add", for: "connecting as another user")
        chmod(sandbox.root, 0o755)
        chmod(sandbox.runtimeDir, 0o755)
        let env = ["PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": agent.socket]
        let blocked = LocalAccounts.run(as: other, sshAdd, ["-L"], environment: env)
        XCTAssertNotEqual(blocked.status, 0, blocked.summary)
        XCTAssertTrue(blocked.err.contains("Permission denied"), blocked.summary)

        // The socket's directory and its parent, locket-agent-UID.
        let directory = String(agent.socket[..<agent.socket.lastIndex(of: "/")!])
        chmod(String(directory[..<directory.lastIndex(of: "/")!]), 0o755)
        chmod(directory, 0o755)
        chmod(agent.socket, 0o666)
        let refused = LocalAccounts.run(as: other, sshAdd, ["-L"], environment: env)
        XCTAssertNotEqual(refused.status, 0, refused.summary)
        XCTAssertFalse(refused.out.contains("ssh-"), "another user got the identities: \(refused.out)")
        XCTAssertEqual(agent.errLines(atLeast: 1), ["locket ssh-agent: connection refused: uid \(other.uid) is not the agent's user"])
        XCTAssertEqual(try listed().count, Self.types.count)
    }

    private func ssh(_ sshd: LoopbackSSHD, key label: String, _ options: [String] = [], command: String) throws -> RunResult {
        try client("ssh", ["-F", "none", "-o", "IdentityAgent=\(agent.socket)", "-o", "IdentitiesOnly=yes",
                           "-o", "IdentityFile=\(publicKeyPath(label))", "-o", "BatchMode=yes",
                           "-o", "StrictHostKeyChecking=no", "-o", "KexAlgorithms=\(LoopbackSSHD.keyExchange)", "-o", "UserKnownHostsFile=\(sandbox.root)/known_hosts",
                           "-o", "ConnectTimeout=20"] + options + ["-p", String(sshd.port), "\(sshd.user)@127.0.0.1", command])
    }
}
