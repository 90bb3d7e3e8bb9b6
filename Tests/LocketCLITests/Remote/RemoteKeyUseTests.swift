import Foundation
import LocketCore
import LocketTestSupport
import XCTest

/// Keys, the ssh-agent and dump on a remote keychain (SPEC §17, issue 17),
/// the binary under test against the shared server: `key generate`, `key
/// public`, `key sign|verify`, `export`, the identities view and `ssh-agent`
/// work as on a file, each opened secret recorded in the audit; a device's
/// dump leaves out the groups it holds no key for.
final class RemoteKeyUseTests: XCTestCase {
    private let machines = Machines()

    override func tearDown() { machines.removeAll() }

    private func machine() throws -> Sandbox { try machines.make() }

    private func locket(_ sandbox: Sandbox, _ arguments: [String], input: Input = .devNull) throws -> RunResult {
        try Machines.locket(sandbox, arguments, input: input)
    }

    /// A new keychain in a fresh database of the shared server, made by `sandbox`.
    /// One that another machine unlocks (`joined`) is made by the binary at its
    /// floor, which is what the other machine demands; one that only `sandbox`
    /// opens, by the same command in-process (`InProcessCLI`) at libsodium's
    /// minimum cost, which opens where its header authenticates: a tenth of a
    /// CPU-second of Argon2id the test is not about.
    private func newKeychain(_ sandbox: Sandbox, joined: Bool = false) throws -> String {
        let server = try Postgres.shared()
        let url = server.socketURL(try server.makeDatabase())
        let run = joined
            ? try locket(sandbox, ["-k", url, "init", "--password-stdin", "--kdf", "interactive"], input: .text("pw-keys\n"))
            : InProcessCLI.run(["-k", url, "init", "--password-stdin"], environment: sandbox.environment, input: .text("pw-keys\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        return url
    }

    private func auditOperations(_ sandbox: Sandbox, _ url: String) throws -> [String] {
        let run = try locket(sandbox, ["-k", url, "--json", "keychain", "audit", "--since", "1h"])
        XCTAssertEqual(run.status, 0, run.summary)
        return try run.jsonArray().compactMap { $0["operation"] as? String }
    }

    func testKeyCommandsOnARemoteKeychain() throws {
        let first = try machine()
        let url = try newKeychain(first)
        var run = try locket(first, ["-k", url, "key", "generate", "--type", "ed25519", "--label", "deploy-key", "--non-extractable"])
        XCTAssertEqual(run.status, 0, run.summary)
        let generatedPublic = run.out
        XCTAssert(generatedPublic.contains("BEGIN PUBLIC KEY"), run.summary)
        run = try locket(first, ["-k", url, "key", "public", "--label", "deploy-key"])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssertEqual(run.out, generatedPublic)
        XCTAssertEqual(try auditOperations(first, url), ["read"], "opening the key to derive its public half is a read")

        let message = "release 1.2.3\n"
        let signature = first.root + "/sig"
        run = try locket(first, ["-k", url, "key", "sign", "--label", "deploy-key", "--algorithm", "ed25519", "-o", signature],
                         input: .text(message))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "key", "verify", "--label", "deploy-key", "--algorithm", "ed25519", "--signature", signature],
                         input: .text(message))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "key", "verify", "--label", "deploy-key", "--algorithm", "ed25519", "--signature", signature],
                         input: .text("release 6.6.6\n"))
        XCTAssertNotEqual(run.status, 0, "a signature over another message: \(run.summary)")
        XCTAssertEqual(try auditOperations(first, url).count, 4, "public, sign and two verifies each opened the key")

        run = try locket(first, ["-k", url, "key", "generate", "--type", "x25519", "--label", "box", "--non-extractable"])
        XCTAssertEqual(run.status, 0, run.summary)
        let sealed = first.root + "/sealed"
        run = try locket(first, ["-k", url, "key", "encrypt", "--label", "box", "--algorithm", "x25519-sealed-box", "-o", sealed],
                         input: .text("for the fleet"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "key", "decrypt", "--label", "box", "--algorithm", "x25519-sealed-box", "-i", sealed])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssertEqual(run.out, "for the fleet", run.summary)

        // Non-extractable: used, never exported, on a remote keychain as on a file.
        run = try locket(first, ["-k", url, "export", "--format", "pem", "--class", "keys", "--label", "deploy-key"])
        XCTAssertNotEqual(run.status, 0, run.summary)
        XCTAssert(run.err.contains("non-extractable"), run.summary)
        run = try locket(first, ["-k", url, "key", "generate", "--type", "p256", "--label", "exportable"])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "export", "--format", "pem", "--class", "keys", "--label", "exportable"])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssert(run.out.contains("PRIVATE KEY"), run.summary)
    }

    func testSSHAgentServesTheKeysOfARemoteKeychain() throws {
        // make test-deps installs openssh-client.
        guard let sshAdd = ["/usr/bin/ssh-add", "/usr/local/bin/ssh-add"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw XCTSkip("ssh-add is not installed (make test-deps)")
        }
        let first = try machine()
        let url = try newKeychain(first)
        var run = try locket(first, ["-k", url, "key", "generate", "--type", "ed25519", "--label", "ci-deploy"])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "key", "public", "--label", "ci-deploy", "--openssh"])
        XCTAssertEqual(run.status, 0, run.summary)
        let openssh = run.out.split(separator: " ").prefix(2).joined(separator: " ")
        run = try locket(first, ["-k", url, "ssh-agent", "--", sshAdd, "-L"])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssertEqual(run.out, "\(openssh) ci-deploy\n", run.summary)
        XCTAssertEqual(try auditOperations(first, url), ["read", "read"], "key public, then the agent's listing")
    }

    func testDumpLeavesOutTheGroupsADeviceHoldsNoKeyFor() throws {
        let first = try machine()
        let url = try newKeychain(first, joined: true)
        for (group, value) in [("team.a", "sec-a"), ("team.b", "sec-b")] {
            let run = try locket(first, ["-k", url, "add", "-s", "svc-\(group)", "-a", "ci", "--access-group", group, "-w"], input: .text(value))
            XCTAssertEqual(run.status, 0, run.summary)
        }
        let second = try machine()
        var run = try locket(second, ["-k", url, "unlock", "--password-stdin"], input: .text("pw-keys\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(second, ["-k", url, "keychain", "enroll", "--name", "runner-b"])
        XCTAssertEqual(run.status, 0, run.summary)
        let id = try XCTUnwrap(run.out.split(separator: " ").dropFirst().first.map { String($0.dropLast()) })
        run = try locket(first, ["-k", url, "keychain", "approve", id, "--fingerprint", Machines.fingerprint(run.out), "--groups", "team.b"])
        XCTAssertEqual(run.status, 0, run.summary)
        for data in [false, true] {
            run = try locket(second, ["-k", url, "--json", "dump"] + (data ? ["--data"] : []))
            XCTAssertEqual(run.status, 0, run.summary)
            let items = try run.jsonArray()
            XCTAssertEqual(items.compactMap { $0["service"] as? String }, ["svc-team.b"], run.summary)
            XCTAssertFalse(run.out.contains("sec-a"), run.summary)
            if data { XCTAssert(run.out.contains("sec-b"), run.summary) }
        }
        run = try locket(first, ["-k", url, "--json", "dump"])
        XCTAssertEqual(try run.jsonArray().count, 2, run.summary)
    }
}
