import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 6 item 3 (SPEC §7): truncated files, random byte flips anywhere in
/// the file, sealed values moved between rows, edited class and group
/// columns, swapped wrapped keys and lowered password-hash parameters. locket
/// never crashes, never prints wrong plaintext, and reports errSecDecode (or
/// errSecInvalidKeychain/errSecIO for a file that is no keychain) in one line.
final class EndToEndReliabilityTamperTests: EndToEndCase {
    /// One item the probes look for, and its exact secret.
    struct Known: Sendable {
        var cls: String
        var name: String
        var secret: [UInt8]
        var findArgs: [String] { (cls == "inet" ? ["--class", "inet"] : []) + ["-s", name] }
    }

    /// Statuses a damaged file may give: errSecDecode, errSecInvalidKeychain,
    /// errSecIO, errSecItemNotFound (a flipped index digest), errSecInteractionNotAllowed
    /// (a flipped keychain id, protection class or wrapped key).
    static let damageStatuses: Set<Int32> = [93, 49, 220, 44, 36]

    /// What the probes saw over many trials. One per thread, merged at the end.
    final class Tally: @unchecked Sendable {
        var trials = 0
        var findStatus: [String: Int] = [:]
        var dumpStatus: [String: Int] = [:]
        var trialKinds: [String: Int] = [:]
        var messages: [String: Int] = [:]
        /// The first message seen for each error, as an example for docs/RELIABILITY.md.
        var samples: [String: String] = [:]
        var failures: [String] = []

        func fail(_ s: String) { if failures.count < 30 { failures.append(s) } }

        func merge(_ other: Tally) {
            trials += other.trials
            for (k, v) in other.findStatus { findStatus[k, default: 0] += v }
            for (k, v) in other.dumpStatus { dumpStatus[k, default: 0] += v }
            for (k, v) in other.trialKinds { trialKinds[k, default: 0] += v }
            for (k, v) in other.messages { messages[k, default: 0] += v }
            for (k, v) in other.samples where samples[k] == nil { samples[k] = v }
            failures += other.failures
        }
    }

    private var known: [Known] = []

    /// A keychain with three items (when-unlocked, after-first-unlock, an
    /// internet password), unlocked, checkpointed into its main file.
    private func makeKeychain() throws -> [UInt8] {
        initKeychain()
        var rng = ReliabilityRandom(seed: ReliabilityScale.seed)
        known = [
            Known(cls: "genp", name: "alpha", secret: Array("alpha-\(rng.next())".utf8)),
            Known(cls: "genp", name: "beta", secret: Array("beta-\(rng.next())".utf8)),
            Known(cls: "inet", name: "host.example", secret: Array("inet-\(rng.next())".utf8)),
        ]
        reliableOK(["add", "-s", "alpha", "-a", "a", "-j", "first", "-w"], input: .bytes(known[0].secret + [0x0a]))
        reliableOK(["add", "-s", "beta", "-a", "b", "--accessible", "after-first-unlock", "-w"], input: .bytes(known[1].secret + [0x0a]))
        reliableOK(["add", "--class", "inet", "-s", "host.example", "-a", "c", "-r", "https", "-w"], input: .bytes(known[2].secret + [0x0a]))
        try ReliabilityDatabase.checkpoint(sandbox.loginKeychain)
        for suffix in ["-wal", "-shm"] { unlink(sandbox.loginKeychain + suffix) }
        return try XCTUnwrap(ReliabilityFiles.read(sandbox.loginKeychain))
    }

    /// Runs `find -w` for every known item and `dump --data` on the keychain at
    /// `path`, and checks the rules: no crash or hang, the exact secret or a
    /// one-line error with an allowed status, dump never showing a wrong value.
    /// Returns how many items read back intact.
    @discardableResult
    static func probe(_ binary: String, _ environment: [String: String], path: String, known: [Known], find: [Known]? = nil,
                      allowed: Set<Int32> = damageStatuses, context: String, into tally: Tally) -> Int {
        var intact = 0
        func common(_ r: RunResult, _ what: String) -> Bool {
            if r.timedOut { tally.fail("\(context): \(what) hung: \(r.summary)"); return false }
            if let s = r.signal { tally.fail("\(context): \(what) died of signal \(s): \(r.summary)"); return false }
            if r.err.contains("Fatal error") { tally.fail("\(context): \(what) crashed: \(r.summary)"); return false }
            if r.status != 0 {
                if !allowed.contains(r.status ?? -1) { tally.fail("\(context): \(what): unexpected status: \(r.summary)") }
                if !ReliabilityOutput.isOneLineError(r) { tally.fail("\(context): \(what): not a one-line error: \(r.summary)") }
                let name = ReliabilityOutput.errorName(r) ?? "no error name"
                tally.messages[name, default: 0] += 1
                if tally.samples[name] == nil, let first = r.errLines.first, !first.hasPrefix("{") {
                    tally.samples[name] = first.replacingOccurrences(of: path, with: "PATH")
                }
            }
            return true
        }
        for item in find ?? known {
            let r = Spawn.run(binary, ["-k", path, "find"] + item.findArgs + ["-w"], environment: environment, input: .devNull, timeout: 20)
            tally.findStatus[String(r.status ?? -1), default: 0] += 1
            guard common(r, "find \(item.name)") else { continue }
            if r.status == 0 {
                if r.stdout == item.secret + [0x0a] { intact += 1 } else {
                    tally.fail("\(context): WRONG PLAINTEXT from find \(item.name): \(r.out.prefix(100))")
                }
            } else if !r.stdout.isEmpty {
                tally.fail("\(context): find \(item.name) failed but printed \(r.out.prefix(100))")
            }
        }
        let dump = Spawn.run(binary, ["-k", path, "--json", "dump", "--data"], environment: environment, input: .devNull, timeout: 20)
        tally.dumpStatus[String(dump.status ?? -1), default: 0] += 1
        if common(dump, "dump") {
            // One item per line; a dump that fails midway leaves the array unclosed, so parse line by line.
            for line in dump.out.split(separator: "\n") where line.hasPrefix("{") {
                let text = line.hasSuffix(",") ? line.dropLast() : line
                guard let item = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
                    tally.fail("\(context): dump printed a broken line: \(text.prefix(200))")
                    continue
                }
                guard let data = ReliabilityOutput.secret(item) else { continue }
                let cls = item["class"] as? String ?? "?"
                let name = (cls == "inet" ? item["server"] : item["service"]) as? String ?? "?"
                guard let original = known.first(where: { $0.cls == cls && $0.name == name }), original.secret == data else {
                    tally.fail("\(context): WRONG PLAINTEXT in dump for \(cls)/\(name)")
                    continue
                }
            }
        }
        return intact
    }

    private func finish(_ tally: Tally, _ test: String, extra: [(String, String)] = []) {
        for failure in tally.failures { XCTFail(failure) }
        ReliabilityReport.print(test, [("seed", String(ReliabilityScale.seed)), ("trials", String(tally.trials))] + extra + [
            ("trial_outcomes", ReliabilityReport.tally(tally.trialKinds)),
            ("find_status", ReliabilityReport.tally(tally.findStatus)),
            ("dump_status", ReliabilityReport.tally(tally.dumpStatus)),
            ("errors", ReliabilityReport.tally(tally.messages)),
            ("examples", tally.samples.sorted { $0.key < $1.key }.map { "[\($0.value)]" }.joined(separator: " ")),
        ])
    }

    private static func kind(_ intact: Int, of total: Int) -> String {
        intact == total ? "all items intact" : intact == 0 ? "no item readable" : "some items readable"
    }

    // MARK: - Truncation

    func testTruncatedFileAtManyLengths() throws {
        let original = try makeKeychain()
        let size = original.count
        var lengths = [0, 1, 16, 99, 100, 101, 512, 1024, 4095, 4096, 4097, 8192, size / 2, size - 4096, size - 100, size - 1]
        lengths = Array(Set(lengths.filter { $0 >= 0 && $0 < size })).sorted()
        let tally = Tally()
        let path = sandbox.dataHome + "/locket/cut.keychain"
        for length in lengths {
            ReliabilityFiles.write(path, Array(original.prefix(length)))
            for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
            tally.trials += 1
            let intact = Self.probe(binary, sandbox.environment, path: path, known: known, context: "truncated to \(length) of \(size)", into: tally)
            tally.trialKinds[Self.kind(intact, of: known.count), default: 0] += 1
        }

        // A torn WAL: the last transactions are in the WAL when it is cut short.
        // locket holds the file alone and checkpoints and empties the WAL when
        // it closes, so the WAL is made here: locket's two writes are replayed
        // onto the file as it was before them, table by table, by a connection
        // of this test that never checkpoints, and read while it is open.
        let before = try XCTUnwrap(ReliabilityFiles.read(sandbox.loginKeychain))
        var states: [String] = []
        for (i, arguments) in [["add", "-s", "gamma", "-a", "g", "-w"], ["update", "-s", "alpha", "--set", "comment=second"]].enumerated() {
            reliableOK(arguments, input: arguments[0] == "add" ? .text("gamma-secret\n") : .devNull)
            states.append(sandbox.dataHome + "/locket/state-\(i).keychain")
            ReliabilityFiles.write(states[i], try XCTUnwrap(ReliabilityFiles.read(sandbox.loginKeychain)))
        }
        let scratch = sandbox.dataHome + "/locket/scratch.keychain"
        ReliabilityFiles.write(scratch, before)
        let (main, wal): ([UInt8], [UInt8]) = try {
            let db = try ReliabilityDatabase(scratch)
            try db.execute("PRAGMA wal_autocheckpoint=0")
            for state in states {
                let tables = ["meta", "keybag", "items", "blind", "sqlite_sequence"].filter { table in
                    (try? db.text("SELECT count(*) FROM sqlite_master WHERE name = '\(table)'")) == "1"
                }
                try db.execute("ATTACH '\(state)' AS new; BEGIN; "
                    + tables.map { "DELETE FROM main.\($0); INSERT INTO main.\($0) SELECT * FROM new.\($0);" }.joined(separator: " ")
                    + " COMMIT; DETACH new")
            }
            return (try XCTUnwrap(ReliabilityFiles.read(scratch)), try XCTUnwrap(ReliabilityFiles.read(scratch + "-wal")))
        }()
        XCTAssertGreaterThan(wal.count, 4096, "the WAL should hold the last two transactions")
        let withGamma = known + [Known(cls: "genp", name: "gamma", secret: Array("gamma-secret".utf8))]
        var walLengths = [0, 32, 100, wal.count / 3, wal.count / 2, wal.count - 1]
        walLengths = Array(Set(walLengths.filter { $0 >= 0 && $0 < wal.count })).sorted()
        for length in walLengths {
            ReliabilityFiles.write(path, main)
            ReliabilityFiles.write(path + "-wal", Array(wal.prefix(length)))
            unlink(path + "-shm")
            tally.trials += 1
            let intact = Self.probe(binary, sandbox.environment, path: path, known: withGamma, context: "WAL truncated to \(length) of \(wal.count)", into: tally)
            tally.trialKinds["WAL cut: " + Self.kind(intact, of: withGamma.count), default: 0] += 1
            // Losing the WAL's tail loses whole transactions only: the items before it are intact.
            XCTAssertGreaterThanOrEqual(intact, known.count, "a torn WAL lost items committed before it (cut at \(length))")
        }
        finish(tally, "tamper-truncate", extra: [("file_bytes", String(size)), ("lengths", lengths.map(String.init).joined(separator: " ")),
                                                ("wal_bytes", String(wal.count))])
    }

    // MARK: - Random byte flips

    func testRandomByteFlipsNeverCrashOrLie() throws {
        let original = try makeKeychain()
        let uniform = ReliabilityScale.n(1000)
        // Most of a small keychain is empty index pages: aim half as many more at bytes that are in use.
        let targeted = ReliabilityScale.n(500)
        let nonZero = original.indices.filter { original[$0] != 0 }
        let binary = self.binary!
        let environment = sandbox.environment
        let known = self.known
        let dataDirectory = sandbox.dataHome + "/locket"
        let threads = 2
        let tallies = (0..<threads).map { _ in Tally() }
        let seed = ReliabilityScale.seed
        let started = ReliabilityClock.now()
        reliabilityParallel(threads) { t in
            var rng = ReliabilityRandom(seed: seed &+ UInt64(t) &* 104_729)
            let tally = tallies[t]
            let path = dataDirectory + "/flip-\(t).keychain"
            var trial = t
            while trial < uniform + targeted {
                let offset = trial < uniform ? Int(rng.next() % UInt64(original.count)) : nonZero[Int(rng.next() % UInt64(nonZero.count))]
                let mask = UInt8(1 + rng.next() % 255)
                var bytes = original
                bytes[offset] ^= mask
                ReliabilityFiles.write(path, bytes)
                for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
                tally.trials += 1
                let region = offset < 100 ? "header" : offset < 4096 ? "page 1" : "other pages"
                let intact = Self.probe(binary, environment, path: path, known: known,
                                        context: "flip 0x\(String(mask, radix: 16)) at \(offset) (trial \(trial))", into: tally)
                tally.trialKinds["\(region): " + Self.kind(intact, of: known.count), default: 0] += 1
                trial += threads
            }
        }
        let tally = Tally()
        for t in tallies { tally.merge(t) }
        XCTAssertEqual(tally.trials, uniform + targeted)
        finish(tally, "tamper-flips", extra: [("uniform", String(uniform)), ("targeted_at_nonzero_bytes", String(targeted)),
                                             ("file_bytes", String(original.count)),
                                             ("seconds", String(format: "%.1f", ReliabilityClock.now() - started))])
    }

    // MARK: - Rows

    /// Sealed values moved between rows of different classes, groups and
    /// protection classes, and whole rows cloned under a new reference.
    func testSealedValuesMovedBetweenRowsNeverOpen() throws {
        _ = try makeKeychain()
        reliableOK(["add", "-s", "grouped", "-a", "x", "--access-group", "other.group", "-w"], input: .text("grouped-secret\n"))
        let all = known + [Known(cls: "genp", name: "grouped", secret: Array("grouped-secret".utf8))]
        let snapshot = try snapshotFiles()
        let tally = Tally()
        // rows: 1 alpha (genp ak default), 2 beta (genp ck), 3 host.example (inet ak), 4 grouped (genp ak other.group)
        let edits: [(String, [String])] = [
            ("data genp <-> inet", swapSQL("data", 1, 3)),
            ("data ak <-> ck", swapSQL("data", 1, 2)),
            ("data across groups", swapSQL("data", 1, 4)),
            ("attrs and data together", swapSQL("attrs", 1, 4) + swapSQL("data", 1, 4)),
            // ref is UNIQUE: swap through a temporary table.
            ("references swapped", ["CREATE TEMP TABLE r AS SELECT id, ref FROM items WHERE id IN (1, 2)",
                                    "UPDATE items SET ref = randomblob(16) WHERE id = 1",
                                    "UPDATE items SET ref = (SELECT ref FROM r WHERE id = 1) WHERE id = 2",
                                    "UPDATE items SET ref = (SELECT ref FROM r WHERE id = 2) WHERE id = 1"]),
            ("row cloned into another group", ["INSERT INTO items SELECT NULL, randomblob(16), cls, pdmn, 'clone.group', "
                                               + (try columnsAfterGroup()) + " FROM items WHERE id = 1"]),
            ("reference of a row changed", ["UPDATE items SET ref = randomblob(16) WHERE id = 3"]),
        ]
        for (name, statements) in edits {
            try restore(snapshot)
            // One connection for the edit (TEMP tables), closed before locket runs.
            try ReliabilityDatabase(sandbox.loginKeychain).execute(statements.joined(separator: ";\n"))
            tally.trials += 1
            let intact = Self.probe(binary, sandbox.environment, path: sandbox.loginKeychain, known: all, allowed: [93, 36], context: name, into: tally)
            tally.trialKinds["\(name): \(intact)/\(all.count) intact", default: 0] += 1
            // The clone itself, found through its group, never opens.
            if name.hasPrefix("row cloned into") {
                let clone = locket("find", "--access-group", "clone.group", "-w")
                XCTAssertEqual(clone.status, 93, clone.summary)
                XCTAssertFalse(clone.out.contains("alpha-"), "a cloned row must not open")
            }
        }
        // Untouched items stay readable: grouped is untouched by the first two edits.
        finish(tally, "tamper-moved-values")
    }

    /// `pdmn` and `agrp` edited to every other value: the row fails (93, or 36 when its new class is locked), the others read.
    func testEditedProtectionClassOrGroupFailsThatRowOnly() throws {
        _ = try makeKeychain()
        let snapshot = try snapshotFiles()
        let tally = Tally()
        let classes = ["ak", "ck", "dk", "aku", "cku", "dku", "akpu", "", "AK", "ak "]
        var edits: [(String, String)] = classes.map { ("pdmn of alpha = '\($0)'", "UPDATE items SET pdmn = '\($0)' WHERE id = 1") }
        edits += ["default", "other.group", "", "defaulT", "default\u{0}"].map {
            ("agrp of alpha = '\($0.replacingOccurrences(of: "\u{0}", with: "\\0"))'", "UPDATE items SET agrp = '\($0.replacingOccurrences(of: "\u{0}", with: "' || char(0) || '"))' WHERE id = 1")
        }
        for (name, sql) in edits {
            try restore(snapshot)
            try ReliabilityDatabase(sandbox.loginKeychain).execute(sql)
            tally.trials += 1
            let untouched = Array(known.dropFirst())
            // The untouched items read back exactly.
            let intact = Self.probe(binary, sandbox.environment, path: sandbox.loginKeychain, known: known, find: untouched,
                                    allowed: [93], context: name, into: tally)
            XCTAssertEqual(intact, untouched.count, "\(name): an untouched item became unreadable")
            // The edited one opens only to its own secret (when the edit kept its
            // meaning, such as the value it had); otherwise it fails without output.
            let alpha = locket("find", "-s", "alpha", "-w")
            if alpha.status == 0 {
                XCTAssertEqual(alpha.stdout, known[0].secret + [0x0a], "\(name): WRONG PLAINTEXT")
            } else {
                XCTAssertTrue([93, 36, 44].contains(alpha.status ?? -1), "\(name): \(alpha.summary)")
                XCTAssertEqual(alpha.stdout, [], "\(name): \(alpha.summary)")
                XCTAssertTrue(ReliabilityOutput.isOneLineError(alpha), alpha.summary)
            }
            tally.trialKinds["\(name): alpha \(alpha.status ?? -1)", default: 0] += 1
        }
        finish(tally, "tamper-edited-columns")
    }

    // MARK: - The keybag

    /// Wrapped class keys swapped between keybag rows, or taken from another
    /// keychain: unlock fails with errSecDecode or errSecAuthFailed, never
    /// succeeds with wrong keys; no item ever opens to a wrong value.
    func testSwappedWrappedKeysNeverUnlockWithWrongKeys() throws {
        let (all, snapshot, edits) = try keybagEdits()
        var unlockOutcomes: [String: Int] = [:]
        var undetected: [String] = []
        let tally = Tally()
        for edit in edits {
            let unlock = try unlockAfter(edit, snapshot)
            unlockOutcomes[String(unlock.status ?? -1), default: 0] += 1
            XCTAssertTrue([0, 93, 51].contains(unlock.status ?? -1), "\(edit.name): \(unlock.summary)")
            if edit.touchesMigratableKEK {
                XCTAssertTrue([93, 51].contains(unlock.status ?? -1), "\(edit.name): unlock must fail: \(unlock.summary)")
            }
            if unlock.status == 0 && edit.name.hasPrefix("kek") { undetected.append(edit.name) }
            tally.trials += 1
            // Whatever unlock did, no item ever opens to another value.
            Self.probe(binary, sandbox.environment, path: sandbox.loginKeychain, known: all, allowed: [93, 36, 51], context: edit.name, into: tally)
        }
        finish(tally, "tamper-keybag", extra: [("unlock_status", ReliabilityReport.tally(unlockOutcomes)),
                                              ("kek_swaps_unlock_accepted", undetected.isEmpty ? "none" : undetected.joined(separator: "; "))])
    }

    /// The device-bound classes' wrapped keys (aku, cku, akpu) swapped among
    /// themselves or taken from another keychain on the same device: unlock
    /// must notice (errSecDecode), as it does for the other classes, instead
    /// of dropping those keys silently and later calling the items "bound to
    /// another device".
    func testSwappedDeviceBoundWrappedKeysAreDetected() throws {
        let (_, snapshot, edits) = try keybagEdits()
        for edit in edits where edit.name.hasPrefix("kek") && !edit.touchesMigratableKEK {
            let unlock = try unlockAfter(edit, snapshot)
            XCTAssertEqual(unlock.status, 93, "\(edit.name): unlock accepted a keybag whose device-bound keys were altered: \(unlock.summary)")
            let bound = locket("find", "-s", "bound", "-w")
            XCTAssertFalse(bound.out.contains("bound-secret") && bound.status != 0)
            if bound.status != 0 {
                XCTAssertFalse(bound.err.contains("another device"),
                               "\(edit.name): an altered keybag is reported as another device: \(bound.summary)")
            }
        }
    }

    struct KeybagEdit {
        var name: String
        var sql: [String]
        /// A migratable class's row (ak, ck, dk, idx) is involved: unlock must refuse.
        var touchesMigratableKEK: Bool
    }

    /// A keychain with an item in the always and a device-bound class, its
    /// snapshot, and every swap of wrapped keys between its keybag rows, plus
    /// rows taken from another keychain (same password, same device).
    private func keybagEdits() throws -> ([Known], [UInt8], [KeybagEdit]) {
        _ = try makeKeychain()
        reliableExpect(0, ["add", "-s", "always", "-a", "d", "--accessible", "always", "-w"], input: .text("always-secret\n"))  // warns
        reliableOK(["add", "-s", "bound", "-a", "e", "--accessible", "when-unlocked-this-device-only", "-w"], input: .text("bound-secret\n"))
        let all = known + [Known(cls: "genp", name: "always", secret: Array("always-secret".utf8)),
                           Known(cls: "genp", name: "bound", secret: Array("bound-secret".utf8))]
        initKeychain("other")
        let otherPath = sandbox.dataHome + "/locket/other.keychain"
        try ReliabilityDatabase.checkpoint(otherPath)
        let otherRows = try ReliabilityDatabase(otherPath, readOnly: true).rows("SELECT class, kek FROM keybag WHERE kek IS NOT NULL")
        let snapshot = try snapshotFiles()
        let deviceBound: Set<String> = ["aku", "cku", "akpu"]
        let rows = try ReliabilityDatabase(sandbox.loginKeychain, readOnly: true).rows("SELECT class FROM keybag WHERE kek IS NOT NULL ORDER BY class")
            .map { String(decoding: $0[0]!, as: UTF8.self) }
        var edits: [KeybagEdit] = []
        for (i, a) in rows.enumerated() {
            for b in rows[(i + 1)...] {
                edits.append(KeybagEdit(name: "kek \(a) <-> \(b)", sql: swapKeybag("kek", a, b),
                                        touchesMigratableKEK: !deviceBound.contains(a) || !deviceBound.contains(b)))
            }
        }
        for (a, b) in [("dk", "idx"), ("dk", "dku"), ("dku", "idx")] {
            edits.append(KeybagEdit(name: "device \(a) <-> \(b)", sql: swapKeybag("device", a, b), touchesMigratableKEK: false))
        }
        for row in otherRows {
            let name = String(decoding: row[0]!, as: UTF8.self)
            edits.append(KeybagEdit(name: "kek \(name) from another keychain",
                                    sql: ["UPDATE keybag SET kek = x'\(Self.hex(row[1]!))' WHERE class = '\(name)'"],
                                    touchesMigratableKEK: !deviceBound.contains(name)))
        }
        return (all, snapshot, edits)
    }

    /// Restores the snapshot, forgets every key, applies the edit, and unlocks with the right password.
    private func unlockAfter(_ edit: KeybagEdit, _ snapshot: [UInt8]) throws -> RunResult {
        try restore(snapshot)
        _ = locket("lock", "--all")
        try ReliabilityDatabase(sandbox.loginKeychain).execute(edit.sql.joined(separator: ";\n"))
        return locket("unlock", "--password-stdin", input: .text(Self.password + "\n"))
    }

    /// A keychain whose header lost its password-hash parameters (the `kdf`
    /// row deleted or renamed, as one flipped byte of its name does) is a
    /// damaged keychain, not one without a password: errSecDecode, never
    /// "the password is not correct" from a command that took no password.
    func testMissingKDFParametersAreDamageNotAWrongPassword() throws {
        _ = try makeKeychain()
        let snapshot = try snapshotFiles()
        for (name, sql) in [("kdf row deleted", "DELETE FROM meta WHERE name = 'kdf'"),
                            ("kdf row renamed", "UPDATE meta SET name = 'kdF' WHERE name = 'kdf'")] {
            try restore(snapshot)
            try ReliabilityDatabase(sandbox.loginKeychain).execute(sql)
            for args in [["find", "-s", "alpha", "-w"], ["dump"], ["status"], ["lock"]] {
                let result = locket(args)
                XCTAssertEqual(result.status, 93, "\(name): \(result.summary)")
                XCTAssertEqual(result.stdout, [], result.summary)
            }
            let unlock = locket(["unlock", "--password-stdin"], input: .text(Self.password + "\n"))
            XCTAssertEqual(unlock.status, 93, "\(name): \(unlock.summary)")
        }
    }

    /// Lowered Argon2id parameters written into the header of a keychain made
    /// with real ones: unlock and passwd refuse with errSecDecode before hashing.
    /// The binary makes it (`init --kdf interactive`): nothing in it can make weaker ones.
    func testLoweredKDFParametersAreRefused() throws {
        let strong: [String: String] = [:]
        let created = locket(["init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"), environment: strong)
        XCTAssertEqual(created.status, 0, created.summary)
        reliableOK(["add", "-s", "svc", "-a", "me", "-w"], input: .text("kdf-secret\n"), environment: strong)
        reliableOK(["lock", "--all"], environment: strong)
        try ReliabilityDatabase.checkpoint(sandbox.loginKeychain)
        let kdf = try XCTUnwrap(ReliabilityDatabase(sandbox.loginKeychain, readOnly: true).rows("SELECT value FROM meta WHERE name = 'kdf'").first?[0])
        XCTAssertEqual(kdf.count, 32)
        let ops = kdf[16..<24].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, mem = kdf[24..<32].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        XCTAssertGreaterThanOrEqual(ops, 2, "init must store real parameters")
        XCTAssertGreaterThanOrEqual(mem, 64 << 20, "init must store real parameters")
        let snapshot = try snapshotFiles()

        func encoded(salt: [UInt8], ops: UInt64, mem: UInt64) -> [UInt8] {
            salt + (0..<8).map { UInt8(truncatingIfNeeded: ops >> (56 - 8 * UInt64($0))) } + (0..<8).map { UInt8(truncatingIfNeeded: mem >> (56 - 8 * UInt64($0))) }
        }
        let salt = Array(kdf[0..<16])
        var outcomes: [String: String] = [:]
        let lowered: [(String, [UInt8])] = [
            ("ops 1, mem 8192", encoded(salt: salt, ops: 1, mem: 8192)),
            ("ops 1", encoded(salt: salt, ops: 1, mem: mem)),
            ("mem 8192", encoded(salt: salt, ops: ops, mem: 8192)),
            ("ops 0 (invalid)", encoded(salt: salt, ops: 0, mem: mem)),
            ("31 bytes", Array(kdf.prefix(31))),
        ]
        for (name, value) in lowered {
            try restore(snapshot)
            try ReliabilityDatabase(sandbox.loginKeychain).change("UPDATE meta SET value = ? WHERE name = 'kdf'", [value])
            let started = ReliabilityClock.now()
            let unlock = locket(["unlock", "--password-stdin"], input: .text(Self.password + "\n"), environment: strong)
            let seconds = ReliabilityClock.now() - started
            XCTAssertEqual(unlock.status, 93, "\(name): \(unlock.summary)")
            XCTAssertTrue(ReliabilityOutput.isOneLineError(unlock), unlock.summary)
            let passwd = locket(["passwd"], input: .text(Self.password + "\nnew password\n"), environment: strong)
            XCTAssertEqual(passwd.status, 93, "\(name): \(passwd.summary)")
            let find = locket(["find", "-s", "svc", "-w"], environment: strong)
            XCTAssertTrue([36, 93].contains(find.status ?? -1), "\(name): nothing may be unlocked: \(find.summary)")
            XCTAssertFalse(find.out.contains("kdf-secret"))
            outcomes[name] = "unlock \(unlock.status ?? -1) in \(String(format: "%.2f", seconds)) s, passwd \(passwd.status ?? -1)"
        }
        // A changed salt: on the device whose header authenticates, any edit of
        // the parameters is caught before hashing (errSecDecode); elsewhere it
        // gives another key, and the right password fails like a wrong one.
        try restore(snapshot)
        var badSalt = kdf
        badSalt[3] ^= 0x40
        try ReliabilityDatabase(sandbox.loginKeychain).change("UPDATE meta SET value = ? WHERE name = 'kdf'", [badSalt])
        let salted = locket(["unlock", "--password-stdin"], input: .text(Self.password + "\n"), environment: strong)
        XCTAssertEqual(salted.status, 93, salted.summary)
        let elsewhere = try Sandbox()
        defer { elsewhere.remove() }
        try FileManager.default.createDirectory(atPath: elsewhere.dataHome + "/locket", withIntermediateDirectories: true)
        ReliabilityFiles.write(elsewhere.loginKeychain, try XCTUnwrap(ReliabilityFiles.read(sandbox.loginKeychain)))
        let saltedElsewhere = locket(in: elsewhere, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(saltedElsewhere.status, 51, saltedElsewhere.summary)
        outcomes["salt changed"] = "unlock \(salted.status ?? -1), on another device \(saltedElsewhere.status ?? -1)"
        // The untouched file still unlocks with real parameters.
        try restore(snapshot)
        let started = ReliabilityClock.now()
        let unlock = locket(["unlock", "--password-stdin"], input: .text(Self.password + "\n"), environment: strong)
        XCTAssertEqual(unlock.status, 0, unlock.summary)
        outcomes["original"] = "unlock \(unlock.status ?? -1) in \(String(format: "%.2f", ReliabilityClock.now() - started)) s"
        XCTAssertEqual(locket(["find", "-s", "svc", "-w"], environment: strong).out, "kdf-secret\n")
        ReliabilityReport.print("tamper-kdf", [("stored", "ops \(ops) mem \(mem)")] + outcomes.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    // MARK: - File helpers

    /// Every column of `items` after agrp, in table order (pk, the digests, attrs, data).
    private func columnsAfterGroup() throws -> String {
        let names = try ReliabilityDatabase(sandbox.loginKeychain, readOnly: true).rows("SELECT name FROM pragma_table_info('items') ORDER BY cid")
            .map { String(decoding: $0[0]!, as: UTF8.self) }
        let start = try XCTUnwrap(names.firstIndex(of: "agrp")) + 1
        return names[start...].joined(separator: ", ")
    }

    /// Swaps a column between two rows. The values are copied aside first: an
    /// UPDATE's subqueries see the rows it has already changed.
    private func swapSQL(_ column: String, _ a: Int, _ b: Int) -> [String] {
        let t = "swap_\(column)_\(a)_\(b)"
        return ["CREATE TEMP TABLE \(t) AS SELECT id AS k, \(column) AS v FROM items WHERE id IN (\(a), \(b))",
                "UPDATE items SET \(column) = (SELECT v FROM \(t) WHERE k = CASE items.id WHEN \(a) THEN \(b) ELSE \(a) END) WHERE id IN (\(a), \(b))"]
    }

    private func swapKeybag(_ column: String, _ a: String, _ b: String) -> [String] {
        let t = "swap_\(column)_\(a)_\(b)"
        return ["CREATE TEMP TABLE \(t) AS SELECT class AS k, \(column) AS v FROM keybag WHERE class IN ('\(a)', '\(b)')",
                "UPDATE keybag SET \(column) = (SELECT v FROM \(t) WHERE k = CASE keybag.class WHEN '\(a)' THEN '\(b)' ELSE '\(a)' END) WHERE class IN ('\(a)', '\(b)')"]
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The keychain's main file after a checkpoint (no WAL).
    private func snapshotFiles() throws -> [UInt8] {
        try ReliabilityDatabase.checkpoint(sandbox.loginKeychain)
        return try XCTUnwrap(ReliabilityFiles.read(sandbox.loginKeychain))
    }

    private func restore(_ bytes: [UInt8]) throws {
        ReliabilityFiles.write(sandbox.loginKeychain, bytes)
        for suffix in ["-wal", "-shm"] { unlink(sandbox.loginKeychain + suffix) }
    }
}
