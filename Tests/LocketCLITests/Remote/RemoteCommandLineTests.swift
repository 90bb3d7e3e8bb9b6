import Foundation
import LocketCore
import LocketTestSupport
import XCTest

/// The command line on remote keychains (SPEC §17), the binary under test run
/// as a user would against this class's server: `-k postgres://...` over the
/// socket, and a name from `keychain add-remote` over TCP with TLS verified
/// and the database password kept in the login keychain.
final class RemoteCommandLineTests: PostgresTestCase {
    private let machines = Machines()

    override func tearDown() { machines.removeAll() }

    func machine() throws -> Sandbox { try machines.make() }

    func locket(_ sandbox: Sandbox, _ arguments: [String], input: Input = .devNull) throws -> RunResult {
        try Machines.locket(sandbox, arguments, input: input)
    }

    func testAURLKeychainAcrossTwoMachines() throws {
        let server = try running()
        let url = server.socketURL(try server.makeDatabase())
        let first = try machine()
        var run = try locket(first, ["-k", url, "init", "--no-password"])
        XCTAssertNotEqual(run.status, 0, run.summary)
        XCTAssert(run.err.contains("needs a password"), run.summary)
        run = try locket(first, ["-k", url, "init", "--password-stdin", "--kdf", "interactive"], input: .text("pw-one\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "add", "-s", "deploy", "-a", "ci", "-w"], input: .text("tok-1"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "find", "-s", "deploy", "-w"])
        XCTAssertEqual(run.out, "tok-1\n", run.summary)

        let second = try machine()
        run = try locket(second, ["-k", url, "find", "-s", "deploy", "-w"])
        XCTAssertEqual(run.status, 36, "locked on a machine that never unlocked it: \(run.summary)")
        run = try locket(second, ["-k", url, "unlock", "--password-stdin"], input: .text("pw-one\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(second, ["-k", url, "find", "-s", "deploy", "-w"])
        XCTAssertEqual(run.status, 36, "not a device of the keychain yet: \(run.summary)")
        XCTAssert(run.err.contains("keychain enroll"), run.summary)
        run = try locket(second, ["-k", url, "keychain", "enroll", "--name", "runner-2"])
        XCTAssertEqual(run.status, 0, run.summary)
        let id = try XCTUnwrap(run.out.split(separator: " ").dropFirst().first.map { String($0.dropLast()) })
        run = try locket(first, ["-k", url, "keychain", "approve", id, "--fingerprint", Machines.fingerprint(run.out), "--groups", "default"])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "--json", "keychain", "devices"])
        let devices = try run.jsonArray()
        XCTAssertEqual(devices.compactMap { $0["name"] as? String }, ["creator", "runner-2"], run.summary)
        XCTAssertEqual(devices.compactMap { $0["state"] as? String }, ["approved", "approved"], run.summary)
        XCTAssertEqual(devices.compactMap { $0["thisMachine"] as? Bool }, [true, false], run.summary)
        run = try locket(second, ["-k", url, "find", "-s", "deploy", "-w"])
        XCTAssertEqual(run.out, "tok-1\n", run.summary)
        run = try locket(first, ["-k", url, "--json", "keychain", "audit", "--since", "1h"])
        let audit = try run.jsonArray()
        XCTAssertEqual(audit.compactMap { $0["operation"] as? String }, ["read", "read"], run.summary)
        XCTAssertEqual(audit.compactMap { $0["deviceName"] as? String }, ["creator", "runner-2"], run.summary)
        run = try locket(first, ["-k", url, "keychain", "audit", "--since", "2999-01-01"])
        XCTAssertEqual(run.out, "", run.summary)
        run = try locket(first, ["-k", url, "keychain", "audit", "--since", "yesterday"])
        XCTAssertEqual(run.status, 2, run.summary)
        run = try locket(second, ["-k", url, "add", "-s", "deploy", "-a", "ci", "-w"], input: .text("tok-2"))
        XCTAssertEqual(run.status, 45, "one primary key across machines: \(run.summary)")
        run = try locket(second, ["-k", url, "update", "-s", "deploy", "-w"], input: .text("tok-2"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "find", "-s", "deploy", "-w"])
        XCTAssertEqual(run.out, "tok-2\n", run.summary)

        run = try locket(first, ["-k", url, "add", "-s", "tdo", "-a", "x", "--accessible", "when-unlocked-this-device-only", "-w"],
                         input: .text("s"))
        XCTAssertEqual(run.status, 206, run.summary)
        XCTAssert(run.err.contains("can't be stored in a remote keychain"), run.summary)
        XCTAssert(run.err.contains("hint:"), run.summary)
        run = try locket(first, ["-k", url, "passwd"])
        XCTAssertEqual(run.status, 53, run.summary)
        run = try locket(first, ["-k", url, "delete", "-s", "deploy"])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(second, ["-k", url, "find", "-s", "deploy"])
        XCTAssertEqual(run.status, 44, run.summary)

        run = try locket(first, ["-k", url, "add", "-s", "later", "-a", "ci", "-w"], input: .text("tok-3"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "keychain", "revoke", id])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(second, ["-k", url, "find", "-s", "later", "-w"])
        XCTAssertEqual(run.status, 36, "revoked: \(run.summary)")
        XCTAssertEqual(run.out, "", run.summary)
        run = try locket(first, ["-k", url, "find", "-s", "later", "-w"])
        XCTAssertEqual(run.out, "tok-3\n", run.summary)
    }

    /// A registered name over TCP: TLS verified against the URL's CA, the
    /// database password from a generic password in the login keychain; the
    /// password never appears in argv, in the registration or in the URL.
    func testANamedRemoteOverTLSWithThePasswordInALocketItem() throws {
        let server = try running()
        let database = try server.makeDatabase()
        let url = server.tcpURL(database, query: "sslrootcert=\(server.caCertificate)")
        let sandbox = try machine()
        XCTAssertEqual(try locket(sandbox, ["init", "--no-password"]).status, 0)
        var run = try locket(sandbox, ["add", "-s", "pg-team", "-a", PostgresServer.user, "-w"], input: .text(server.password))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(sandbox, ["keychain", "add-remote", "team", url, "--password-service", "pg-team"])
        XCTAssertEqual(run.status, 0, run.summary)
        let registration = try String(contentsOfFile: sandbox.dataHome + "/locket/team.remote", encoding: .utf8)
        XCTAssertFalse(registration.contains(server.password))
        run = try locket(sandbox, ["keychain", "add-remote", "team", url])
        XCTAssertEqual(run.status, 48, run.summary)
        run = try locket(sandbox, ["keychain", "add-remote", "login", url])
        XCTAssertEqual(run.status, 48, "the name of a keychain file: \(run.summary)")

        run = try locket(sandbox, ["-k", "team", "init", "--password-stdin", "--kdf", "interactive"], input: .text("team-pw\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(sandbox, ["-k", "team", "add", "-s", "s", "-a", "a", "-w"], input: .text("v"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(sandbox, ["-k", "team", "find", "-s", "s", "-w"])
        XCTAssertEqual(run.out, "v\n", run.summary)
        run = try locket(sandbox, ["-k", "team", "status"])
        XCTAssertEqual(run.status, 0, run.summary)

        // Without the login keychain's item, libpq finds no password: refused by the server.
        let other = try machine()
        run = try locket(other, ["-k", url, "find", "-s", "s"])
        XCTAssertNotEqual(run.status, 0, run.summary)
        XCTAssertFalse(run.err.contains(server.password))
    }

    func testURLsThatWeakenOrCarryTooMuchAreRefused() throws {
        let server = try running()
        let database = try server.makeDatabase()
        let sandbox = try machine()
        for (url, words) in [
            ("postgres://\(PostgresServer.user):hunter2@localhost:\(server.port)/\(database)", "password does not belong"),
            ("postgres://localhost:\(server.port)/\(database)?password=hunter2", "password does not belong"),
            ("postgres://localhost:\(server.port)/\(database)?options=-csearch_path%3Dx", "not a connection keyword"),
            ("postgres://localhost:notaport/\(database)", "not a number"),
        ] {
            let run = try locket(sandbox, ["-k", url, "find", "-s", "s"])
            XCTAssertEqual(run.status, 206, run.summary)
            XCTAssert(run.err.contains(words), run.summary)
            XCTAssertFalse(run.err.contains("hunter2"), run.summary)
        }
        // A network host without verification is refused by the helper's policy, not tried.
        let weak = server.tcpURL(database, query: "sslmode=require")
        let run = try locket(sandbox, ["-k", weak, "find", "-s", "s"])
        XCTAssertEqual(run.status, 53, run.summary)
    }

    /// An older header put back by the server (docs/REMOTE.md "Integrity of
    /// the header"): exit 93 saying it was rolled back, with the hint, until
    /// `restore --accept-rollback` and the password accept it on this machine.
    func testARolledBackHeaderIsRefusedUntilRestoreAcceptsIt() throws {
        let server = try running()
        let database = try server.makeDatabase()
        let url = server.socketURL(database)
        let first = try machine()
        var run = try locket(first, ["-k", url, "init", "--password-stdin", "--kdf", "interactive"], input: .text("pw-one\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "add", "-s", "deploy", "-a", "ci", "-w"], input: .text("tok-1"))
        XCTAssertEqual(run.status, 0, run.summary)
        let admin = try server.connect(database: database)
        let older = try admin.execute("SELECT name, value FROM locket.meta WHERE name IN ('generation', 'header_mac', 'key_check')", [])
        let second = try machine()
        run = try locket(second, ["-k", url, "keychain", "enroll"])
        let id = try XCTUnwrap(run.out.split(separator: " ").dropFirst().first.map { String($0.dropLast()) }, run.summary)
        XCTAssertEqual(try locket(first, ["-k", url, "keychain", "approve", id, "--fingerprint", Machines.fingerprint(run.out), "--groups", "default"]).status, 0)
        run = try locket(first, ["-k", url, "keychain", "revoke", id])
        XCTAssertEqual(run.status, 0, run.summary)
        for row in older { try admin.execute("UPDATE locket.meta SET value = $2 WHERE name = $1", [.text(row[0].text!), .bytes(row[1].bytes!)]) }

        run = try locket(first, ["-k", url, "find", "-s", "deploy", "-w"])
        XCTAssertEqual(run.status, 93, run.summary)
        XCTAssertEqual(run.out, "", run.summary)
        XCTAssert(run.err.contains("was rolled back"), run.summary)
        XCTAssert(run.err.contains("restore --accept-rollback"), run.summary)
        XCTAssert(run.err.contains("keychain recover"), "every rollback's hint names the recovery (issue 42): \(run.summary)")
        run = try locket(first, ["-k", url, "restore", "--accept-rollback", "--password-stdin"], input: .text("wrong\n"))
        XCTAssertEqual(run.status, 51, "a wrong password accepts nothing: \(run.summary)")
        run = try locket(first, ["-k", url, "restore", "--accept-rollback", "--password-stdin"], input: .text("pw-one\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssert(run.err.contains("older header") && run.err.contains("keychain recover"),
                  "what restore does and does not do for a remote keychain: \(run.summary)")
        run = try locket(first, ["-k", url, "unlock", "--password-stdin"], input: .text("pw-one\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "find", "-s", "deploy", "-w"])
        XCTAssertEqual(run.out, "tok-1\n", run.summary)
    }

    /// The Security module (SPEC §19) names its keychain through the same
    /// locator (`LOCKET_KEYCHAIN=postgres://...`) and opens it through the
    /// same `Keychain.open`: a program's SecItem calls on a remote keychain,
    /// and the command line on another process sees what they did.
    func testTheSecurityModuleUsesARemoteKeychainNamedByItsURL() throws {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let host = (exe as NSString).deletingLastPathComponent + "/SecurityTestHost"
        guard FileManager.default.isExecutableFile(atPath: host) else { throw XCTSkip("SecurityTestHost is not built next to the tests") }
        let server = try running()
        let url = server.socketURL(try server.makeDatabase())
        let first = try machine()
        var run = try locket(first, ["-k", url, "init", "--password-stdin", "--kdf", "interactive"], input: .text("pw-one\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "add", "-s", "deploy", "-a", "ci", "-w"], input: .text("tok-1"))
        XCTAssertEqual(run.status, 0, run.summary)
        var environment = first.environment
        environment["LOCKET_KEYCHAIN"] = url
        let read = Spawn.run(host, ["read", "deploy", "ci"], environment: environment, input: .devNull, timeout: 60)
        XCTAssertEqual(read.out, "tok-1\n", read.summary)
        // Adds w-0 ... w-3, reads each back, updates w-0 and w-2, deletes w-0.
        let worker = Spawn.run(host, ["worker", "w", "8"], environment: environment, input: .devNull, timeout: 120)
        XCTAssertEqual(worker.out, "ok 11\n", worker.summary)
        run = try locket(first, ["-k", url, "find", "-s", "workers", "-a", "w-2", "-w"])
        XCTAssertEqual(run.out, "u2\n", run.summary)
        run = try locket(first, ["-k", url, "find", "-s", "workers", "-a", "w-1", "-w"])
        XCTAssertEqual(run.out, "v1\n", run.summary)
        run = try locket(first, ["-k", url, "find", "-s", "workers", "-a", "w-0"])
        XCTAssertEqual(run.status, 44, run.summary)
        // A machine that never unlocked it: the module's call fails as the command would.
        let second = try machine()
        environment = second.environment
        environment["LOCKET_KEYCHAIN"] = url
        let locked = Spawn.run(host, ["read", "deploy", "ci"], environment: environment, input: .devNull, timeout: 60)
        XCTAssertEqual(locked.out, "status -25308\n", locked.summary)
    }
}
