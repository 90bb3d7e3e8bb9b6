import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `locket ssh-agent` with OpenSSH's own clients and git (SPEC §13): the
/// identities `ssh-add -L` lists, `ssh-keygen -Y sign` verified by
/// `ssh-keygen -Y verify`, logins to a loopback sshd with every key type,
/// `git commit -S` verified by `git verify-commit`; and a locked key refused
/// per signature, with one line on the agent's stderr, until it is unlocked.
final class SSHAgentClientsEndToEndTests: XCTestCase {
    nonisolated(unsafe) private static var sharedKeys: AgentKeys?
    private var keys: AgentKeys!
    private var scratch: String!
    private var agent: RunningAgent!
    private var sshKeygen: String!

    override class func tearDown() {
        sharedKeys?.remove()
        sharedKeys = nil
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        sshKeygen = try SystemTool.require("ssh-keygen", for: "making the keys the agent serves")
        // RSA keys take a while to make: once for the class.
        if Self.sharedKeys == nil { Self.sharedKeys = try AgentKeys(sshKeygen: sshKeygen) }
        keys = Self.sharedKeys
        keys.set("locked", false)
        keys.set("hidden", false)
        var template = Array("/tmp/locket-agent-e2e.XXXXXX".utf8CString)
        scratch = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
        mkdir(scratch + "/run", 0o700)
        agent = try RunningAgent(keys: keys, environment: environment)
        addTeardownBlock { [agent, scratch] in
            agent?.stop()
            try? FileManager.default.removeItem(atPath: scratch!)
        }
    }

    /// What every client runs with: nothing from the developer's own ssh or git set-up.
    private var environment: [String: String] {
        ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "XDG_RUNTIME_DIR": scratch + "/run",
         "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": scratch + "/gitconfig"]
    }

    private func client(_ program: String, _ arguments: [String], input: Input = .devNull, extra: [String: String] = [:]) throws -> RunResult {
        let path = try SystemTool.require(program, for: "this test")
        var env = environment
        env["SSH_AUTH_SOCK"] = agent.socket
        for (k, v) in extra { env[k] = v }
        let result = Spawn.run(path, arguments, environment: env, input: input, timeout: 60)
        XCTAssertFalse(result.timedOut, "\(program) timed out: \(result.summary)")
        return result
    }

    private func refusals() -> [String] { agent.errLines.filter { $0.contains("refused") } }

    func testSSHAddListsExactlyTheKeys() throws {
        let result = try client("ssh-add", ["-L"])
        XCTAssertEqual(result.status, 0, result.summary)
        let listed = result.out.split(separator: "\n").map { line in
            let fields = line.split(separator: " ")
            return (key: fields.prefix(2).joined(separator: " "), comment: fields.dropFirst(2).joined(separator: " "))
        }
        XCTAssertEqual(listed.map(\.key), try keys.names.sorted().map { try keys.publicKey($0) })
        // The comment is what the source names the key by (here the file name).
        XCTAssertEqual(listed.map(\.comment), keys.names.sorted())
        XCTAssertEqual(agent.errLines, [])
    }

    func testSSHKeygenSignsAndVerifiesWithEveryKeyType() throws {
        let message = Array("a file to sign\n".utf8)
        for name in keys.names {
            let allowed = scratch + "/allowed_signers"
            try "signer@example \(try keys.publicKey(name))\n".write(toFile: allowed, atomically: false, encoding: .utf8)
            let sign = try client("ssh-keygen", ["-Y", "sign", "-f", keys.publicKeyPath(name), "-n", "file"], input: .bytes(message))
            XCTAssertEqual(sign.status, 0, "\(name): \(sign.summary)")
            XCTAssertTrue(sign.out.hasPrefix("-----BEGIN SSH SIGNATURE-----"), "\(name): \(sign.summary)")
            let signature = scratch + "/\(name).sig"
            try sign.out.write(toFile: signature, atomically: false, encoding: .utf8)
            let verify = try client("ssh-keygen", ["-Y", "verify", "-f", allowed, "-I", "signer@example", "-n", "file", "-s", signature],
                                    input: .bytes(message))
            XCTAssertEqual(verify.status, 0, "\(name): \(verify.summary)")
            XCTAssertTrue(verify.out.contains("Good \"file\" signature for signer@example"), "\(name): \(verify.summary)")
            let tampered = try client("ssh-keygen", ["-Y", "verify", "-f", allowed, "-I", "signer@example", "-n", "file", "-s", signature],
                                      input: .bytes(message + [0x21]))
            XCTAssertNotEqual(tampered.status, 0, "\(name): a changed file verifies")
        }
        XCTAssertEqual(agent.errLines, [])
    }

    func testSSHLogsInWithEveryKeyTypeThroughTheAgent() throws {
        let sshd = try LoopbackSSHD(authorizedKeys: try keys.names.map { try keys.publicKey($0) }, sshKeygen: sshKeygen)
        defer { sshd.stop() }
        for name in keys.names {
            let result = try ssh(sshd, key: name, command: "echo logged-in-with-\(name)")
            XCTAssertEqual(result.status, 0, "\(name): \(result.summary)\nsshd: \(sshd.log.suffix(2000))")
            XCTAssertEqual(result.out, "logged-in-with-\(name)\n", name)
            let fingerprint = try client("ssh-keygen", ["-l", "-f", keys.publicKeyPath(name)]).out.split(separator: " ")[1]
            XCTAssertTrue(sshd.log.contains("Accepted publickey for \(sshd.user) from 127.0.0.1") && sshd.log.contains(String(fingerprint)),
                          "\(name): sshd did not log the key \(fingerprint): \(sshd.log.suffix(2000))")
        }
        XCTAssertEqual(refusals(), [])
    }

    /// A locked key: ssh and ssh-keygen fail, the agent writes one line per
    /// refused signature and keeps serving; unlocked, both work again.
    func testALockedKeyIsRefusedPerSignatureAndWorksAgainAfterUnlock() throws {
        let sshd = try LoopbackSSHD(authorizedKeys: [try keys.publicKey("ed25519")], sshKeygen: sshKeygen)
        defer { sshd.stop() }
        XCTAssertEqual(try ssh(sshd, key: "ed25519", command: "true").status, 0)

        keys.set("locked", true)
        let login = try ssh(sshd, key: "ed25519", command: "true")
        XCTAssertEqual(login.status, 255, login.summary)
        XCTAssertTrue(login.err.contains("Permission denied"), login.summary)
        let sign = try client("ssh-keygen", ["-Y", "sign", "-f", keys.publicKeyPath("ed25519"), "-n", "file"], input: .text("x"))
        XCTAssertNotEqual(sign.status, 0, sign.summary)
        let lines = agent.errLines(atLeast: 2)
        XCTAssertEqual(lines.count, 2, "one line per refused signature: \(lines)")
        for line in lines {
            XCTAssertEqual(line, "locket ssh-agent: sign refused: the keychain is locked for this item's protection class (errSecInteractionNotAllowed -25308)")
        }

        keys.set("locked", false)
        XCTAssertEqual(try ssh(sshd, key: "ed25519", command: "true").status, 0)
        XCTAssertEqual(try client("ssh-keygen", ["-Y", "sign", "-f", keys.publicKeyPath("ed25519"), "-n", "file"], input: .text("x")).status, 0)
        XCTAssertEqual(agent.errLines.count, 2)
        XCTAssertFalse(agent.process.hasExited, "the agent stopped: \(agent.process.summary)")
    }

    /// Listing refused (a locked keychain whose keys can't even be named): ssh-add says so, the agent one line.
    func testAListingRefusedIsAFailureAndOneLine() throws {
        keys.set("hidden", true)
        let result = try client("ssh-add", ["-L"])
        XCTAssertNotEqual(result.status, 0, result.summary)
        XCTAssertEqual(agent.errLines(atLeast: 1),
                       ["locket ssh-agent: identities refused: the keychain is locked for this item's protection class (errSecInteractionNotAllowed -25308)"])
        keys.set("hidden", false)
        XCTAssertEqual(try client("ssh-add", ["-L"]).status, 0)
    }

    func testGitCommitSignedThroughTheAgentVerifies() throws {
        let git = "git"
        _ = try SystemTool.require(git, for: "signing a commit")
        for name in ["ed25519", "ecdsa256", "rsa"] {
            let repo = scratch + "/repo-\(name)"
            let allowed = scratch + "/allowed-\(name)"
            try "signer@example \(try keys.publicKey(name))\n".write(toFile: allowed, atomically: false, encoding: .utf8)
            let steps = GitClient.signedCommitSteps(repo, publicKey: try keys.publicKey(name), allowedSigners: allowed,
                                                    message: "signed by the agent")
            for step in steps {
                let result = try client(git, step)
                XCTAssertEqual(result.status, 0, "\(name): git \(step.joined(separator: " ")): \(result.summary)")
            }
            let verify = try client(git, ["-C", repo, "verify-commit", "HEAD"])
            XCTAssertEqual(verify.status, 0, "\(name): \(verify.summary)")
            XCTAssertTrue(verify.err.contains("Good \"git\" signature for signer@example"), "\(name): \(verify.summary)")
            let show = try client(git, ["-C", repo, "cat-file", "commit", "HEAD"])
            XCTAssertTrue(show.out.contains("-----BEGIN SSH SIGNATURE-----"), show.summary)
        }
        XCTAssertEqual(agent.errLines, [])
    }

    /// `ssh-add KEY`, `-d`, `-D`, `-x`: refused, each with a line saying how it is done with locket.
    func testKeyManagementThroughSSHAddIsRefusedWithAReason() throws {
        let copy = scratch + "/to-add"
        try FileManager.default.copyItem(atPath: keys.keys + "/ed25519.key", toPath: copy)
        chmod(copy, 0o600)
        let add = try client("ssh-add", [copy])
        XCTAssertNotEqual(add.status, 0, add.summary)
        XCTAssertTrue(add.err.contains("agent refused operation"), add.summary)
        XCTAssertEqual(try client("ssh-add", ["-D"]).status, 1)
        let lines = agent.errLines(atLeast: 2)
        XCTAssertEqual(lines, [
            "locket ssh-agent: ssh-add of a key refused: this agent serves the keychain's keys; add one with 'locket import' or 'locket key generate'",
            "locket ssh-agent: removing identities refused: delete a key from the keychain with 'locket delete'",
        ])
        // Nothing was added: the list is what it was.
        XCTAssertEqual(try client("ssh-add", ["-L"]).out.split(separator: "\n").count, keys.names.count)
    }

    private func ssh(_ sshd: LoopbackSSHD, key name: String, command: String) throws -> RunResult {
        try client("ssh", ["-F", "none", "-o", "IdentityAgent=\(agent.socket)", "-o", "IdentitiesOnly=yes",
                           "-o", "IdentityFile=\(keys.publicKeyPath(name))", "-o", "BatchMode=yes",
                           "-o", "StrictHostKeyChecking=no", "-o", "KexAlgorithms=\(LoopbackSSHD.keyExchange)", "-o", "UserKnownHostsFile=\(scratch!)/known_hosts",
                           "-o", "ConnectTimeout=20", "-p", String(sshd.port), "\(sshd.user)@127.0.0.1", command])
    }
}
