import Foundation
@testable import LocketCore
import LocketSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 15: `export --format backup` and `import BACKUP` through the binary.
final class BackupEndToEndTests: EndToEndCase {
    /// Items in the round trip (passwords of both classes, keys and
    /// certificates, in every protection class): 20 k in `make test`, the
    /// full 100 k in `make soak` (LOCKET_SOAK).
    static let roundTripCount = ReliabilityScale.soak ? 100_000 : 20_000
    /// Smaller backups whose imports' peak memory the full one's is held to:
    /// a tenth and a half.
    static let smallerCounts = [roundTripCount / 10, roundTripCount / 2]

    private var backup: String { sandbox.root + "/keychain.backup" }
    private let passphrase = "backup passphrase\n"

    /// What the round trip's keychain holds, and what a backup leaves out.
    private struct Loaded {
        var items = 0, thisDeviceOnly = 0, nonExtractable = 0
        /// Items a backup holds, by class code (`genp`, `inet`, `keys`, `cert`).
        var migratableByClass: [String: Int] = [:]
        var migratable: Int { items - thisDeviceOnly - nonExtractable }

        mutating func count(_ itemClass: ItemClass, _ accessible: ProtectionClass) {
            items += 1
            if accessible.thisDeviceOnly { thisDeviceOnly += 1 } else { migratableByClass[itemClass.rawValue, default: 0] += 1 }
        }
    }

    /// Passwords `range` of the round trip, added in-process in one
    /// transaction (an `add` process per item would take minutes); each
    /// secret goes into guarded memory only while it is inserted.
    private func loadPasswords(_ range: Range<Int>, into keychain: Keychain, _ loaded: inout Loaded) throws {
        let classes = ProtectionClass.allCases
        var batch: [(NewItem, [UInt8])] = []
        batch.reserveCapacity(range.count)
        for i in range {
            var item = NewItem(itemClass: i % 3 == 0 ? .internetPassword : .genericPassword)
            if item.itemClass == .internetPassword {
                try item.set(.server, Array("host\(i).example.com".utf8))
                try item.set(.protocol, Array("htps".utf8))
                try item.set(.port, [0x01, 0xbb])
                try item.set(.path, Array("p/\(i)".utf8))
            } else {
                try item.set(.service, Array("svc-\(i)".utf8))
                try item.set(.generic, [0, 1, 2, UInt8(i & 0xff)])
            }
            try item.set(.account, Array("user\(i % 97)".utf8))
            try item.set(.label, Array("label \(i) ü".utf8))
            if i % 5 == 0 { try item.set(.comment, Array("comment\nline \(i)".utf8)) }
            item.accessible = classes[i % classes.count]
            loaded.count(item.itemClass, classes[i % classes.count])
            batch.append((item, Array("secret-\(i)-\u{1}".utf8) + [0, 0xff]))
        }
        // try!: a lazy map cannot throw (a throwing one is the eager map, every secret at once).
        try keychain.addBatch(batch.lazy.map { (item: $0.0, data: try! SecureBytes(copying: $0.1)) })
    }

    /// Keys made by the engine (Ed25519 and P-256 in every protection class,
    /// one RSA, one non-extractable) and certificates made by openssl (a CA;
    /// leaves imported with their keys, one of them ThisDeviceOnly).
    private func loadKeysAndCertificates(into keychain: Keychain, _ loaded: inout Loaded) throws {
        let classes = ProtectionClass.allCases
        for (n, accessible) in classes.enumerated() {
            for type in [KeyGenerationType.ed25519, .p256] {
                var options = KeyItemOptions()
                options.label = "\(type.rawValue) key \(n)"
                options.tag = Array("tag.\(type.rawValue).\(n)".utf8)
                options.accessible = accessible
                _ = try keychain.keys.generateKey(type, options: options)
                loaded.count(.key, accessible)
            }
        }
        var rsa = KeyItemOptions()
        rsa.label = "rsa key"
        rsa.accessible = .afterFirstUnlock
        _ = try keychain.keys.generateKey(.rsa2048, options: rsa)
        loaded.count(.key, .afterFirstUnlock)
        var kept = KeyItemOptions()
        kept.label = "kept key"
        kept.extractable = false
        _ = try keychain.keys.generateKey(.p256, options: kept)
        loaded.items += 1
        loaded.nonExtractable += 1

        makeCA()
        var files: [([UInt8], ProtectionClass)] = [(keyFileBytes("ca.pem"), .whenUnlocked)]
        for (n, kind) in ["ed25519", "p256", "p384"].enumerated() {
            makeKey(kind, "leaf\(n).key")
            makeLeaf(key: "leaf\(n).key", cert: "leaf\(n).pem", cn: "Leaf \(n) ü", email: "leaf\(n)@example.com")
            files.append((keyFileBytes("leaf\(n).key") + keyFileBytes("leaf\(n).pem"), classes[[1, 2, 4][n]]))
        }
        for (bytes, accessible) in files {
            var options = KeyItemOptions()
            options.accessible = accessible
            try keychain.keys.addKeyFile(try KeyImport.parse(bytes, passphrase: { throw KeychainError(.param) }), options: options) { outcome in
                XCTAssertTrue(outcome.added)
                loaded.count(outcome.item.itemClass, accessible)
            }
        }
        XCTAssertEqual(loaded.migratableByClass["cert"], 3, "the CA and two leaves: the third is ThisDeviceOnly")
    }

    /// `locket ARGS` in `sandbox` with a timeout fit for 100 k items.
    private func run(_ arguments: [String], input: Input = .devNull, in other: Sandbox? = nil,
                     file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = Spawn.run(binary, arguments, environment: (other ?? sandbox).environment, input: input, timeout: 600)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        return result
    }

    /// `export --format backup -o PATH ARGS`; checks what it says was left out and exported.
    private func exportBackup(_ path: String, _ arguments: [String], input: Input, _ loaded: Loaded,
                              file: StaticString = #filePath, line: UInt = #line) {
        let exported = run(["export", "--format", "backup", "-o", path] + arguments, input: input, file: file, line: line)
        XCTAssertTrue(exported.err.contains("\(loaded.thisDeviceOnly) ThisDeviceOnly items were left out"), exported.err, file: file, line: line)
        XCTAssertTrue(exported.err.contains("\(loaded.nonExtractable) non-extractable key was left out"), exported.err, file: file, line: line)
        XCTAssertTrue(exported.err.contains("exported \(loaded.migratable) items"), exported.err, file: file, line: line)
        XCTAssertEqual(mode(path), 0o600, file: file, line: line)
    }

    /// `import ARGS BACKUP` into `device`, standard input from the file
    /// `stdin`: its standard output, time and peak memory (VmHWM, KiB).
    private func measuredImport(_ arguments: [String], stdin: String?, into device: Sandbox,
                                file: StaticString = #filePath, line: UInt = #line) -> (out: String, seconds: Double, peakKiB: Int, fileKiB: Int) {
        let out = device.root + "/import.out", err = device.root + "/import.err"
        let started = ReliabilityClock.now()
        guard let child = ReliabilityChild.spawn(binary, ["import"] + arguments, environment: device.environment,
                                                 stdin: stdin, stdout: out, stderr: err) else {
            XCTFail("could not start locket import", file: file, line: line)
            return ("", 0, 0, 0)
        }
        let exit = child.wait(timeout: 600)
        let seconds = ReliabilityClock.now() - started
        let text = String(decoding: ReliabilityFiles.read(out) ?? [], as: UTF8.self)
        XCTAssertEqual(exit.status, 0, "import: " + String(decoding: ReliabilityFiles.read(err) ?? [], as: UTF8.self), file: file, line: line)
        var st = stat()
        let fileKiB = stat(device.loginKeychain, &st) == 0 ? Int(st.st_size) / 1024 : 0
        return (text, seconds, exit.maxRSSKiB, fileKiB)
    }

    /// A fresh keychain on a new device (its own sandbox, so its own device key), unlocked.
    private func newDevice() throws -> Sandbox {
        let device = try Sandbox()
        initKeychain(in: device)
        unlock(in: device)
        return device
    }

    /// The items of a `--json dump --data`, keyed by persistent reference,
    /// each the bytes of its object as the dump prints it (one a line):
    /// compared as bytes with memchr, memmem and memcmp, since parsing 100 k
    /// items into Foundation dictionaries, or Swift's generic searches in a
    /// debug build, took longer than the round trip itself.
    private func dumpItems(in other: Sandbox? = nil, file: StaticString = #filePath, line: UInt = #line) -> [String: ArraySlice<UInt8>] {
        let bytes = run(["--json", "dump", "--data"], in: other, file: file, line: line).stdout
        var items: [String: ArraySlice<UInt8>] = [:]
        var lines = 0
        var start = 0
        while start < bytes.count {
            let end = bytes.withUnsafeBytes { raw in
                memchr(raw.baseAddress! + start, 0x0a, raw.count - start).map { UnsafeRawPointer($0) - UnsafeRawPointer(raw.baseAddress!) } ?? raw.count
            }
            var object = bytes[start..<end]
            start = end + 1
            if object.last == UInt8(ascii: ",") { object = object.dropLast() }
            if object.elementsEqual("[".utf8) || object.elementsEqual("]".utf8) || object.elementsEqual("[]".utf8) { continue }
            lines += 1
            guard object.first == UInt8(ascii: "{"), object.last == UInt8(ascii: "}"),
                  let at = Self.offset(of: Self.refMarker, in: object), object.endIndex - (at + Self.refMarker.count) > 32 else {
                XCTFail("not an item of the dump: \(String(decoding: object.prefix(200), as: UTF8.self))", file: file, line: line)
                continue
            }
            let ref = at + Self.refMarker.count
            items[String(decoding: object[ref..<ref + 32], as: UTF8.self)] = object
        }
        XCTAssertEqual(items.count, lines, "persistent references repeated in the dump", file: file, line: line)
        return items
    }

    private static let refMarker = Array("\"persistentRef\":\"".utf8)
    private static let thisDeviceOnlyMarker = Array("this-device-only\",".utf8)
    private static let nonExtractableMarker = Array("\"extractable\":false".utf8)

    /// The index in `haystack` where `needle` first occurs (memchr for its
    /// first byte, memcmp for the rest: Glibc's Swift module has no memmem).
    private static func offset(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        haystack.withUnsafeBytes { h in
            needle.withUnsafeBytes { n in
                guard let base = h.baseAddress, let first = n.first else { return nil }
                var at = 0
                while h.count - at >= n.count, let found = memchr(base + at, Int32(first), h.count - n.count + 1 - at) {
                    at = UnsafeRawPointer(found) - base
                    if memcmp(found, n.baseAddress!, n.count) == 0 { return haystack.startIndex + at }
                    at += 1
                }
                return nil
            }
        }
    }

    private static func same(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>?) -> Bool {
        guard let b, a.count == b.count else { return false }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 } }
    }

    /// Whether a dumped item may leave the device: neither ThisDeviceOnly nor a non-extractable key.
    private func migratable(_ item: ArraySlice<UInt8>) -> Bool {
        Self.offset(of: Self.thisDeviceOnlyMarker, in: item) == nil && Self.offset(of: Self.nonExtractableMarker, in: item) == nil
    }

    /// The round trip of issue 15: 100 k items of every migratable class
    /// through a passphrase backup and through a recipient backup, each into
    /// a fresh keychain on a new device: every attribute, secret, date and
    /// reference equal; ThisDeviceOnly items and the non-extractable key left
    /// out and counted. Also the import's time, rate and peak memory, at
    /// 10 k and at 100 k items (flat).
    func testRoundTripOntoNewDevicesThroughPassphraseAndRecipientBackups() throws {
        var phases: [(String, String)] = []
        var lap = ReliabilityClock.now()
        func phase(_ name: String) {
            let now = ReliabilityClock.now()
            phases.append((name, String(format: "%.2fs", now - lap)))
            lap = now
        }
        initKeychain()
        unlock(timeout: "none")
        var loaded = Loaded()
        let keychain = try Keychain.open(at: sandbox.loginKeychain, environment: Environment(sandbox.environment))
        try loadKeysAndCertificates(into: keychain, &loaded)
        phase("keys_and_certificates")
        let keyItems = loaded.items
        let (publicHex, identity) = try makeIdentity("me")
        // One recipient given as hex, another as a file: either opens it.
        let (_, other) = try makeIdentity("other")
        let otherPublic = sandbox.root + "/other.pub"
        try Data(Hex.encode(try BackupRecipients.publicKey(secretKey: try readIdentity(other))).utf8).write(to: URL(fileURLWithPath: otherPublic))
        let recipients = ["--recipient", publicHex, "--recipient", otherPublic]
        // The smaller backups are sealed to recipients too: a passphrase
        // backup's import peaks at Argon2id's 64 MiB, whatever its size.
        var smaller: [(count: Int, path: String, loaded: Loaded)] = []
        for count in Self.smallerCounts {
            try loadPasswords((loaded.items - keyItems)..<(count - keyItems), into: keychain, &loaded)
            phase("load_\(count / 1000)k")
            smaller.append((count, sandbox.root + "/\(count).backup", loaded))
            exportBackup(smaller.last!.path, recipients, input: .devNull, loaded)
            phase("export_\(count / 1000)k")
        }
        try loadPasswords((loaded.items - keyItems)..<(Self.roundTripCount - keyItems), into: keychain, &loaded)
        phase("load_\(Self.roundTripCount / 1000)k")
        XCTAssertEqual(loaded.items, Self.roundTripCount)

        let sealed = sandbox.root + "/sealed.backup"
        exportBackup(backup, ["--passphrase-stdin", "--kdf", "interactive"], input: .text(passphrase), loaded)
        phase("export_passphrase")
        exportBackup(sealed, recipients, input: .devNull, loaded)
        phase("export_recipient")
        let source = dumpItems().filter { migratable($0.value) }
        phase("dump_source")
        XCTAssertEqual(source.count, loaded.migratable)
        var byClass: [String: Int] = [:]
        for item in source.values { byClass[String(decoding: item.dropFirst(10).prefix(4), as: UTF8.self), default: 0] += 1 }
        XCTAssertEqual(byClass, loaded.migratableByClass, "items of each class in the source's dump")

        var peaks: [Int] = [], fileKiB: [Int] = []
        for (count, path, then) in smaller {
            let device = try newDevice()
            defer { device.remove() }
            let imported = measuredImport(["--identity", identity, path], stdin: nil, into: device)
            XCTAssertEqual(imported.out, "imported \(then.migratable) items, skipped 0\n")
            peaks.append(imported.peakKiB)
            fileKiB.append(imported.fileKiB)
            phase("import_\(count / 1000)k")
        }

        let passphraseFile = sandbox.root + "/passphrase"
        ReliabilityFiles.write(passphraseFile, Array(passphrase.utf8))
        var figures: [(String, String)] = []
        for (name, arguments, stdin) in [("passphrase", ["--passphrase-stdin", backup], passphraseFile),
                                         ("recipient", ["--identity", identity, sealed], nil)] as [(String, [String], String?)] {
            let device = try newDevice()
            defer { device.remove() }
            let imported = measuredImport(arguments, stdin: stdin, into: device)
            XCTAssertEqual(imported.out, "imported \(loaded.migratable) items, skipped 0\n", name)
            phase("import_\(name)")
            let after = dumpItems(in: device)
            phase("dump_\(name)")
            XCTAssertEqual(after.count, loaded.migratable, name)
            var differing = 0
            for (ref, item) in source where !Self.same(item, after[ref]) {
                differing += 1
                if differing <= 3 {
                    XCTFail("\(name): item \(ref) differs after the round trip:\n\(String(decoding: item, as: UTF8.self))\n"
                            + (after[ref].map { String(decoding: $0, as: UTF8.self) } ?? "missing"))
                }
            }
            XCTAssertEqual(differing, 0, name)
            phase("compare_\(name)")
            figures += [("\(name)_import", String(format: "%.2fs", imported.seconds)),
                        ("\(name)_rate", "\(Int(Double(loaded.migratable) / imported.seconds))/s"),
                        ("\(name)_peak", "\(imported.peakKiB)KiB")]
            // Flat memory: from a tenth of the items the import grows only by
            // its SQLite page cache, bounded at 16 MiB (Keychain+Import.swift)
            // and never more than the pages of the file it fills; from half
            // the items, twice as many add only what the cache can still take
            // (nothing at the full 100 k, where the file is past 16 MiB by
            // 50 k), 4 MiB of slack. Plus Argon2id's 64 MiB for the passphrase.
            let argon2 = name == "passphrase" ? 65_536 : 0
            let cache = { (kib: Int) in min(kib, 16_384) }
            let cacheGrowth = max(0, cache(imported.fileKiB) - cache(fileKiB[1]))
            let full = Self.roundTripCount / 1000, tenth = Self.smallerCounts[0] / 1000, half = Self.smallerCounts[1] / 1000
            XCTAssertLessThan(imported.peakKiB, peaks[0] + 16_384 + 4_096 + argon2,
                              "\(name): peak \(imported.peakKiB) KiB at \(full) k items against \(peaks[0]) KiB at \(tenth) k")
            XCTAssertLessThan(imported.peakKiB, peaks[1] + cacheGrowth + 4_096 + argon2,
                              "\(name): peak \(imported.peakKiB) KiB at \(full) k items against \(peaks[1]) KiB at \(half) k (the file grew \(imported.fileKiB - fileKiB[1]) KiB)")
        }
        ReliabilityReport.print("backup round trip", [("items", "\(loaded.items)"), ("migratable", "\(loaded.migratable)"),
                                                       ("peak_\(Self.smallerCounts[0] / 1000)k", "\(peaks[0])KiB"),
                                                       ("peak_\(Self.smallerCounts[1] / 1000)k", "\(peaks[1])KiB")] + figures)
        ReliabilityReport.print("backup round trip phases", phases)
    }

    /// An X25519 key pair: the public key in hex, and the path of the secret key's file (mode 600).
    private func makeIdentity(_ name: String) throws -> (String, String) {
        var secret = [UInt8](repeating: 0, count: 32)
        for i in secret.indices { secret[i] = UInt8.random(in: 0...255) }
        let path = sandbox.root + "/\(name).key"
        try Data((Hex.encode(secret) + "\n").utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        return (Hex.encode(try BackupRecipients.publicKey(secretKey: SecureBytes(copying: secret))), path)
    }

    private func readIdentity(_ path: String) throws -> SecureBytes {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return try SecureBytes(copying: try XCTUnwrap(Hex.decode(text)))
    }

    /// `export --format backup -o PATH --passphrase-stdin` of the sandbox's
    /// keychain with the passphrase "pw", run in-process (`InProcessCLI`,
    /// the same command) at libsodium's minimum Argon2id cost, for the tests
    /// of what the binary's `import` does with a backup: each import hashes
    /// the passphrase at the backup's cost, and the binary writes nothing
    /// below INTERACTIVE (~0.1 CPU-s a hash). The binary's own export is the
    /// round trip's and the other tests'.
    private func exportForImports(_ path: String, file: StaticString = #filePath, line: UInt = #line) {
        let exported = InProcessCLI.run(["export", "--format", "backup", "-o", path, "--passphrase-stdin"],
                                        environment: sandbox.environment, input: .text("pw\n"))
        XCTAssertEqual(exported.status, 0, exported.summary, file: file, line: line)
    }

    /// A small backup, and a target keychain that already holds one item.
    private func smallBackup() throws -> (bytes: [UInt8], device: Sandbox) {
        initKeychain()
        unlock()
        add("-s", "one", "-a", "a", secret: "1")
        add("--class", "inet", "--server", "two.example", "-a", "b", "-r", "https", secret: "2")
        add("-s", "three", "-a", "c", "-j", "a comment", secret: "3")
        exportForImports(backup)
        let device = try Sandbox()
        initKeychain(in: device)
        unlock(in: device)
        let added = locket(in: device, "add", "-s", "already", "-a", "here", "-w", input: .text("x\n"))
        XCTAssertEqual(added.status, 0, added.summary)
        return (Array(try Data(contentsOf: URL(fileURLWithPath: backup))), device)
    }

    /// Flipped bits and truncations (a sample: the reader's own tests try every one) import nothing and say why.
    func testDamagedBackupImportsNothing() throws {
        let (bytes, device) = try smallBackup()
        defer { device.remove() }
        let before = dumpItems(in: device)
        let damaged = sandbox.root + "/damaged.backup"
        var cases: [([UInt8], String)] = []
        for offset in stride(from: 8, to: bytes.count, by: max(1, bytes.count / 12)) {
            var copy = bytes
            copy[offset] ^= 1 << UInt8(offset % 8)
            cases.append((copy, "bit \(offset % 8) of byte \(offset) flipped"))
        }
        for length in [9, 100, bytes.count / 2, bytes.count - 17, bytes.count - 1] {
            cases.append((Array(bytes.prefix(length)), "cut at \(length) of \(bytes.count) bytes"))
        }
        var reordered = bytes
        reordered.append(contentsOf: bytes.suffix(20))
        cases.append((reordered, "bytes after the end"))
        for (copy, what) in cases {
            try Data(copy).write(to: URL(fileURLWithPath: damaged))
            let result = locket(in: device, "import", "--passphrase-stdin", damaged, input: .text("pw\n"))
            XCTAssertNotEqual(result.status, 0, "\(what): \(result.summary)")
            XCTAssertTrue(result.err.contains("errSecDecode") || result.err.contains("errSecAuthFailed"), "\(what): \(result.err)")
            XCTAssertEqual(result.out, "", what)
        }
        XCTAssertEqual(dumpItems(in: device), before, "a damaged backup changed the keychain")
        let good = locket(in: device, "import", "--passphrase-stdin", backup, input: .text("pw\n"))
        XCTAssertEqual(good.out, "imported 3 items, skipped 0\n", good.summary)
    }

    /// Chunks swapped or dropped in a backup of several chunks: refused, nothing imported.
    func testReorderedOrDroppedChunksImportNothing() throws {
        initKeychain()
        unlock()
        for i in 0..<4 { addBytes("-s", "big\(i)", "-a", "a", data: [UInt8](repeating: UInt8(i), count: 50_000)) }
        exportForImports(backup)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: backup)))
        // Passphrase header: 15 fixed bytes, 1 + 8 + 8 + 16 + 72 of the mode, 24 of the stream.
        var offset = 15 + 105 + 24
        var chunks: [[UInt8]] = []
        while offset < bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            chunks.append(Array(bytes[offset..<offset + 4 + length]))
            offset += 4 + length
        }
        XCTAssertEqual(chunks.count, 4, "50 kB secrets in 64 KiB chunks")
        let header = Array(bytes[0..<(15 + 105 + 24)])
        let device = try Sandbox()
        defer { device.remove() }
        initKeychain(in: device)
        unlock(in: device)
        let damaged = sandbox.root + "/damaged.backup"
        for (what, order) in [("swapped", [0, 2, 1, 3]), ("dropped", [0, 1, 3]), ("repeated", [0, 1, 1, 2, 3]), ("last dropped", [0, 1, 2])] {
            try Data(header + order.flatMap { chunks[$0] }).write(to: URL(fileURLWithPath: damaged))
            let result = locket(in: device, "import", "--passphrase-stdin", damaged, input: .text("pw\n"))
            XCTAssertNotEqual(result.status, 0, "\(what): \(result.summary)")
            XCTAssertTrue(result.err.contains("errSecDecode"), "\(what): \(result.err)")
        }
        XCTAssertEqual(dumpItems(in: device).count, 0, "a reordered backup added items")
    }

    /// Standard output when it is not a terminal, and standard input for the backup.
    func testThroughAPipe() throws {
        initKeychain()
        unlock()
        add("-s", "piped", "-a", "a", secret: "p")
        let (publicHex, identity) = try makeIdentity("me")
        let exported = locket("export", "--format", "backup", "--recipient", publicHex)
        XCTAssertEqual(exported.status, 0, exported.summary)
        XCTAssertEqual(Array(exported.stdout.prefix(8)), Array("LOCKETBK".utf8))
        let device = try Sandbox()
        defer { device.remove() }
        initKeychain(in: device)
        unlock(in: device)
        let imported = locket(in: device, "import", "--identity", identity, "-", input: .bytes(exported.stdout))
        XCTAssertEqual(imported.out, "imported 1 item, skipped 0\n", imported.summary)
    }

    /// A passphrase backup on standard input: the passphrase can't come from
    /// there too (it would be read from the backup's own bytes); refused at
    /// once, nothing imported.
    func testPassphraseBackupOnStandardInputIsRefusedAtOnce() throws {
        initKeychain()
        unlock()
        add("-s", "piped", "-a", "a", secret: "p")
        let exported = locket("export", "--format", "backup", "--passphrase-stdin", "--kdf", "interactive", input: .text("pass phrase\n"))
        XCTAssertEqual(exported.status, 0, exported.summary)
        let device = try Sandbox()
        defer { device.remove() }
        initKeychain(in: device)
        unlock(in: device)
        let imported = locket(in: device, "import", "-", input: .bytes(exported.stdout))
        XCTAssertNotEqual(imported.status, 0, imported.summary)
        XCTAssertTrue(imported.err.contains("errSecInteractionNotAllowed"), imported.summary)
        XCTAssertLessThan(imported.duration, 10, "waited for a passphrase on the backup's own stdin (the run is killed at 20 s)")
        XCTAssertEqual(dumpItems(in: device).count, 0)
    }

    func testWrongPassphraseAndOtherRecipientImportNothing() throws {
        let (_, device) = try smallBackup()
        defer { device.remove() }
        let before = dumpItems(in: device)
        let wrong = locket(in: device, "import", "--passphrase-stdin", backup, input: .text("not it\n"))
        assertError(wrong, "errSecAuthFailed", -25293)
        let (publicHex, _) = try makeIdentity("writer")
        let sealed = sandbox.root + "/sealed.backup"
        let exported = locket(["export", "--format", "backup", "-o", sealed, "--recipient", publicHex])
        XCTAssertEqual(exported.status, 0, exported.summary)
        let (_, stranger) = try makeIdentity("stranger")
        let other = locket(in: device, "import", "--identity", stranger, sealed)
        assertError(other, "errSecAuthFailed", -25293)
        XCTAssertTrue(other.err.contains("other recipients"), other.err)
        XCTAssertEqual(dumpItems(in: device), before)
    }

    func testIdentityFileOthersCanReadIsRefused() throws {
        initKeychain()
        let (publicHex, identity) = try makeIdentity("me")
        XCTAssertEqual(locket("export", "--format", "backup", "-o", backup, "--recipient", publicHex).status, 0)
        chmod(identity, 0o644)
        let result = locket("import", "--identity", identity, backup)
        assertError(result, "errSecParam", -50)
        XCTAssertTrue(result.err.contains("others can read it"), result.err)
    }

    func testExistingItemsAreSkippedOrUpdatedWithU() throws {
        initKeychain()
        unlock()
        add("-s", "svc", "-a", "alice", "-j", "old comment", secret: "old")
        exportForImports(backup)
        let skipped = locket("import", "--passphrase-stdin", backup, input: .text("pw\n"))
        XCTAssertEqual(skipped.out, "imported 0 items, skipped 1 (1 already in the keychain; -U updates them)\n", skipped.summary)
        let updated1 = locket("update", "-s", "svc", "-a", "alice", "--set", "comment=new comment", "-w", input: .text("new\n"))
        XCTAssertEqual(updated1.status, 0, updated1.summary)
        let updated = locket("import", "-U", "--passphrase-stdin", backup, input: .text("pw\n"))
        XCTAssertEqual(updated.out, "imported 0 items, updated 1, skipped 0\n", updated.summary)
        XCTAssertEqual(secret("-s", "svc", "-a", "alice"), Array("old".utf8))
        XCTAssertTrue(locket("find", "-s", "svc").out.contains("comment: old comment"))
    }

    /// Items already there scattered among new ones, more of them than the
    /// import's writer thread queues: each duplicate stops the writer, is
    /// resolved, and the rows after it follow; every item is counted once,
    /// and `-U` updates exactly the existing ones.
    func testExistingItemsAmongNewOnesAreCountedOnce() throws {
        initKeychain()
        unlock(timeout: "none")
        let count = 1_500
        func item(_ i: Int) throws -> NewItem {
            var item = NewItem(itemClass: .genericPassword)
            try item.set(.service, Array("svc-\(i)".utf8))
            try item.set(.account, Array("acct".utf8))
            return item
        }
        let keychain = try Keychain.open(at: sandbox.loginKeychain, environment: Environment(sandbox.environment))
        try keychain.addBatch(try (0..<count).map { (item: try item($0), data: try SecureBytes(copying: Array("old-\($0)".utf8))) })
        exportForImports(backup)
        // Every third item is deleted (so it imports again); the others stay and
        // get a new secret, so -U shows which ones it updated.
        // In one transaction: 1,500 commits each synced to disk were most of the test's time.
        var deleted = 0
        try keychain.engine.transaction(write: true) {
            for i in 0..<count {
                var query = Query(itemClass: .genericPassword)
                try query.match(.service, Array("svc-\(i)".utf8))
                if i % 3 == 0 {
                    deleted += try keychain.delete(query)
                } else {
                    _ = try keychain.update(query, changes: [:], data: SecureBytes(copying: Array("new-\(i)".utf8)))
                }
            }
        }
        XCTAssertEqual(deleted, count / 3)
        let kept = count - deleted
        let skipped = locket("import", "--passphrase-stdin", backup, input: .text("pw\n"))
        XCTAssertEqual(skipped.out, "imported \(deleted) items, skipped \(kept) (\(kept) already in the keychain; -U updates them)\n",
                       skipped.summary)
        XCTAssertEqual(secret("-s", "svc-3", "-a", "acct"), Array("old-3".utf8))
        XCTAssertEqual(secret("-s", "svc-4", "-a", "acct"), Array("new-4".utf8))
        let updated = locket("import", "-U", "--passphrase-stdin", backup, input: .text("pw\n"))
        XCTAssertEqual(updated.out, "imported 0 items, updated \(count), skipped 0\n", updated.summary)
        XCTAssertEqual(secret("-s", "svc-4", "-a", "acct"), Array("old-4".utf8))
        XCTAssertEqual(secret("-s", "svc-\(count - 1)", "-a", "acct"), Array("old-\(count - 1)".utf8))
    }

    /// A SIGKILL at any instant of an import (reading, sealing, the writer
    /// thread inserting, the commit) leaves the keychain with none of the
    /// backup's items or with all of them.
    func testAKilledImportLeavesNoneOrAll() throws {
        initKeychain()
        unlock(timeout: "none")
        let count = 4_000
        let keychain = try Keychain.open(at: sandbox.loginKeychain, environment: Environment(sandbox.environment))
        try keychain.addBatch(try (0..<count).map { i in
            var item = NewItem(itemClass: .genericPassword)
            try item.set(.service, Array("svc-\(i)".utf8))
            return (item: item, data: try SecureBytes(copying: Array("secret-\(i)".utf8)))
        })
        // At the minimum cost, the import's hash is a millisecond: the kills
        // below land in the reading, sealing and writing they are about, not
        // in Argon2id (a tenth of a second at the binary's floor).
        exportForImports(backup)
        let passphrase = sandbox.root + "/passphrase"
        try Data("pw\n".utf8).write(to: URL(fileURLWithPath: passphrase))
        /// The import into a new keychain `name`, killed after `delay` ms; whether the kill
        /// landed, the items the keychain then holds, and the import's own milliseconds.
        func importInto(_ name: String, killAfter delay: Double?) -> (killed: Bool, items: Int, milliseconds: Double) {
            let path = sandbox.root + "/\(name).keychain"
            initKeychain(path)
            XCTAssertEqual(locket(["-k", path, "unlock", "--password-stdin", "--timeout", "none"],
                                  input: .text(EndToEndCase.password + "\n")).status, 0)
            let started = ReliabilityClock.now()
            guard let child = ReliabilityChild.spawn(binary, ["-k", path, "import", "--passphrase-stdin", backup],
                                                     environment: sandbox.environment, stdin: passphrase) else {
                XCTFail("cannot spawn locket")
                return (false, -1, 0)
            }
            if let delay {
                ReliabilityClock.sleep(milliseconds: delay)
                child.kill()
            }
            let exit = child.wait()
            let milliseconds = (ReliabilityClock.now() - started) * 1000
            let dumped = locket(["-k", path, "--json", "dump"])
            XCTAssertEqual(dumped.status, 0, dumped.summary)
            return (exit.signal == SIGKILL, dumped.out.split(separator: "\n").filter { $0.contains("\"class\"") }.count, milliseconds)
        }
        let uninterrupted = importInto("whole", killAfter: nil)
        XCTAssertEqual(uninterrupted.items, count)
        // The import's own time, not the set-up's around it (a new keychain, an unlock, a dump).
        let whole = uninterrupted.milliseconds
        var killed = 0
        for trial in 0..<10 {
            // Spread over the whole import, a little past its end.
            let result = importInto("killed-\(trial)", killAfter: whole * (Double(trial) + 0.5) / 9)
            if result.killed { killed += 1 }
            XCTAssertTrue(result.items == 0 || result.items == count, "trial \(trial): \(result.items) of \(count) items")
            XCTAssertTrue(result.killed || result.items == count, "trial \(trial) ended without the kill and without its items")
        }
        XCTAssertGreaterThan(killed, 0, "no kill landed during the import")
        ReliabilityReport.print("backup killed import", [("whole_ms", String(format: "%.0f", whole)), ("killed", "\(killed) of 10")])
    }

    func testOutputFileIsNotReplacedWithoutForce() throws {
        initKeychain()
        try Data("keep".utf8).write(to: URL(fileURLWithPath: backup))
        let refused = locket(["export", "--format", "backup", "-o", backup, "--passphrase-stdin"], input: .text("pw\n"))
        assertError(refused, "errSecParam", -50)
        XCTAssertEqual(try String(contentsOfFile: backup, encoding: .utf8), "keep")
        let forced = locket(["export", "--format", "backup", "-o", backup, "-f", "--passphrase-stdin", "--kdf", "interactive"],
                            input: .text("pw\n"))
        XCTAssertEqual(forced.status, 0, forced.summary)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: backup)).prefix(8)), Array("LOCKETBK".utf8))
    }

    func testANonBackupFileIsRefusedNamingTheFormats() throws {
        initKeychain()
        try Data("Title,Url,Username,Password\n".utf8).write(to: URL(fileURLWithPath: backup))
        let result = locket("import", backup)
        assertError(result, "errSecDecode", -26275)
        XCTAssertTrue(result.err.contains("--from"), result.err)
    }

    /// An app exports only its own groups and imports only into them.
    func testAppExportsAndImportsOnlyItsGroups() throws {
        initKeychain()
        unlock()
        let (a, b) = writeApps()
        XCTAssertEqual(locket(["-e", a, "add", "-s", "of-a", "-a", "x", "-w"], input: .text("a\n")).status, 0)
        XCTAssertEqual(locket(["-e", b, "add", "-s", "of-b", "-a", "x", "-w"], input: .text("b\n")).status, 0)
        let exported = locket(["-e", a, "export", "--format", "backup", "-o", backup, "--passphrase-stdin", "--kdf", "interactive"],
                              input: .text("pw\n"))
        XCTAssertTrue(exported.err.contains("exported 1 item"), exported.summary)
        let everything = sandbox.root + "/all.backup"
        exportForImports(everything)
        XCTAssertEqual(locket("delete", "--all").status, 0)
        let imported = locket(["-e", b, "import", "--passphrase-stdin", everything], input: .text("pw\n"))
        XCTAssertEqual(imported.status, 0, imported.summary)
        XCTAssertTrue(imported.out.hasSuffix("imported 1 item, skipped 1\n"), imported.out)
        XCTAssertTrue(imported.out.contains("not one of this app's groups"), imported.out)
    }
}
