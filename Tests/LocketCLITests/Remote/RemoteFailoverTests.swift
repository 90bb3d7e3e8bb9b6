import Foundation
import LocketCore
import LocketTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A fleet through a PostgreSQL failover (issue 42, docs/REMOTE.md
/// "Replication and failover"): a private primary and a `pg_basebackup -R`
/// streaming standby on loopback, three devices running the binary, the
/// primary killed with SIGKILL and the standby promoted. Synchronous: nothing
/// acknowledged is lost and every device goes on through a multi-host URL.
/// Asynchronous, with replication held back first: the devices that saw the
/// lost writes refuse, `keychain recover` brings each back and says what was
/// lost, and a revocation made meanwhile is not undone. On the way: each URL
/// form that selects among hosts, a standby named as such (and the offline
/// cache standing in for it), a named remote re-pointed.
final class RemoteFailoverTests: XCTestCase {
    private let machines = Machines()
    private var primary: PostgresServer?

    override func tearDown() {
        machines.removeAll()
        primary?.stop()
    }

    private func locket(_ sandbox: Sandbox, _ arguments: [String], input: Input = .devNull) throws -> RunResult {
        try Machines.locket(sandbox, arguments, input: input)
    }

    /// A primary with a database and a streaming standby; the seconds it took.
    private func startPair(synchronous: Bool) throws -> (primary: PostgresServer, standby: PostgresServer, database: String, seconds: Double) {
        let started = Date()
        let primary = try Postgres.makePrivate()
        self.primary = primary
        let database = try primary.makeDatabase()
        let standby = try Postgres.skipping { try primary.startStandby(synchronous: synchronous) }
        return (primary, standby, database, Date().timeIntervalSince(started))
    }

    /// A libpq password file for TCP (the servers ask for scram there; sockets trust).
    private func passfile(_ server: PostgresServer, _ sandbox: Sandbox) throws -> String {
        let path = sandbox.root + "/pgpass"
        try Data("*:*:*:\(PostgresServer.user):\(server.password)\n".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        return path
    }

    /// A device: unlocked, enrolled as `name`, approved by `admin` for the default group.
    private func device(_ name: String, _ url: String, admin: Sandbox, password: String) throws -> (Sandbox, String) {
        let sandbox = try machines.make()
        var run = try locket(sandbox, ["-k", url, "unlock", "--password-stdin"], input: .text(password + "\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(sandbox, ["-k", url, "keychain", "enroll", "--name", name])
        XCTAssertEqual(run.status, 0, run.summary)
        let id = try XCTUnwrap(run.out.split(separator: " ").dropFirst().first.map { String($0.dropLast()) }, run.summary)
        let approve = try locket(admin, ["-k", url, "keychain", "approve", id, "--fingerprint", Machines.fingerprint(run.out), "--groups", "default"])
        XCTAssertEqual(approve.status, 0, approve.summary)
        return (sandbox, id)
    }

    /// The services of every item `sandbox` lists.
    private func services(_ sandbox: Sandbox, _ url: String) throws -> Set<String> {
        let run = try locket(sandbox, ["-k", url, "--json", "dump"])
        XCTAssertEqual(run.status, 0, run.summary)
        return Set(try run.jsonArray().compactMap { $0["service"] as? String })
    }

    func testASynchronousFailoverLosesNothingAndEveryDeviceGoesOn() throws {
        let (primary, standby, database, setup) = try startPair(synchronous: true)
        let admin = try machines.make()
        let pass = try passfile(primary, admin)
        let tls = "sslrootcert=\(primary.caCertificate)&passfile=\(pass)"
        // The URL forms that select among hosts, the standby named first each time.
        let hostList = "postgresql://\(PostgresServer.user)@localhost:\(standby.port),localhost:\(primary.port)/\(database)?target_session_attrs=read-write&\(tls)"
        let socketList = "postgres:///\(database)?host=\(standby.socket),\(primary.socket)&port=\(standby.port),\(primary.port)&user=\(PostgresServer.user)&target_session_attrs=primary"
        let inOrder = "postgresql://\(PostgresServer.user)@localhost:\(primary.port),localhost:\(standby.port)/\(database)?\(tls)"
        let standbyAlone = "postgres://\(PostgresServer.user)@localhost:\(standby.port)/\(database)?\(tls)"
        var run = try locket(admin, ["-k", hostList, "init", "--password-stdin", "--kdf", "interactive"], input: .text("fleet-pw\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(admin, ["-k", hostList, "add", "-s", "before", "-a", "ci", "--accessible", "after-first-unlock", "-w"], input: .text("v0"))
        XCTAssertEqual(run.status, 0, run.summary)
        for url in [socketList, inOrder] {
            run = try locket(admin, ["-k", url, "find", "-s", "before", "-w"])
            XCTAssertEqual(run.out, "v0\n", "\(url): \(run.summary)")
        }
        run = try locket(admin, ["-k", hostList + "&load_balance_hosts=random", "find", "-s", "before", "-w"])
        XCTAssert(run.status == 0 ? run.out == "v0\n" : run.status == 53 && run.err.contains("does not know the connection keyword 'load_balance_hosts'"),
                  "load_balance_hosts works where libpq has it (16 on), and is refused by name where it doesn't: \(run.summary)")
        // A standby named alone: said so, and not available (exit 53), with what to do.
        run = try locket(admin, ["-k", standbyAlone, "find", "-s", "before", "-w"])
        XCTAssertEqual(run.status, 53, run.summary)
        XCTAssert(run.err.contains("read-only standby, not the primary") && run.err.contains("target_session_attrs=read-write"), run.summary)
        // A named remote on the primary alone, re-pointed after the failover.
        XCTAssertEqual(try locket(admin, ["keychain", "add-remote", "fleet", "postgres:///\(database)?host=\(primary.socket)&port=\(primary.port)"]).status, 0)
        run = try locket(admin, ["-k", inOrder, "keychain", "sync"])
        XCTAssertEqual(run.status, 0, run.summary)

        let (second, _) = try device("second", hostList, admin: admin, password: "fleet-pw")
        let (third, _) = try device("third", hostList, admin: admin, password: "fleet-pw")

        // Two devices add while the primary is killed and the standby promoted.
        let tally = Tally()
        let writers = DispatchGroup()
        for (index, machine) in [second, third].enumerated() {
            // Each thread runs its own device's commands; the sandbox is only read.
            nonisolated(unsafe) let sandbox = machine
            DispatchQueue.global().async(group: writers) {
                var afterPromotion = 0
                for round in 0..<400 where afterPromotion < 3 {
                    let service = "w\(index)-\(round)"
                    guard let result = try? Machines.locket(sandbox, ["-k", hostList, "add", "-s", service, "-a", "ci", "-w"], input: .text("s")) else { continue }
                    let promoted = tally.record(service, result)
                    if promoted && result.status == 0 { afterPromotion += 1 }
                }
            }
        }
        while tally.acknowledged.count < 6 { usleep(20_000) }
        try primary.killNow()
        // Between the kill and the promotion the URL finds only a standby: not available, and the cache stands in.
        run = try locket(admin, ["-k", inOrder, "find", "-s", "before", "-w"])
        XCTAssertEqual(run.status, 53, run.summary)
        XCTAssert(run.err.contains("read-only standby"), run.summary)
        run = try locket(admin, ["-k", inOrder, "--max-stale", "1h", "find", "-s", "before", "-w"])
        XCTAssertEqual(run.out, "v0\n", "--max-stale reads the cache while only a standby answers: \(run.summary)")
        XCTAssert(run.err.contains("offline"), run.summary)
        try standby.promote()
        tally.promote()
        writers.wait()

        let written = Set(tally.acknowledged)
        let failures = tally.failures
        let present = try services(admin, hostList)
        XCTAssertEqual(written.subtracting(present), [], "every acknowledged add is on the new primary")
        for result in failures {
            XCTAssert([53, 220].contains(result.status ?? 0), "a failed add says it could not reach the primary or was cut off: \(result.summary)")
        }
        // Every device reads and writes on the new primary with the same URL, no rollback alarm.
        var refused = 0
        for (index, sandbox) in [admin, second, third].enumerated() {
            run = try locket(sandbox, ["-k", hostList, "add", "-s", "after-\(index)", "-a", "ci", "-w"], input: .text("a\(index)"))
            XCTAssertEqual(run.status, 0, run.summary)
            run = try locket(sandbox, ["-k", hostList, "find", "-s", "before", "-w"])
            XCTAssertEqual(run.out, "v0\n", run.summary)
            if run.status == 93 { refused += 1 }
        }
        run = try locket(admin, ["-k", socketList, "find", "-s", "after-1", "-w"])
        XCTAssertEqual(run.out, "a1\n", run.summary)
        // The named remote: its primary is gone; re-pointed, it goes on with what this device trusted.
        run = try locket(admin, ["-k", "fleet", "find", "-s", "before", "-w"])
        XCTAssertEqual(run.status, 53, run.summary)
        run = try locket(admin, ["keychain", "add-remote", "fleet", hostList])
        XCTAssertEqual(run.status, 48, "a name in use is not replaced without --replace: \(run.summary)")
        run = try locket(admin, ["keychain", "add-remote", "--replace", "fleet", hostList])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(admin, ["-k", "fleet", "find", "-s", "after-2", "-w"])
        XCTAssertEqual(run.out, "a2\n", run.summary)
        print("failover figures (synchronous): acknowledged \(written.count), lost \(written.subtracting(present).count), refused \(refused), recovered 0; failed adds \(failures.count); setup \(String(format: "%.1f", setup)) s")
    }

    func testAnAsynchronousFailoverIsRecoveredWithoutUndoingARevocation() throws {
        let (primary, standby, database, setup) = try startPair(synchronous: false)
        let admin = try machines.make()
        let pass = try passfile(primary, admin)
        let url = "postgresql://\(PostgresServer.user)@localhost:\(primary.port),localhost:\(standby.port)/\(database)?target_session_attrs=read-write&sslrootcert=\(primary.caCertificate)&passfile=\(pass)"
        var run = try locket(admin, ["-k", url, "init", "--password-stdin", "--kdf", "interactive"], input: .text("fleet-pw\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(admin, ["-k", url, "add", "-s", "g1", "-a", "ci", "-w"], input: .text("v1"))
        XCTAssertEqual(run.status, 0, run.summary)
        let (member, _) = try device("member", url, admin: admin, password: "fleet-pw")
        let (leaver, leaverID) = try device("leaver", url, admin: admin, password: "fleet-pw")
        for sandbox in [member, leaver] {
            run = try locket(sandbox, ["-k", url, "find", "-s", "g1", "-w"])
            XCTAssertEqual(run.out, "v1\n", run.summary)
        }
        try primary.waitForStandby()
        try primary.pauseReplication()

        // The lag: acknowledged by the primary, never replicated.
        var acknowledged: [String] = []
        for index in 0..<4 {
            run = try locket(member, ["-k", url, "add", "-s", "lag-\(index)", "-a", "ci", "-w"], input: .text("l\(index)"))
            XCTAssertEqual(run.status, 0, run.summary)
            acknowledged.append("lag-\(index)")
        }
        run = try locket(admin, ["-k", url, "keychain", "revoke", leaverID])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(admin, ["-k", url, "add", "-s", "lag-admin", "-a", "ci", "-w"], input: .text("la"))
        XCTAssertEqual(run.status, 0, run.summary)
        acknowledged.append("lag-admin")
        run = try locket(member, ["-k", url, "find", "-s", "lag-admin", "-w"])
        XCTAssertEqual(run.out, "la\n", run.summary)

        try primary.killNow()
        try standby.promote()

        // The revoked device never saw its revocation: on the standby's older history it reads again (what recovery repairs).
        run = try locket(leaver, ["-k", url, "find", "-s", "g1", "-w"])
        XCTAssertEqual(run.out, "v1\n", "the failover lost the revocation: \(run.summary)")
        // The devices that saw the lost writes refuse, and the hint names the recovery.
        var refused = 0
        for sandbox in [admin, member] {
            run = try locket(sandbox, ["-k", url, "find", "-s", "g1", "-w"])
            XCTAssertEqual(run.status, 93, run.summary)
            XCTAssert(run.err.contains("keychain recover"), run.summary)
            if run.status == 93 { refused += 1 }
        }
        // restore --accept-rollback is for the header alone, and says what does the rest (issue 44 item 16).
        run = try locket(member, ["-k", url, "restore", "--accept-rollback", "--password-stdin"], input: .text("fleet-pw\n"))
        XCTAssertEqual(run.status, 93, run.summary)
        XCTAssert(run.err.contains("keychain recover"), run.summary)
        // Not agreed to, no terminal: what was lost is printed, nothing changes.
        run = try locket(member, ["-k", url, "keychain", "recover"])
        XCTAssertEqual(run.status, 36, run.summary)
        XCTAssert(run.out.contains("lost state") && run.out.contains("lost revocation: device \(leaverID)"), run.summary)
        XCTAssert(run.err.contains("--yes"), run.summary)
        XCTAssertEqual(try locket(member, ["-k", url, "find", "-s", "g1", "-w"]).status, 93)

        run = try locket(member, ["-k", url, "keychain", "recover", "--yes", "--password-stdin"], input: .text("fleet-pw\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        print("the member's keychain recover:\n" + run.out)
        XCTAssert(run.out.contains("device \(leaverID) revoked again"), run.summary)
        XCTAssert(run.out.contains("lost membership epoch") && run.out.contains("revoked device \(leaverID)"), run.summary)
        XCTAssert(run.out.contains("written by this device: items"), "the member's own lost adds, by reference: \(run.summary)")
        var recovered = 1
        run = try locket(admin, ["-k", url, "--json", "keychain", "recover", "--yes", "--password-stdin"], input: .text("fleet-pw\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        let report = try run.jsonObject()
        XCTAssertFalse((report["lostMembership"] as? [[String: Any]] ?? []).isEmpty, run.summary)
        XCTAssertEqual((report["revocations"] as? [Any])?.count, 0, "already re-applied by the member: \(run.summary)")
        recovered += 1

        // The revocation holds: the leaver reads nothing, not even what it could before; the others go on.
        run = try locket(admin, ["-k", url, "add", "-s", "after", "-a", "ci", "-w"], input: .text("af"))
        XCTAssertEqual(run.status, 0, run.summary)
        for service in ["after", "g1"] {
            run = try locket(leaver, ["-k", url, "find", "-s", service, "-w"])
            XCTAssertEqual(run.status, 36, run.summary)
            XCTAssertEqual(run.out, "", run.summary)
        }
        for sandbox in [admin, member] {
            run = try locket(sandbox, ["-k", url, "find", "-s", "after", "-w"])
            XCTAssertEqual(run.out, "af\n", run.summary)
        }
        let views = try [admin, member].map { try locket($0, ["-k", url, "keychain", "verify"]).out }
        XCTAssertEqual(views[0], views[1], "both devices see one history")
        let present = try services(admin, url)
        let lost = acknowledged.filter { !present.contains($0) }
        XCTAssertEqual(lost.count, acknowledged.count, "an asynchronous failover after a held-back standby loses what the lag held")
        print("failover figures (asynchronous): acknowledged \(acknowledged.count) adds and 1 revocation, lost \(lost.count) adds and the revocation, refused \(refused), recovered \(recovered) (revocation re-applied); setup \(String(format: "%.1f", setup)) s")
    }
}

/// What the writers of the synchronous failover saw, from their threads.
private final class Tally: @unchecked Sendable {
    private let lock = NSLock()
    private var written: [String] = []
    private var failed: [RunResult] = []
    private var promoted = false

    var acknowledged: [String] { lock.withLock { written } }
    var failures: [RunResult] { lock.withLock { failed } }

    func promote() { lock.withLock { promoted = true } }

    /// Records an add's outcome; whether the standby had been promoted by then.
    func record(_ service: String, _ result: RunResult) -> Bool {
        lock.withLock {
            if result.status == 0 { written.append(service) } else { failed.append(result) }
            return promoted
        }
    }
}
