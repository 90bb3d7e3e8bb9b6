import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// Issue 30 items 2-3: each crash state PowerLossReplayer builds is put in
// the sandbox and opened with the real binary, as a user would after the
// reboot (the session is gone: unlock with the password first).

/// How many crash states are checked.
enum PowerLossBudget {
    /// States drawn per crash point (all of them where there are fewer):
    /// `LOCKET_POWERLOSS_STATES`, else 256 in a soak and the scenario's own
    /// small number in `make test`.
    static func perPoint(inMakeTest: Int) -> Int {
        if let text = ProcessInfo.processInfo.environment["LOCKET_POWERLOSS_STATES"], let n = Int(text), n > 0 { return n }
        return ReliabilityScale.soak ? 256 : inMakeTest
    }
}

/// One recorded command and what its crash states must show.
struct PowerLossScenario {
    var name: String
    /// Run as `locket ARGS`, or `sh -c SCRIPT` when `shell` (several processes at once).
    var arguments: [String]
    var shell = false
    var input: Input = .devNull
    /// Tried in order to unlock each state; empty for a keychain without a password.
    var passwords: [String] = [EndToEndCase.password]
    /// With more than one writer: the items (keys) each program's transaction
    /// changes, by the program's command (`add`, `update`). Else one
    /// transaction holds every change.
    var transactions: [(command: String, keys: Set<String>)] = []
    /// States per crash point in `make test`: the two extremes (nothing kept
    /// since the last sync, everything kept) and one at random; only the
    /// extremes where each state costs Argon2id hashes (init, passwd).
    var makeTestStates = 3
}

/// What the binary showed of one state: each item's JSON by key, and
/// `#keychain` (present or absent), `#password` (which of the scenario's
/// passwords unlocked), `#rollback` (accepted, or refused as an older copy).
struct PowerLossObservation {
    var values: [String: String] = [:]
    var problems: [String] = []
    /// The generation mirror against the file's generation: equal, behind, ahead (a copy put back), missing.
    var mirror: String?
}

extension EndToEndCase {
    /// Records `scenario`, builds its crash states, and checks each with the
    /// binary; fails the test on any problem and prints the figures.
    func checkPowerLoss(_ scenario: PowerLossScenario, scratch: String, random: inout ReliabilityRandom,
                        file: StaticString = #filePath, line: UInt = #line) throws {
        let started = ReliabilityClock.now()
        let roots = [sandbox.dataHome, sandbox.stateHome]
        let arguments = scenario.shell ? ["-c", scenario.arguments.joined(separator: " ")] : scenario.arguments
        let recording = try PowerLossRecorder.record(scenario.shell ? "/bin/sh" : binary, arguments, environment: sandbox.environment,
                                                     input: scenario.input, roots: roots, scratch: scratch)
        XCTAssertEqual(recording.result.status, 0, recording.result.summary, file: file, line: line)
        let replayer = PowerLossReplayer(recording)
        XCTAssertTrue(replayer.completed == recording.after,
                      "\(scenario.name): the recorded operations do not rebuild the files the command left", file: file, line: line)
        let before = observe(recording.before, scenario, scratch: scratch)
        let after = observe(recording.after, scenario, scratch: scratch)
        XCTAssertEqual(before.problems + after.problems, [], scenario.name, file: file, line: line)
        let changed = Set(before.values.keys).union(after.values.keys).filter { before.values[$0] != after.values[$0] }
        XCTAssertFalse(changed.isEmpty, "\(scenario.name) changed nothing", file: file, line: line)
        let transactions = scenario.transactions.isEmpty ? [(command: "", keys: changed)] : scenario.transactions

        var observed: [UInt64: PowerLossObservation] = [:]
        var tally: [String: Int] = [:]
        var total = 0.0, generated = 0, ext4 = 0
        var problems: [String] = []
        let points = replayer.crashPoints
        for point in points {
            let (count, states) = replayer.states(at: point, budget: PowerLossBudget.perPoint(inMakeTest: scenario.makeTestStates), random: &random)
            total += count
            generated += states.count
            let acknowledged = replayer.exited(before: point).filter { $0.status == 0 }.map { $0.program.first ?? "" }
            let label = point < recording.operations.count ? "before \(recording.operations[point].summary) returned" : "after every process exited"
            for state in states {
                if state.ext4 { ext4 += 1 }
                let tree = replayer.tree(for: state)
                let fingerprint = tree.fingerprint
                let observation: PowerLossObservation
                if let known = observed[fingerprint] {
                    observation = known
                } else {
                    observation = observe(tree, scenario, scratch: scratch, repair: true)
                    observed[fingerprint] = observation
                    if let mirror = observation.mirror { tally["mirror " + mirror, default: 0] += 1 }
                }
                var found = observation.problems
                let values = observation.values
                // A refused older copy shows no items: only the refusal itself is compared.
                let refused = values["#rollback"] == "refused" || values["#keychain"] == "absent"
                for key in Set(before.values.keys).union(after.values.keys).union(values.keys) where !changed.contains(key) {
                    if refused && key.first != "#" { continue }
                    if values[key] != before.values[key] { found.append("\(key) is \(values[key] ?? "absent"), was \(before.values[key] ?? "absent")") }
                }
                for transaction in transactions {
                    let keys = transaction.keys.filter { !refused || $0.first == "#" }
                    let old = keys.allSatisfy { values[$0] == before.values[$0] }
                    let new = keys.allSatisfy { values[$0] == after.values[$0] }
                    if !old && !new {
                        let mixed = keys.sorted().map { "\($0): \(values[$0] == before.values[$0] ? "old" : values[$0] == after.values[$0] ? "new" : "neither")" }
                        found.append("a mix of old and new: \(mixed.joined(separator: ", "))")
                    } else if !new && acknowledged.contains(where: { transaction.command.isEmpty || $0 == transaction.command }) {
                        found.append("an acknowledged \(transaction.command.isEmpty ? scenario.arguments.first! : transaction.command) was lost")
                    }
                    tally[(transaction.command.isEmpty ? "" : transaction.command + " ") + (new ? "new" : "old"), default: 0] += 1
                }
                if !found.isEmpty {
                    let where_ = "\(label) (operation \(point) of \(recording.operations.count)); metadata kept \(state.metadata); writes kept "
                        + "\(state.writes.sorted().prefix(40))\(state.torn.map { ", torn \($0.operation): \($0.sectors.map { $0 ? "1" : "0" }.joined())" } ?? ""); "
                        + (state.ext4 ? "ext4 can leave it" : "strict POSIX only")
                    problems.append("\(scenario.name): \(where_): " + found.joined(separator: "; "))
                }
            }
        }
        for problem in problems.prefix(10) { XCTFail(problem, file: file, line: line) }
        if problems.count > 10 { XCTFail("\(scenario.name): \(problems.count - 10) more states with problems", file: file, line: line) }
        let syncs = recording.operations.filter(\.operation.isSync).count
        let writes = recording.operations.filter { if case .write = $0.operation { return true } else { return false } }.count
        ReliabilityReport.print("powerloss-\(scenario.name)", [
            ("operations", "\(recording.operations.count)"), ("writes", "\(writes)"), ("syncs", "\(syncs)"),
            ("crash_points", "\(points.count)"), ("states_possible", String(format: "%.0f", total)), ("states_generated", "\(generated)"),
            ("ext4_states", "\(ext4)"), ("distinct_checked", "\(observed.count)"), ("outcomes", ReliabilityReport.tally(tally)),
            ("problems", "\(problems.count)"), ("seconds", String(format: "%.1f", ReliabilityClock.now() - started)),
            ("seed", "\(ReliabilityScale.seed)"),
        ])
    }

    /// Puts `tree` in the sandbox (the session gone, as after a reboot) and looks at it with the binary;
    /// with `repair`, then checks that the next command works and sets the generation mirror right.
    private func observe(_ tree: FileTree, _ scenario: PowerLossScenario, scratch: String, repair: Bool = false) -> PowerLossObservation {
        tree.restore(into: [sandbox.dataHome, sandbox.stateHome])
        for name in (try? FileManager.default.contentsOfDirectory(atPath: sandbox.runtimeDir)) ?? [] {
            try? FileManager.default.removeItem(atPath: sandbox.runtimeDir + "/" + name)
        }
        var seen = PowerLossObservation()
        let keychain = sandbox.loginKeychain
        guard FileManager.default.fileExists(atPath: keychain) else {
            seen.values["#keychain"] = "absent"
            if repair {
                let again = locket(["init", "--password-stdin", "--kdf", "interactive"], input: .text(EndToEndCase.password + "\n"))
                if again.status != 0 { seen.problems.append("no keychain, and init fails: \(again.summary)") }
            }
            return seen
        }
        seen.values["#keychain"] = "present"
        if repair {
            // As the power loss left them, before the binary repairs anything.
            let fileGeneration = PowerLossFiles.generation(of: keychain, scratch: scratch)
            let mirrorGeneration = PowerLossFiles.mirrorGeneration(in: sandbox.stateHome + "/locket")
            switch (mirrorGeneration, fileGeneration) {
            case (nil, _): seen.mirror = "missing"
            case (let m?, let f?) where m == f: seen.mirror = "equal"
            case (let m?, let f?) where m < f: seen.mirror = "behind"
            // Only a keychain put back on purpose is behind its mirror, and the binary must refuse it:
            // an unexpected refusal fails the old-or-new check, an acceptance the check below.
            case (_?, _?): seen.mirror = "ahead"
            default: seen.problems.append("the keychain's generation can't be read (the mirror says \(mirrorGeneration.map(String.init) ?? "?"))")
            }
        }
        func refusedAsRolledBack(_ result: RunResult) -> Bool { result.status == 93 && result.err.contains("rolled back") }
        if !scenario.passwords.isEmpty {
            for (n, password) in scenario.passwords.enumerated() {
                let unlocked = locket(["unlock", "--password-stdin"], input: .text(password + "\n"))
                if unlocked.status == 0 { seen.values["#password"] = "\(n)"; break }
                if refusedAsRolledBack(unlocked) { seen.values["#rollback"] = "refused"; return seen }
                if unlocked.status != 51 { seen.problems.append("unlock: \(unlocked.summary)"); return seen }
            }
            if seen.values["#password"] == nil { seen.problems.append("no password unlocks it") }
        }
        let dump = locket(["--json", "dump", "--data"])
        if refusedAsRolledBack(dump) { seen.values["#rollback"] = "refused"; return seen }
        guard dump.status == 0, let items = try? dump.jsonArray() else {
            seen.problems.append("dump: \(dump.summary)")
            return seen
        }
        seen.values["#rollback"] = "accepted"
        if seen.mirror == "ahead" { seen.problems.append("a keychain behind its generation mirror was accepted") }
        for item in items {
            let cls = item["class"] as? String ?? "?"
            let key = [cls, (cls == "inet" ? item["server"] : item["service"]) as? String ?? "", item["account"] as? String ?? "",
                       item["accessGroup"] as? String ?? ""].joined(separator: "/")
            let text = (try? JSONSerialization.data(withJSONObject: item, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) }
            if seen.values[key] != nil { seen.problems.append("\(key) appears twice") }
            seen.values[key] = text ?? "?"
        }
        guard repair else { return seen }
        // The next command works, and leaves the mirror where the file is.
        let probe = scratch + "/probe"
        ReliabilityFiles.write(probe, Array("after the power loss".utf8))
        let added = locket(["add", "-s", "powerloss-probe", "-a", "probe", "--data-file", probe])
        if added.status != 0 { seen.problems.append("the next write fails: \(added.summary)"); return seen }
        let read = locket(["find", "-s", "powerloss-probe", "-a", "probe", "-w", "-n"])
        if read.out != "after the power loss" { seen.problems.append("the next write did not read back: \(read.summary)") }
        let now = PowerLossFiles.generation(of: keychain, scratch: scratch)
        let mirrored = PowerLossFiles.mirrorGeneration(in: sandbox.stateHome + "/locket")
        if now == nil || now != mirrored {
            seen.problems.append("after the next write the mirror says \(mirrored.map(String.init) ?? "nothing"), the file \(now.map(String.init) ?? "?")")
        }
        let integrity = ReliabilityDatabase.integrity(keychain)
        if integrity != "ok" { seen.problems.append("integrity_check: \(integrity)") }
        return seen
    }
}

enum PowerLossFiles {
    /// The keychain's write generation (meta `generation`), read from a copy so that SQLite's own open changes nothing here.
    static func generation(of keychain: String, scratch: String) -> UInt64? {
        let copy = scratch + "/generation-copy"
        for suffix in ["", "-wal", "-shm"] { unlink(copy + suffix) }
        for suffix in ["", "-wal"] {
            if let bytes = ReliabilityFiles.read(keychain + suffix) { ReliabilityFiles.write(copy + suffix, bytes) }
        }
        defer { for suffix in ["", "-wal", "-shm"] { unlink(copy + suffix) } }
        guard let db = try? ReliabilityDatabase(copy), let rows = try? db.rows("SELECT value FROM meta WHERE name = 'generation'"),
              let value = rows.first?.first ?? nil, value.count == 8 else { return nil }
        return value.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The generation in the one `.generation` mirror of the state directory (its MAC unchecked: the binary checks it);
    /// nil when there is none or it is not a whole record.
    static func mirrorGeneration(in directory: String) -> UInt64? {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".generation") }
        guard names.count == 1, let bytes = ReliabilityFiles.read(directory + "/" + names[0]), bytes.count == 28,
              bytes.prefix(4) == Array("LKG1".utf8)[...] else { return nil }
        return bytes[4..<12].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
