import Foundation
import LocketCore
import LocketTestSupport
import XCTest

/// The offline cache of a remote keychain (SPEC §17 "Offline", docs/REMOTE.md
/// "The offline cache"), the binary under test against the run's shared
/// server, or against a private one for the test that stops it
/// (`pg_ctl stop -m immediate`) and starts it again.
final class RemoteOfflineCacheTests: XCTestCase {
    private let machines = Machines()
    /// 53: errSecNotAvailable (-25291) as an exit status.
    private let notAvailable: Int32 = 53

    override func tearDown() { machines.removeAll() }

    private func machine() throws -> Sandbox { try machines.make() }

    private func locket(_ sandbox: Sandbox, _ arguments: [String], input: Input = .devNull) throws -> RunResult {
        try Machines.locket(sandbox, arguments, input: input)
    }

    private func newKeychain(_ sandbox: Sandbox, _ server: PostgresServer) throws -> String {
        let url = server.socketURL(try server.makeDatabase())
        let run = try locket(sandbox, ["-k", url, "init", "--password-stdin", "--kdf", "interactive"], input: .text("pw-offline\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        return url
    }

    private func cacheFiles(_ sandbox: Sandbox) throws -> [String] {
        let directory = sandbox.stateHome + "/locket"
        return try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".cache") }.map { directory + "/" + $0 }
    }

    private func auditReads(_ sandbox: Sandbox, _ url: String) throws -> Int {
        let run = try locket(sandbox, ["-k", url, "--json", "keychain", "audit", "--since", "1h"])
        XCTAssertEqual(run.status, 0, run.summary)
        return try run.jsonArray().filter { $0["operation"] as? String == "read" }.count
    }

    func testReadsComeFromTheCacheWithinMaxStaleOnlyAndAreAuditedLater() throws {
        // Its own server: the run's shared one is never stopped under other test processes.
        let server = try Postgres.makePrivate()
        defer { server.stop() }
        let first = try machine()
        let url = try newKeychain(first, server)
        let names = ["offline-svc-q7", "offline-acct-q7", "wu-svc-q7"]
        let secrets = ["afu-secret-Zq81", "wu-secret-Kp29"]
        var run = try locket(first, ["-k", url, "add", "-s", names[0], "-a", names[1], "--accessible", "after-first-unlock", "-w"],
                             input: .text(secrets[0]))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "add", "-s", names[2], "-a", names[1], "-w"], input: .text(secrets[1]))
        XCTAssertEqual(run.status, 0, run.summary)

        // Online, --max-stale changes nothing and a read fills no cache (a lookup does no extra write).
        run = try locket(first, ["-k", url, "--max-stale", "1h", "find", "-s", names[0], "-w"])
        XCTAssertEqual(run.out, secrets[0] + "\n", run.summary)
        XCTAssertEqual(run.err, "", run.summary)
        XCTAssertEqual(try cacheFiles(first), [])
        run = try locket(first, ["-k", url, "keychain", "sync"])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssert(run.out.hasPrefix("1 after-first-unlock item cached"), run.summary)
        let cache = try XCTUnwrap(try cacheFiles(first).first)
        let stored = try XCTUnwrap(FileManager.default.contents(atPath: cache))
        XCTAssertEqual((try FileManager.default.attributesOfItem(atPath: cache)[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        for marker in names + secrets {
            for form in [Data(marker.utf8), Data(Array(marker.utf8).map { String(format: "%02x", $0) }.joined().utf8)] {
                XCTAssertNil(stored.range(of: form), "the cache holds \(marker) in the clear")
            }
        }
        XCTAssertEqual(try auditReads(first, url), 1)

        try server.stopServer(mode: "immediate")
        var restarted = false
        defer { if !restarted { try? server.start() } }

        run = try locket(first, ["-k", url, "find", "-s", names[0], "-w"])
        XCTAssertEqual(run.status, notAvailable, "no offline reads unless asked: \(run.summary)")
        run = try locket(try machine(), ["-k", url, "--max-stale", "1h", "find", "-s", names[0], "-w"])
        XCTAssertEqual(run.status, notAvailable, run.summary)
        XCTAssert(run.err.contains("no offline cache"), run.summary)
        run = try locket(first, ["-k", url, "--max-stale", "1h", "find", "-s", names[0], "-w"])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssertEqual(run.out, secrets[0] + "\n", run.summary)
        XCTAssertEqual(run.err.split(separator: "\n").count, 1, run.summary)
        XCTAssert(run.err.hasPrefix("locket: offline: ") && run.err.hasSuffix(" s ago\n"), run.summary)
        run = try locket(first, ["-k", url, "--max-stale", "1h", "find", "-a", names[1], "-w"])
        XCTAssertEqual(run.out, secrets[0] + "\n", "an attribute query through the cached blind index: \(run.summary)")
        run = try locket(first, ["-k", url, "--max-stale", "0s", "find", "-s", names[0], "-w"])
        XCTAssertEqual(run.status, notAvailable, run.summary)
        XCTAssert(run.err.contains("older than allowed"), run.summary)
        run = try locket(first, ["-k", url, "--max-stale", "1h", "find", "-s", names[2], "-w"])
        XCTAssertEqual(run.status, notAvailable, "a when-unlocked item is not offline-readable: \(run.summary)")
        XCTAssertFalse(run.out.contains(secrets[1]), run.summary)
        run = try locket(first, ["-k", url, "--max-stale", "1h", "add", "-s", "new-offline", "-w"], input: .text("nope"))
        XCTAssertEqual(run.status, notAvailable, "writes need the server: \(run.summary)")
        run = try locket(first, ["-k", url, "--max-stale", "1h", "delete", "-s", names[0]])
        XCTAssertEqual(run.status, notAvailable, "writes need the server: \(run.summary)")
        run = try locket(first, ["-k", url, "--max-stale", "1h", "update", "-s", names[0], "-w"], input: .text("nope"))
        XCTAssertEqual(run.status, notAvailable, "writes need the server: \(run.summary)")
        run = try locket(first, ["-k", url, "--max-stale", "forever", "find", "-s", names[0]])
        XCTAssertEqual(run.status, 2, run.summary)

        // A damaged or foreign cache file is refused with one line, never read.
        let original = try Data(contentsOf: URL(fileURLWithPath: cache))
        func refused(_ what: String, expect: String) throws {
            let run = try locket(first, ["-k", url, "--max-stale", "1h", "find", "-s", names[0], "-w"])
            XCTAssertNotEqual(run.status, 0, "\(what): \(run.summary)")
            XCTAssertEqual(run.out, "", "\(what): \(run.summary)")
            XCTAssert(run.err.contains(expect), "\(what): \(run.summary)")
            XCTAssertEqual(run.err.split(separator: "\n").count, 1, "\(what): \(run.summary)")
        }
        var flipped = original
        flipped[flipped.count / 2] ^= 0x01
        try flipped.write(to: URL(fileURLWithPath: cache))
        try refused("a flipped byte", expect: "does not open")
        try original.prefix(original.count - 9).write(to: URL(fileURLWithPath: cache))
        try refused("truncated", expect: "does not open")
        try original.prefix(10).write(to: URL(fileURLWithPath: cache))
        try refused("a stub", expect: "not one locket wrote")
        try original.write(to: URL(fileURLWithPath: cache))
        chmod(cache, 0o644)
        try refused("readable by others", expect: "open to other users")
        chmod(cache, 0o600)
        if geteuid() == 0 {
            chown(cache, 65534, 65534)
            try refused("another user's", expect: "belongs to another user")
            chown(cache, 0, 0)
        }
        run = try locket(first, ["-k", url, "--max-stale", "1h", "find", "-s", names[0], "-w"])
        XCTAssertEqual(run.out, secrets[0] + "\n", "the restored cache reads again: \(run.summary)")

        // Back online: the three reads answered offline are appended to the audit on the next contact.
        try server.start()
        restarted = true
        XCTAssertEqual(try auditReads(first, url), 4)
        XCTAssertEqual(try auditReads(first, url), 4, "appended once")
    }

    func testARevokedDevicesCacheIsWipedOnContact() throws {
        let server = try Postgres.shared()
        let first = try machine()
        let url = try newKeychain(first, server)
        var run = try locket(first, ["-k", url, "add", "-s", "fleet", "--accessible", "after-first-unlock", "-w"], input: .text("fleet-1"))
        XCTAssertEqual(run.status, 0, run.summary)
        let second = try machine()
        run = try locket(second, ["-k", url, "unlock", "--password-stdin"], input: .text("pw-offline\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(second, ["-k", url, "keychain", "enroll", "--name", "runner"])
        let id = try XCTUnwrap(run.out.split(separator: " ").dropFirst().first.map { String($0.dropLast()) })
        run = try locket(first, ["-k", url, "keychain", "approve", id, "--fingerprint", Machines.fingerprint(run.out), "--groups", "default"])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(second, ["-k", url, "keychain", "sync"])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssertEqual(try cacheFiles(second).count, 1)
        run = try locket(first, ["-k", url, "keychain", "revoke", id])
        XCTAssertEqual(run.status, 0, run.summary)
        // Any contact: the server says revoked, the cache goes.
        run = try locket(second, ["-k", url, "--max-stale", "1h", "find", "-s", "fleet", "-w"])
        XCTAssertNotEqual(run.status, 0, run.summary)
        XCTAssertEqual(try cacheFiles(second), [], run.summary)
        run = try locket(second, ["-k", url, "keychain", "sync"])
        XCTAssertNotEqual(run.status, 0, run.summary)
        XCTAssert(run.err.contains("revoked"), run.summary)
        XCTAssertEqual(try cacheFiles(second), [])
    }

    /// The ssh-agent honours --max-stale as find -w does: with the server
    /// down it lists and signs with after-first-unlock keys from the cache,
    /// audited at the next contact; without --max-stale it serves none.
    func testTheSSHAgentServesKeysFromTheCacheWithinMaxStale() throws {
        let tools = ["ssh-add", "ssh-keygen"].compactMap { tool in
            ["/usr/bin/\(tool)", "/usr/local/bin/\(tool)"].first(where: FileManager.default.isExecutableFile(atPath:))
        }
        guard tools.count == 2 else { throw XCTSkip("ssh-add or ssh-keygen is not installed (make test-deps installs openssh-client)") }
        let server = try Postgres.makePrivate()
        defer { server.stop() }
        let first = try machine()
        let url = try newKeychain(first, server)
        var run = try locket(first, ["-k", url, "key", "generate", "--type", "ed25519", "--label", "offline-deploy",
                                     "--accessible", "after-first-unlock"])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "key", "public", "--label", "offline-deploy", "--openssh"])
        XCTAssertEqual(run.status, 0, run.summary)
        let openssh = run.out.split(separator: " ").prefix(2).joined(separator: " ")
        let publicKey = first.root + "/deploy.pub", message = first.root + "/message"
        XCTAssertTrue(FileManager.default.createFile(atPath: publicKey, contents: Data((openssh + "\n").utf8)))
        XCTAssertTrue(FileManager.default.createFile(atPath: message, contents: Data("signed offline".utf8)))
        run = try locket(first, ["-k", url, "keychain", "sync"])
        XCTAssert(run.out.hasPrefix("1 after-first-unlock item cached"), run.summary)
        let readsOnline = try auditReads(first, url)

        try server.stopServer(mode: "immediate")
        var restarted = false
        defer { if !restarted { try? server.start() } }
        run = try locket(first, ["-k", url, "--max-stale", "1h", "ssh-agent", "--", tools[0], "-L"])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssertEqual(run.out, "\(openssh) offline-deploy\n", run.summary)
        run = try locket(first, ["-k", url, "--max-stale", "1h", "ssh-agent", "--", tools[1], "-Y", "sign", "-f", publicKey, "-n", "file", message])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssertTrue(FileManager.default.fileExists(atPath: message + ".sig"), run.summary)
        run = try locket(first, ["-k", url, "ssh-agent", "--", tools[0], "-L"])
        XCTAssertNotEqual(run.status, 0, "no offline keys unless asked: \(run.summary)")
        XCTAssertFalse(run.out.contains(openssh), run.summary)

        try server.start()
        restarted = true
        XCTAssertGreaterThan(try auditReads(first, url), readsOnline, "the agent's offline reads reach the audit")
    }

    /// With --max-stale, a server that drops packets (a loopback port whose
    /// accept queue is full) is given 2 s, not libpq's 10, before the cache
    /// answers; a URL's own connect_timeout wins.
    func testWithMaxStaleAServerThatDropsPacketsIsGivenTwoSeconds() throws {
        let server = try Postgres.makePrivate()
        defer { server.stop() }
        let first = try machine()
        let passfile = first.root + "/pgpass"
        XCTAssertTrue(FileManager.default.createFile(atPath: passfile, contents: Data("127.0.0.1:\(server.port):*:\(PostgresServer.user):\(server.password)\n".utf8),
                                                     attributes: [.posixPermissions: 0o600]))
        let url = server.tcpURL(try server.makeDatabase(), host: "127.0.0.1", query: "sslrootcert=\(server.caCertificate)&passfile=\(passfile)")
        var run = try locket(first, ["-k", url, "init", "--password-stdin", "--kdf", "interactive"], input: .text("pw-offline\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "add", "-s", "dropped-svc", "--accessible", "after-first-unlock", "-w"], input: .text("cached-Vt4"))
        XCTAssertEqual(run.status, 0, run.summary)
        let patient = url + "&connect_timeout=4"
        for keychain in [url, patient] {
            run = try locket(first, ["-k", keychain, "keychain", "sync"])
            XCTAssertEqual(run.status, 0, run.summary)
        }

        try server.stopServer(mode: "immediate")
        defer { try? server.start() }
        let hole = try Loopback.BlackHole(port: server.port)
        defer { hole.close() }
        run = try locket(first, ["-k", url, "--max-stale", "1h", "find", "-s", "dropped-svc", "-w"])
        XCTAssertEqual(run.out, "cached-Vt4\n", run.summary)
        XCTAssertGreaterThanOrEqual(run.duration, 1.9, "it waited for the connection to time out: \(run.summary)")
        XCTAssertLessThan(run.duration, 9.5, "2 s, not the helper's default 10: \(run.summary)")
        run = try locket(first, ["-k", patient, "--max-stale", "1h", "find", "-s", "dropped-svc", "-w"])
        XCTAssertEqual(run.out, "cached-Vt4\n", run.summary)
        XCTAssertGreaterThanOrEqual(run.duration, 3.9, "the URL's connect_timeout=4 wins: \(run.summary)")
    }
}
