import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 6 item 1 (SPEC §7): eight processes adding, updating, finding and
/// deleting in one keychain at once, distinct and overlapping primary keys,
/// while a ninth locks and unlocks it in a loop. Afterwards nothing is lost
/// or duplicated, no errSecDuplicateItem came where none was due, the file
/// passes `PRAGMA integrity_check`, and SQLite's locking never reached a user.
final class EndToEndReliabilityConcurrencyTests: EndToEndCase {
    /// The shared (overlapping) primary keys every worker fights over.
    static let sharedKeys = (0..<6).map { "shared-\($0)" }
    static let account = "conc"

    /// What one worker did and saw. Only its own thread writes it, until the join.
    final class WorkerLog: @unchecked Sendable {
        /// Its own keys and their current tag: the exact model of what the keychain must hold.
        var own: [String: String] = [:]
        /// Keys it once had and deleted.
        var gone: [String] = []
        /// Per shared key: successful adds and deletes, tags successfully written (add or update), secrets read.
        var sharedAdds: [String: Int] = [:]
        var sharedDeletes: [String: Int] = [:]
        var sharedWrites: [String: Set<String>] = [:]
        var sharedReads: [String: [String]] = [:]
        /// op -> status -> count
        var outcomes: [String: [Int32: Int]] = [:]
        var failures: [String] = []
        var scans = 0
        var seq = 0
        /// When each errSecInteractionNotAllowed came (start, end of the command); for the
        /// locker, the windows from the start of `lock` to the end of the next `unlock`.
        var lockedResults: [(Double, Double, String)] = []
        var lockedWindows: [(Double, Double)] = []

        func count(_ op: String, _ status: Int32?) {
            outcomes[op, default: [:]][status ?? -1, default: 0] += 1
        }

        func fail(_ message: String) {
            if failures.count < 25 { failures.append(message) }
        }
    }

    func testEightWritersAndALockerLoseNothing() throws {
        initKeychain()
        let duration = ReliabilityScale.seconds(25)
        let workers = 8
        let binary = self.binary!
        let environment = sandbox.environment
        let password = Self.password
        let logs = (0..<workers).map { _ in WorkerLog() }
        let lockerLog = WorkerLog()
        let seed = ReliabilityScale.seed
        let started = ReliabilityClock.now()
        let deadline = started + duration

        reliabilityParallel(workers + 1) { index in
            if index == workers {
                Self.lockerLoop(binary, environment, password, deadline, lockerLog, seed: seed)
            } else {
                Self.workerLoop(index, binary, environment, deadline, logs[index], seed: seed &+ UInt64(index) &* 7919)
            }
        }
        let elapsed = ReliabilityClock.now() - started

        // Reconcile with the keychain's own view.
        let unlocked = locket("unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(unlocked.status, 0, unlocked.summary)
        let dump = locket("--json", "dump", "--data")
        XCTAssertEqual(dump.status, 0, dump.summary)
        let items = try dump.jsonArray()
        var present: [String: [String: Any]] = [:]
        for item in items {
            let service = item["service"] as? String ?? "<none>"
            XCTAssertNil(present[service], "duplicated item \(service)")
            present[service] = item
            // Secret and comment are written together: a mismatch is a torn write.
            let comment = item["comment"] as? String ?? ""
            XCTAssertEqual(item["data"] as? String, "secret-" + comment, "item \(service): secret and attributes disagree")
            XCTAssertEqual(item["account"] as? String, Self.account)
        }

        var expected: Set<String> = []
        for (w, log) in logs.enumerated() {
            for failure in log.failures { XCTFail("worker \(w): \(failure)") }
            for (service, tag) in log.own {
                expected.insert(service)
                guard let item = present[service] else {
                    XCTFail("lost item \(service) (worker \(w) added it and never deleted it)")
                    continue
                }
                XCTAssertEqual(item["comment"] as? String, tag, "item \(service) is not in its last written state")
            }
            for service in log.gone where log.own[service] == nil {
                XCTAssertNil(present[service], "item \(service) came back after its delete succeeded")
            }
        }
        for failure in lockerLog.failures { XCTFail("locker: \(failure)") }
        // errSecInteractionNotAllowed only while the locker had the keychain locked.
        var unexplained = 0
        for log in logs {
            for (start, end, what) in log.lockedResults
            where !lockerLog.lockedWindows.contains(where: { start <= $0.1 && end >= $0.0 }) {
                unexplained += 1
                if unexplained <= 5 { XCTFail("errSecInteractionNotAllowed outside every locked window: \(what)") }
            }
        }

        var sharedSummary: [String] = []
        for key in Self.sharedKeys {
            let adds = logs.reduce(0) { $0 + ($1.sharedAdds[key] ?? 0) }
            let deletes = logs.reduce(0) { $0 + ($1.sharedDeletes[key] ?? 0) }
            let writes = logs.reduce(into: Set<String>()) { $0.formUnion($1.sharedWrites[key] ?? []) }
            let exists = present[key] != nil
            // Adds succeed only when absent and deletes only when present, so they
            // alternate: their difference is whether the item exists now.
            XCTAssertEqual(adds - deletes, exists ? 1 : 0,
                           "\(key): \(adds) successful adds, \(deletes) successful deletes, exists now: \(exists)")
            if let item = present[key] {
                let tag = item["comment"] as? String ?? ""
                XCTAssertTrue(writes.contains(tag), "\(key) holds \(tag), which no successful command wrote")
            }
            for log in logs {
                for read in log.sharedReads[key] ?? [] {
                    XCTAssertTrue(writes.contains(read), "\(key): a find returned \(read), which no successful command wrote")
                }
            }
            sharedSummary.append("\(adds)/\(deletes)")
            expected.insert(key)
        }
        for service in present.keys where !expected.contains(service) {
            XCTFail("unexpected item \(service) in the keychain")
        }
        XCTAssertEqual(ReliabilityDatabase.integrity(sandbox.loginKeychain), "ok")

        var merged: [String: [Int32: Int]] = [:]
        for log in logs + [lockerLog] {
            for (op, statuses) in log.outcomes {
                for (status, n) in statuses { merged[op, default: [:]][status, default: 0] += n }
            }
        }
        let total = merged.values.reduce(0) { $0 + $1.values.reduce(0, +) }
        var figures: [(String, String)] = [
            ("seed", String(ReliabilityScale.seed)), ("seconds", String(format: "%.1f", elapsed)),
            ("processes", String(workers + 1)), ("commands", String(total)),
            ("items_at_end", String(items.count)), ("scans", String(logs.reduce(0) { $0 + $1.scans })),
            ("shared_adds/deletes", sharedSummary.joined(separator: " ")),
            ("integrity", "ok"), ("errSecInteractionNotAllowed_outside_locked_windows", String(unexplained)),
        ]
        for op in merged.keys.sorted() {
            figures.append((op, ReliabilityReport.tally(Dictionary(uniqueKeysWithValues: merged[op]!.map { (String($0.key), $0.value) }))))
        }
        ReliabilityReport.print("concurrency", figures)
    }

    /// The narrow version of the above: readers racing a tight lock/unlock
    /// loop. `lock` must never make a concurrent reader see a damaged
    /// session: a reader gets the secret (unlocked) or 36 (locked), nothing else.
    func testReadersRacingLockNeverSeeADamagedSession() throws {
        initKeychain()
        add("-s", "svc", "-a", "me", secret: "race-secret")
        let duration = ReliabilityScale.seconds(6)
        let binary = self.binary!
        let environment = sandbox.environment
        let password = Self.password
        let readers = 4
        let logs = (0...readers).map { _ in WorkerLog() }
        let deadline = ReliabilityClock.now() + duration
        reliabilityParallel(readers + 1) { index in
            let log = logs[index]
            while ReliabilityClock.now() < deadline {
                if index == readers {
                    _ = Self.check(Spawn.run(binary, ["lock"], environment: environment, input: .devNull, timeout: 30), "lock", allowed: [0], log)
                    _ = Self.check(Spawn.run(binary, ["unlock", "--password-stdin"], environment: environment,
                                             input: .text(password + "\n"), timeout: 30), "unlock", allowed: [0], log)
                } else {
                    let r = Spawn.run(binary, ["find", "-s", "svc", "-a", "me", "-w", "-n"], environment: environment, input: .devNull, timeout: 30)
                    if Self.check(r, "find", allowed: [0, 36], log) == 0 && r.out != "race-secret" {
                        log.fail("find printed \(r.out.prefix(80))")
                    }
                }
            }
        }
        var merged: [String: [Int32: Int]] = [:]
        for log in logs {
            for failure in log.failures { XCTFail(failure) }
            for (op, statuses) in log.outcomes { for (status, n) in statuses { merged[op, default: [:]][status, default: 0] += n } }
        }
        ReliabilityReport.print("concurrency-lock-race", [("seconds", String(format: "%.0f", duration))] + merged.keys.sorted().map { op in
            (op, ReliabilityReport.tally(Dictionary(uniqueKeysWithValues: merged[op]!.map { (String($0.key), $0.value) })))
        })
    }

    // MARK: - The workers

    /// Checks what every command must satisfy and counts its outcome.
    private static func check(_ result: RunResult, _ op: String, allowed: Set<Int32>, _ log: WorkerLog) -> Int32? {
        log.count(op, result.status)
        if result.status == 36 {
            let end = ReliabilityClock.now()
            log.lockedResults.append((end - result.duration, end, "\(op): \(result.summary)"))
        }
        if result.timedOut { log.fail("timed out: \(result.summary)") }
        if result.signal != nil { log.fail("killed by a signal: \(result.summary)") }
        if result.err.contains("Fatal error") { log.fail("crashed: \(result.summary)") }
        if ReliabilityOutput.mentionsBusy(result.err) { log.fail("SQLite locking reached the user: \(result.summary)") }
        if let status = result.status, !allowed.contains(status) { log.fail("unexpected status in \(op): \(result.summary)") }
        return result.status
    }

    private static func workerLoop(_ w: Int, _ binary: String, _ environment: [String: String], _ deadline: Double,
                                   _ log: WorkerLog, seed: UInt64) {
        var rng = ReliabilityRandom(seed: seed)
        func run(_ args: [String], secret: String? = nil) -> RunResult {
            Spawn.run(binary, args, environment: environment, input: secret.map { .text($0 + "\n") } ?? .devNull, timeout: 30)
        }
        func newTag() -> String {
            log.seq += 1
            return "w\(w)t\(log.seq)"
        }
        let account = Self.account
        var next = 0
        while ReliabilityClock.now() < deadline {
            let roll = Int(rng.next() % 100)
            let ownKeys = log.own.keys.sorted()
            let someOwn = ownKeys.isEmpty ? nil : ownKeys[Int(rng.next() % UInt64(ownKeys.count))]
            let shared = Self.sharedKeys[Int(rng.next() % UInt64(Self.sharedKeys.count))]
            switch roll {
            case 0..<22:
                // A new key of its own: only 0, or 36 while the locker has the keychain locked.
                let key = "w\(w)-k\(next)"
                next += 1
                let tag = newTag()
                let r = run(["add", "-s", key, "-a", account, "-j", tag, "-w"], secret: "secret-" + tag)
                if check(r, "add", allowed: [0, 36], log) == 0 { log.own[key] = tag }
            case 22..<26:
                // One of its own that exists: the only errSecDuplicateItem that is due.
                guard let key = someOwn else { continue }
                let tag = newTag()
                _ = check(run(["add", "-s", key, "-a", account, "-j", tag, "-w"], secret: "secret-" + tag),
                          "add-duplicate", allowed: [45, 36], log)
            case 26..<29:
                // add -U: inserts or updates.
                let key = someOwn ?? "w\(w)-k\(next)"
                if someOwn == nil { next += 1 }
                let tag = newTag()
                let r = run(["add", "-U", "-s", key, "-a", account, "-j", tag, "-w"], secret: "secret-" + tag)
                if check(r, "add-U", allowed: [0, 36], log) == 0 { log.own[key] = tag }
            case 29..<42:
                guard let key = someOwn else { continue }
                let tag = newTag()
                let r = run(["update", "-s", key, "-a", account, "--set", "comment=" + tag, "-w"], secret: "secret-" + tag)
                if check(r, "update", allowed: [0, 36], log) == 0 { log.own[key] = tag }
            case 42..<51:
                // Deleting needs no class key: it works while locked.
                guard let key = someOwn else { continue }
                if check(run(["delete", "-s", key, "-a", account]), "delete", allowed: [0], log) == 0 {
                    log.own[key] = nil
                    log.gone.append(key)
                }
            case 51..<53:
                guard let key = log.gone.last, log.own[key] == nil else { continue }
                _ = check(run(["delete", "-s", key, "-a", account]), "delete-missing", allowed: [44], log)
            case 53..<64:
                guard let key = someOwn else { continue }
                let r = run(["find", "-s", key, "-a", account, "-w", "-n"])
                if check(r, "find", allowed: [0, 36], log) == 0, r.out != "secret-" + log.own[key]! {
                    log.fail("find \(key) printed \(r.out.prefix(80)), expected secret-\(log.own[key]!)")
                }
            case 64..<73:
                let tag = newTag()
                let r = run(["add", "-s", shared, "-a", account, "-j", tag, "-w"], secret: "secret-" + tag)
                if check(r, "shared-add", allowed: [0, 45, 36], log) == 0 {
                    log.sharedAdds[shared, default: 0] += 1
                    log.sharedWrites[shared, default: []].insert(tag)
                }
            case 73..<82:
                let tag = newTag()
                let r = run(["update", "-s", shared, "-a", account, "--set", "comment=" + tag, "-w"], secret: "secret-" + tag)
                if check(r, "shared-update", allowed: [0, 44, 36], log) == 0 {
                    log.sharedWrites[shared, default: []].insert(tag)
                }
            case 82..<89:
                if check(run(["delete", "-s", shared, "-a", account]), "shared-delete", allowed: [0, 44], log) == 0 {
                    log.sharedDeletes[shared, default: 0] += 1
                }
            case 89..<96:
                let r = run(["find", "-s", shared, "-a", account, "-w", "-n"])
                if check(r, "shared-find", allowed: [0, 44, 36], log) == 0 {
                    guard r.out.hasPrefix("secret-") else { log.fail("shared find printed \(r.out.prefix(80))"); continue }
                    log.sharedReads[shared, default: []].append(String(r.out.dropFirst("secret-".count)))
                }
            default:
                // A reader scanning everything while others write: every item it sees is whole.
                let r = run(["--json", "find", "-a", account, "--all", "-g"])
                if check(r, "scan", allowed: [0, 44, 36], log) == 0 {
                    log.scans += 1
                    guard let items = (try? r.json()) as? [[String: Any]] else { log.fail("scan output is not JSON: \(r.out.prefix(200))"); continue }
                    for item in items where item["data"] as? String != "secret-" + (item["comment"] as? String ?? "?") {
                        log.fail("scan saw a torn item: \(item)")
                    }
                }
            }
        }
    }

    private static func lockerLoop(_ binary: String, _ environment: [String: String], _ password: String, _ deadline: Double,
                                   _ log: WorkerLog, seed: UInt64) {
        var rng = ReliabilityRandom(seed: seed ^ 0x5eed)
        while ReliabilityClock.now() < deadline {
            let windowStart = ReliabilityClock.now()
            let locked = Spawn.run(binary, ["lock"], environment: environment, input: .devNull, timeout: 30)
            _ = check(locked, "lock", allowed: [0], log)
            ReliabilityClock.sleep(milliseconds: Double(50 + rng.next() % 250))
            let unlocked = Spawn.run(binary, ["unlock", "--password-stdin"], environment: environment,
                                     input: .text(password + "\n"), timeout: 30)
            _ = check(unlocked, "unlock", allowed: [0], log)
            log.lockedWindows.append((windowStart, ReliabilityClock.now()))
            ReliabilityClock.sleep(milliseconds: Double(200 + rng.next() % 600))
        }
    }
}
