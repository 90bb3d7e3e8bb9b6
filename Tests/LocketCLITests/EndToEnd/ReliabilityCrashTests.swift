import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 6 item 2 (SPEC §7): a locket process SIGKILLed at a random instant
/// during add, update, delete, passwd, unlock or lock leaves the keychain
/// consistent: it opens, `PRAGMA integrity_check` is ok, every item is in its
/// old or its new state (never a mix, never a lost unrelated item), exactly
/// one of the old and new passwords unlocks, and the session store either
/// works or clears with `lock --all` and unlock.
final class EndToEndReliabilityCrashTests: EndToEndCase {
    /// Kills that must land on a running process, per phase (scaled by LOCKET_SOAK).
    static let killTargets: [String: Int] = ["add": 60, "update": 60, "delete": 40, "passwd": 16, "rotate": 16, "session": 30, "init": 16]
    /// The random delay before the kill is uniform in 0...maxDelay milliseconds.
    static let maxDelay = 15.0
    static let account = "crash"

    struct State: Equatable, CustomStringConvertible {
        var comment: String
        var data: [UInt8]
        var description: String { "comment=\(comment) data=\(data.count) bytes \(data.prefix(8).map { String($0, radix: 16) })" }

        /// The data compared by memcmp: each check compares a 1 MiB item,
        /// which Array's == took a byte at a time in the debug build.
        static func == (a: State, b: State) -> Bool {
            a.comment == b.comment && a.data.count == b.data.count
                && a.data.withUnsafeBytes { x in b.data.withUnsafeBytes { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 } }
        }
    }

    private var scratch: String!
    private var rng = ReliabilityRandom(seed: ReliabilityScale.seed)
    private var password = EndToEndCase.password
    /// Per phase: trials, kills landed, processes that finished first, outcomes.
    private var tallies: [String: [String: Int]] = [:]
    /// Per phase: the longest delay (ms) at which a kill still found the process running.
    private var longestLanded: [String: Double] = [:]
    /// How long the last `killDuring` run lasted from its start, in milliseconds.
    private var lastRunMilliseconds = 0.0

    override func setUpWithError() throws {
        try super.setUpWithError()
        scratch = ReliabilityFiles.temporaryDirectory()
    }

    override func tearDown() {
        if let scratch { try? FileManager.default.removeItem(atPath: scratch) }
        super.tearDown()
    }

    // MARK: - Helpers

    private func note(_ phase: String, _ what: String) { tallies[phase, default: [:]][what, default: 0] += 1 }

    /// A data file of `count` random bytes; returns its path and contents.
    private func dataFile(_ name: String, _ count: Int) -> (String, [UInt8]) {
        let bytes = rng.bytes(count)
        let path = scratch + "/" + name
        ReliabilityFiles.write(path, bytes)
        return (path, bytes)
    }

    private func textFile(_ name: String, _ text: String) -> String {
        let path = scratch + "/" + name
        ReliabilityFiles.write(path, Array(text.utf8))
        return path
    }

    /// Starts `locket ARGS`, SIGKILLs it after a random 0–15 ms (or after
    /// `delay` ms), and reports whether the kill landed (false: it had already
    /// exited, with that status).
    private func killDuring(_ args: [String], stdin: String? = nil, phase: String, delay fixed: Double? = nil) -> (killed: Bool, status: Int32?) {
        guard let child = ReliabilityChild.spawn(binary, args, environment: sandbox.environment, stdin: stdin,
                                                 stderr: scratch + "/stderr") else {
            XCTFail("cannot spawn locket")
            return (false, nil)
        }
        // Uniform in 0...15 ms, narrowed to the operation's own length once it
        // is known (the longest delay a kill still landed at), so that most
        // kills land while the command runs rather than after it exited.
        let bound = (longestLanded[phase] ?? 0) > 0 && tallies[phase]?["trials", default: 0] ?? 0 >= 10
            ? min(Self.maxDelay, longestLanded[phase]! * 1.25 + 1) : Self.maxDelay
        let delay = fixed ?? Double(rng.next() % 1000) / 1000 * bound
        let started = ReliabilityClock.now()
        // Watched through the delay: a run that ends first gives its own
        // length to the aim (CommitAim.landed), not the kill's later instant.
        let ended = child.sleep(milliseconds: delay)
        child.kill()
        let exit = child.wait()
        lastRunMilliseconds = ((ended ?? ReliabilityClock.now()) - started) * 1000
        note(phase, "trials")
        if exit.signal == SIGKILL {
            note(phase, "killed")
            longestLanded[phase] = max(longestLanded[phase] ?? 0, delay)
            return (true, nil)
        }
        note(phase, "finished first")
        if exit.signal != nil { XCTFail("\(args) died of signal \(exit.signal!) before the kill") }
        let err = String(decoding: ReliabilityFiles.read(scratch + "/stderr") ?? [], as: UTF8.self)
        XCTAssertFalse(err.contains("Fatal error"), "\(args): \(err)")
        return (false, exit.status)
    }

    /// Every item as `class/service-or-server` -> state, through `dump --data`.
    private func items(file: StaticString = #filePath, line: UInt = #line) -> [String: State] {
        let result = locket(["--json", "dump", "--data"], file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        guard let array = (try? result.json()) as? [[String: Any]] else {
            XCTFail("dump is not a JSON array: \(result.summary)", file: file, line: line)
            return [:]
        }
        var out: [String: State] = [:]
        for item in array {
            let cls = item["class"] as? String ?? "?"
            let name = (cls == "inet" ? item["server"] : item["service"]) as? String ?? "?"
            let key = cls + "/" + name
            XCTAssertNil(out[key], "\(key) appears twice", file: file, line: line)
            out[key] = State(comment: item["comment"] as? String ?? "", data: ReliabilityOutput.secret(item) ?? [0xde, 0xad])
        }
        return out
    }

    /// Checks the file and the items: `fixed` exactly, plus `inFlight` in one of `allowed` (nil: absent).
    /// Returns the in-flight item's state.
    @discardableResult
    private func verify(_ fixed: [String: State], inFlight: [String] = [], allowed: [[State?]] = [], phase: String,
                        file: StaticString = #filePath, line: UInt = #line) -> [State?] {
        XCTAssertEqual(ReliabilityDatabase.integrity(sandbox.loginKeychain), "ok", phase, file: file, line: line)
        var now = items(file: file, line: line)
        for (key, state) in fixed {
            XCTAssertEqual(now[key], state, "\(phase): unrelated item \(key) changed or was lost", file: file, line: line)
            now[key] = nil
        }
        let observed = inFlight.map { now.removeValue(forKey: $0) }
        XCTAssertTrue(inFlight.isEmpty || allowed.contains { $0 == observed },
                      "\(phase): \(inFlight) are \(observed), neither the old nor the new state \(allowed)", file: file, line: line)
        XCTAssertEqual(Array(now.keys), [], "\(phase): unexpected items", file: file, line: line)
        return observed
    }

    /// The items every test starts with: three small, one after-first-unlock, one of 1 MiB, one internet password.
    private func baseItems() -> [String: State] {
        initKeychain()
        var base: [String: State] = [:]
        for i in 0..<3 {
            let (path, bytes) = dataFile("keep-\(i)", 24)
            reliableOK(["add", "-s", "keep-\(i)", "-a", Self.account, "-j", "k\(i)", "--data-file", path])
            base["genp/keep-\(i)"] = State(comment: "k\(i)", data: bytes)
        }
        let (ckPath, ck) = dataFile("keep-ck", 40)
        reliableOK(["add", "-s", "keep-ck", "-a", Self.account, "-j", "ck", "--accessible", "after-first-unlock", "--data-file", ckPath])
        base["genp/keep-ck"] = State(comment: "ck", data: ck)
        let (bigPath, big) = dataFile("keep-big", 1 << 20)
        reliableOK(["add", "-s", "keep-big", "-a", Self.account, "-j", "big", "--data-file", bigPath])
        base["genp/keep-big"] = State(comment: "big", data: big)
        let (inetPath, inet) = dataFile("keep-inet", 16)
        reliableOK(["add", "--class", "inet", "-s", "keep.example.com", "-a", Self.account, "-j", "inet", "--data-file", inetPath])
        base["inet/keep.example.com"] = State(comment: "inet", data: inet)
        return base
    }

    private func report(_ test: String) {
        var figures: [(String, String)] = [("seed", String(ReliabilityScale.seed))]
        for phase in longestLanded.keys.sorted() {
            figures.append(("\(phase)_longest_landed_ms", String(format: "%.1f", longestLanded[phase]!)))
        }
        for phase in tallies.keys.sorted() { figures.append((phase, ReliabilityReport.tally(tallies[phase]!))) }
        ReliabilityReport.print(test, figures)
    }

    private func target(_ phase: String) -> Int { ReliabilityScale.n(Self.killTargets[phase]!) }

    /// Kill delays for a command that starts with Argon2id (tens of
    /// milliseconds at the binary's lowest cost), where a kill in 0–15 ms
    /// always lands in the hash: one trial in four anywhere in the run, the
    /// others around the instant it commits, which the aim finds as it goes
    /// (later after a kill that landed before the commit, earlier after one
    /// that landed after it or came too late), so that both sides are hit.
    private struct CommitAim {
        var aim: Double
        let typical: Double

        init(typical: Double) {
            self.typical = typical
            aim = typical
        }

        func delay(_ rng: inout ReliabilityRandom) -> Double {
            let fraction = Double(rng.next() % 1000) / 1000
            if rng.next() % 4 == 0 { return fraction * typical }
            // What follows the commit (the mirror, the session, the checkpoint) takes 1-2 ms.
            return max(0, aim - 3 + fraction * 4.5)
        }

        /// A run that finished first moves the aim back faster: the first
        /// measurement may have been slow (a cold cache, a busy machine);
        /// and to before the end it was seen at (`took`, from its start),
        /// when that is earlier: on a machine whose load changed since the
        /// measurement, 3 ms a trial took up to 4 times the trials (and their
        /// Argon2id hashes) that the kills needed.
        mutating func landed(beforeCommit: Bool, finished: Bool = false, took: Double? = nil) {
            aim += beforeCommit ? 1 : (finished ? -3 : -1)
            if finished, let took { aim = max(0, min(aim, took - 3)) }
        }
    }

    /// How long `locket ARGS` takes here, run to completion (milliseconds);
    /// nil when it fails (the test then stops rather than loop on a broken command).
    private func timed(_ args: [String], input: String) -> Double? {
        let started = ReliabilityClock.now()
        let result = reliableOK(args, input: .text(input))
        return result.status == 0 ? (ReliabilityClock.now() - started) * 1000 : nil
    }

    // MARK: - add, update, delete

    func testKillsDuringAddUpdateAndDeleteLeaveOldOrNewState() throws {
        var base = baseItems()
        let started = ReliabilityClock.now()

        // add: the new item is absent or whole; 1 MiB secrets widen the window.
        var trial = 0
        while tallies["add"]?["killed", default: 0] ?? 0 < target("add") && trial < 4 * target("add") {
            trial += 1
            let (path, bytes) = dataFile("new", trial % 3 == 0 ? 1 << 20 : 32)
            let key = "genp/new-\(trial)"
            let new = State(comment: "c\(trial)", data: bytes)
            let (killed, status) = killDuring(["add", "-s", "new-\(trial)", "-a", Self.account, "-j", "c\(trial)", "--data-file", path], phase: "add")
            let allowed: [[State?]] = killed ? [[nil], [new]] : (status == 0 ? [[new]] : [[nil]])
            if !killed { XCTAssertEqual(status, 0, "add finished with \(status.map(String.init) ?? "?")") }
            let seen = verify(base, inFlight: [key], allowed: allowed, phase: "add")
            if killed { note("add", seen == [nil] ? "old state" : "new state") }
            if seen != [nil] { reliableOK(["delete", "-s", "new-\(trial)", "-a", Self.account]) }
        }

        // update: one item, or three in one command (all or nothing), to a new comment and secret.
        let multi = (0..<3).map { "genp/multi-\($0)" }
        var single = State(comment: "v0", data: Array("upd-v0".utf8))
        reliableOK(["add", "-s", "upd", "-a", Self.account, "-j", "v0", "-w"], input: .text("upd-v0\n"))
        var group = State(comment: "m0", data: Array("multi-v0".utf8))
        for i in 0..<3 { reliableOK(["add", "-s", "multi-\(i)", "-a", "multi", "-j", "m0", "-w"], input: .text("multi-v0\n")) }
        base = items()
        base["genp/upd"] = nil
        for key in multi { base[key] = nil }
        trial = 0
        while tallies["update"]?["killed", default: 0] ?? 0 < target("update") && trial < 4 * target("update") {
            trial += 1
            let (path, bytes) = dataFile("upd", trial % 2 == 0 ? 1 << 20 : 48)
            let many = trial % 2 == 1
            let old = many ? group : single
            let new = State(comment: (many ? "m" : "v") + String(trial), data: bytes)
            let args = many ? ["update", "-a", "multi", "--set", "comment=" + new.comment, "--data-file", path]
                            : ["update", "-s", "upd", "-a", Self.account, "--set", "comment=" + new.comment, "--data-file", path]
            let (killed, status) = killDuring(args, phase: "update")
            if !killed { XCTAssertEqual(status, 0, "update finished with \(status.map(String.init) ?? "?")") }
            let keys = many ? multi : ["genp/upd"]
            let allOld = [State?](repeating: old, count: keys.count), allNew = [State?](repeating: new, count: keys.count)
            // The items this command does not touch keep their state.
            var fixed = base
            if many { fixed["genp/upd"] = single } else { for key in multi { fixed[key] = group } }
            let seen = verify(fixed, inFlight: keys, allowed: killed ? [allOld, allNew] : (status == 0 ? [allNew] : [allOld]),
                phase: many ? "update (3 items)" : "update")
            let now = seen.first.flatMap { $0 } ?? old
            if killed { note("update", now == old ? "old state" : "new state") }
            if many { group = now } else { single = now }
        }
        base["genp/upd"] = single
        for key in multi { base[key] = group }

        // delete: present and whole, or absent.
        trial = 0
        while tallies["delete"]?["killed", default: 0] ?? 0 < target("delete") && trial < 5 * target("delete") {
            trial += 1
            let (path, bytes) = dataFile("del", trial % 4 == 0 ? 1 << 20 : 20)
            reliableOK(["add", "-s", "del-\(trial)", "-a", Self.account, "-j", "d", "--data-file", path])
            let state = State(comment: "d", data: bytes)
            let (killed, status) = killDuring(["delete", "-s", "del-\(trial)", "-a", Self.account], phase: "delete")
            if !killed { XCTAssertEqual(status, 0, "delete finished with \(status.map(String.init) ?? "?")") }
            let seen = verify(base, inFlight: ["genp/del-\(trial)"],
                              allowed: killed ? [[state], [nil]] : (status == 0 ? [[nil]] : [[state]]), phase: "delete")
            if killed { note("delete", seen == [nil] ? "new state" : "old state") }
            if seen != [nil] { reliableOK(["delete", "-s", "del-\(trial)", "-a", Self.account]) }
        }
        tallies["seconds", default: [:]]["total"] = Int(ReliabilityClock.now() - started)
        report("crash-add-update-delete")
    }

    // MARK: - passwd

    func testKillsDuringPasswdLeaveExactlyOnePasswordWorking() throws {
        try killPasswordChanges(phase: "passwd", ["passwd"])
    }

    /// Issue 11 item 6: `passwd --rotate` replaces every class key and
    /// re-seals every item in one transaction. Killed at any point: exactly
    /// one of the old and new passwords unlocks, every item reads back with
    /// its secret, and the session is either the new keys or none (locked),
    /// never keys that open nothing.
    func testKillsDuringRotationLeaveOnePasswordEveryItemAndNoUselessSession() throws {
        try killPasswordChanges(phase: "rotate", ["passwd", "--rotate"])
    }

    private func killPasswordChanges(phase: String, _ command: [String]) throws {
        let base = baseItems()
        // The first change takes the in-process test keychain to the binary's
        // lowest cost; the shortest of the next two shows how long a change takes.
        var typical = Double.infinity
        for round in 0..<3 {
            let new = "pw-measure-\(round)"
            guard let took = timed(command, input: password + "\n" + new + "\n") else { return }
            password = new
            if round > 0 { typical = min(typical, took) }
        }
        tallies[phase, default: [:]]["typical_ms"] = Int(typical)
        var aim = CommitAim(typical: Double(tallies[phase]!["typical_ms"]!))
        var trial = 0
        while tallies[phase]?["killed", default: 0] ?? 0 < target(phase) && trial < 4 * target(phase) {
            trial += 1
            let new = "pw-\(trial)-\(rng.next() % 100_000)"
            let input = textFile("passwords", password + "\n" + new + "\n")
            let (killed, status) = killDuring(command, stdin: input, phase: phase, delay: aim.delay(&rng))
            if !killed { XCTAssertEqual(status, 0, "passwd finished with \(status.map(String.init) ?? "?")") }
            XCTAssertEqual(ReliabilityDatabase.integrity(sandbox.loginKeychain), "ok")
            // Whatever the session holds opens the items, or there is none.
            let probe = locket("find", "-s", "keep-0", "-w", "-n")
            XCTAssertTrue(probe.status == 36 || (probe.status == 0 && probe.stdout == base["genp/keep-0"]!.data),
                          "\(phase) killed: the session must be the right keys or none: \(probe.summary)")
            note(phase, probe.status == 0 ? "session usable" : "locked")

            let old = password
            // Both are tried, the one likelier to fail first (a killed run most
            // often left the old password: the kills aim just before the commit;
            // a finished one the new), so that the other's success resets the
            // count of wrong attempts: an unlock (an Argon2id hash) fewer than
            // resetting it afterwards, which only a wrong guess still needs.
            let newFirst = killed
            let first = locket("unlock", "--password-stdin", input: .text((newFirst ? new : old) + "\n"))
            let second = locket("unlock", "--password-stdin", input: .text((newFirst ? old : new) + "\n"))
            let (withOld, withNew) = newFirst ? (second, first) : (first, second)
            let opened = [withOld.status == 0, withNew.status == 0]
            XCTAssertEqual(opened.filter { $0 }.count, 1,
                           "exactly one password must unlock after passwd (killed: \(killed)): old -> \(withOld.summary)\nnew -> \(withNew.summary)")
            for result in [withOld, withNew] where result.status != 0 {
                XCTAssertEqual(result.status, 51, result.summary)
            }
            if !killed && status == 0 { XCTAssertEqual(opened, [false, true], "a finished passwd must have changed the password") }
            aim.landed(beforeCommit: killed && withNew.status != 0, finished: !killed, took: lastRunMilliseconds)
            if withNew.status == 0 {
                password = new
                if killed { note(phase, "new password") }
            } else if killed {
                note(phase, "old password")
            }
            if second.status != 0 {
                // The wrong attempt came last and counted as a failure: reset the counter.
                let again = locket("unlock", "--password-stdin", input: .text(password + "\n"))
                XCTAssertEqual(again.status, 0, again.summary)
            }
            verify(base, phase: phase)
        }
        tallies[phase, default: [:]]["final_aim_ms"] = Int(aim.aim)
        report("crash-" + phase)
    }

    // MARK: - The session store

    func testKillsDuringUnlockAndLockLeaveAUsableSession() throws {
        let base = baseItems()
        let sessionDirectory = sandbox.runtimeDir + "/locket"
        let secret = base["genp/keep-0"]!.data
        var trial = 0
        var leftovers: Set<String> = []
        while tallies["session"]?["killed", default: 0] ?? 0 < target("session") && trial < 5 * target("session") {
            trial += 1
            let killUnlock = trial % 2 == 1
            let before = locket(killUnlock ? ["lock"] : ["unlock", "--password-stdin"], input: .text(password + "\n"))
            XCTAssertEqual(before.status, 0, before.summary)
            let input = textFile("password", password + "\n")
            let (killed, status) = killDuring(killUnlock ? ["unlock", "--password-stdin"] : ["lock"], stdin: input, phase: "session")
            if !killed { XCTAssertEqual(status, 0) }
            let phase = killUnlock ? "unlock" : "lock"

            let found = locket("find", "-s", "keep-0", "-w", "-n")
            let outcome = killed ? "killed in \(phase), then" : "\(phase) finished, then"
            switch found.status {
            case 0:
                XCTAssertEqual(found.stdout, secret)
                note("session", "\(outcome) unlocked")
            case 36:
                note("session", "\(outcome) locked")
            case 93 where found.err.contains("session"):
                note("session", "\(outcome) damaged session")
                // The hint says this clears it.
                let cleared = locket("lock", "--all")
                XCTAssertEqual(cleared.status, 0, "lock --all must clear a damaged session: \(cleared.summary)")
            default:
                XCTFail("after a kill during \(phase): \(found.summary)")
            }
            for name in (try? FileManager.default.contentsOfDirectory(atPath: sessionDirectory)) ?? [] where name.contains(".tmp") {
                leftovers.insert(name)
            }
            let unlocked = locket("unlock", "--password-stdin", input: .text(password + "\n"))
            XCTAssertEqual(unlocked.status, 0, unlocked.summary)
            verify(base, phase: "session")
        }
        tallies["session", default: [:]]["temporary session files left"] = leftovers.count

        // lock --all forgets every key: no file holding one may stay behind.
        let locked = locket("lock", "--all")
        XCTAssertEqual(locked.status, 0, locked.summary)
        let remaining = (try? FileManager.default.contentsOfDirectory(atPath: sessionDirectory)) ?? []
        XCTAssertEqual(remaining, [], "files holding session keys outlived 'lock --all' (left by killed unlocks): \(remaining)")
        report("crash-session")
    }

    // MARK: - init

    /// A first `init` killed at any instant (it creates the device secret,
    /// the keychain under a temporary name, then links it into place and
    /// saves the session) leaves either a keychain that opens with its
    /// password, or nothing that stops the next `init`.
    func testKillsDuringFirstInitLeaveARetryableState() throws {
        let input = textFile("password", password + "\n")
        let command = ["init", "--password-stdin", "--kdf", "interactive"]
        // The shortest of three runs: the first also makes the device secret.
        var typical = Double.infinity
        for _ in 0..<3 {
            for dir in [sandbox.dataHome, sandbox.stateHome, sandbox.runtimeDir] { try? FileManager.default.removeItem(atPath: dir + "/locket") }
            guard let took = timed(command, input: password + "\n") else { return }
            typical = min(typical, took)
        }
        tallies["init", default: [:]]["typical_ms"] = Int(typical)
        var aim = CommitAim(typical: typical)
        var trial = 0
        var litter: Set<String> = []
        while tallies["init"]?["killed", default: 0] ?? 0 < target("init") && trial < 5 * target("init") {
            trial += 1
            for dir in [sandbox.dataHome, sandbox.stateHome, sandbox.runtimeDir] {
                try? FileManager.default.removeItem(atPath: dir + "/locket")
            }
            let (killed, status) = killDuring(command, stdin: input, phase: "init", delay: aim.delay(&rng))
            aim.landed(beforeCommit: killed && !FileManager.default.fileExists(atPath: sandbox.loginKeychain), finished: !killed,
                       took: lastRunMilliseconds)
            if !killed { XCTAssertEqual(status, 0, "init finished with \(status.map(String.init) ?? "?")") }
            for name in (try? FileManager.default.contentsOfDirectory(atPath: sandbox.dataHome + "/locket")) ?? []
            where name != "login.keychain" && !name.hasPrefix("login.keychain-") {
                litter.insert(name)
            }
            if FileManager.default.fileExists(atPath: sandbox.loginKeychain) {
                // The keychain is in place: it opens, and its password unlocks it.
                XCTAssertEqual(ReliabilityDatabase.integrity(sandbox.loginKeychain), "ok")
                let unlock = locket("unlock", "--password-stdin", input: .text(password + "\n"))
                XCTAssertEqual(unlock.status, 0, "after a kill during init: \(unlock.summary)")
                XCTAssertEqual(locket("find", "-s", "nothing").status, 44)
                if killed { note("init", "keychain in place") }
            } else {
                // Nothing in place: a second init must work.
                let again = locket(command, input: .text(password + "\n"))
                XCTAssertEqual(again.status, 0, "init after a kill during init: \(again.summary)")
                if killed { note("init", again.status == 0 ? "no keychain, init again worked" : "no keychain, init again failed") }
            }
        }
        tallies["init", default: [:]]["temporary files left"] = litter.count
        report("crash-init")
    }

    /// What a kill during `unlock` leaves when it lands between the session's
    /// temporary file being written and renamed into place (seen under
    /// `make soak`: 9 such files in 300 kills): `lock --all` must forget
    /// those keys too.
    func testLockAllRemovesSessionFilesLeftByAKilledUnlock() throws {
        initKeychain()
        let directory = sandbox.runtimeDir + "/locket"
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.contains(".tmp") }
        XCTAssertEqual(files.count, 2, "two session tiers: \(files)")
        for name in files {
            let bytes = try XCTUnwrap(ReliabilityFiles.read(directory + "/" + name))
            ReliabilityFiles.write(directory + "/" + name + ".tmp.99999", bytes)
        }
        let locked = locket("lock", "--all")
        XCTAssertEqual(locked.status, 0, locked.summary)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory)
        XCTAssertEqual(left, [], "session keys outlived 'lock --all' in files a killed unlock left behind")
    }

    /// What a kill between `lock` zeroing the session file and unlinking it
    /// leaves (or a damaged tmpfs page): the hint says `lock --all` clears it.
    func testDamagedSessionFileClearsWithLockAll() throws {
        initKeychain()
        add("-s", "svc", "-a", "me", secret: "s3cret")
        let directory = sandbox.runtimeDir + "/locket"
        for damage in ["zeroed", "truncated"] {
            let unlocked = locket("unlock", "--password-stdin", input: .text(password + "\n"))
            XCTAssertEqual(unlocked.status, 0, unlocked.summary)
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".wu") }
            XCTAssertEqual(files.count, 1, "one when-unlocked session file")
            guard let name = files.first, let bytes = ReliabilityFiles.read(directory + "/" + name) else { continue }
            ReliabilityFiles.write(directory + "/" + name, damage == "zeroed" ? [UInt8](repeating: 0, count: bytes.count) : Array(bytes.prefix(6)))

            let found = locket("find", "-s", "svc", "-w")
            XCTAssertTrue([36, 93].contains(found.status ?? -1), "\(damage): \(found.summary)")
            XCTAssertFalse(found.out.contains("s3cret"))
            let cleared = locket("lock", "--all")
            XCTAssertEqual(cleared.status, 0, "\(damage): 'lock --all' must clear a damaged session, as the hint says: \(cleared.summary)")
            let again = locket("unlock", "--password-stdin", input: .text(password + "\n"))
            XCTAssertEqual(again.status, 0, "\(damage): unlock after lock --all: \(again.summary)")
            XCTAssertEqual(locket("find", "-s", "svc", "-w").out, "s3cret\n", damage)
            // Whatever happened, clean up for the next round.
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] { unlink(directory + "/" + name) }
        }
    }
}
