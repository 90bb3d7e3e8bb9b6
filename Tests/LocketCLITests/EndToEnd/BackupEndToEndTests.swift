import Foundation
import LocketCore
import LocketSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 15: `export --format backup` and `import BACKUP` through the binary.
final class BackupEndToEndTests: EndToEndCase {
    /// Items in the round trip: 10,000 in `make test`, 100,000 under `make soak` (LOCKET_SOAK).
    static var roundTripCount: Int { ProcessInfo.processInfo.environment["LOCKET_SOAK"].map { _ in 100_000 } ?? 10_000 }

    private var backup: String { sandbox.root + "/keychain.backup" }

    /// Mixed items of both classes in every protection class, loaded in one transaction per 5,000.
    private func load(_ count: Int) throws -> Int {
        unlock(timeout: "none")
        let keychain = try Keychain.open(at: sandbox.loginKeychain, environment: Environment(sandbox.environment))
        let classes = ProtectionClass.allCases
        var thisDeviceOnly = 0
        for start in stride(from: 0, to: count, by: 5_000) {
            var batch: [(item: NewItem, data: SecureBytes)] = []
            for i in start..<min(start + 5_000, count) {
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
                if item.accessible!.thisDeviceOnly { thisDeviceOnly += 1 }
                batch.append((item, SecureBytes(copying: Array("secret-\(i)-\u{1}".utf8) + [0, 0xff])))
            }
            try keychain.addBatch(batch)
        }
        return thisDeviceOnly
    }

    /// Every item of a `--json dump --data`, keyed by persistent reference.
    private func dump(in other: Sandbox? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> [String: NSDictionary] {
        let result = locket(["--json", "dump", "--data"], environment: other?.environment ?? [:], file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        let items = try XCTUnwrap(try result.json() as? [[String: Any]], file: file, line: line)
        return Dictionary(uniqueKeysWithValues: items.map { ($0["persistentRef"] as! String, $0 as NSDictionary) })
    }

    private func roundTrip(export: [String], exportInput: Input, importArguments: [String], importInput: Input) throws {
        initKeychain()
        let count = Self.roundTripCount
        let leftOut = try load(count)
        let exported = locket(["export", "--format", "backup", "-o", backup] + export, input: exportInput)
        XCTAssertEqual(exported.status, 0, exported.summary)
        XCTAssertTrue(exported.err.contains("\(leftOut) ThisDeviceOnly items were left out"), exported.err)
        XCTAssertEqual(mode(backup), 0o600)

        let device = try Sandbox()
        defer { device.remove() }
        initKeychain(in: device)
        unlock(in: device)
        let started = Date()
        let imported = locket(["import"] + importArguments + [backup], input: importInput, environment: device.environment)
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(imported.status, 0, imported.summary)
        XCTAssertEqual(imported.out, "imported \(count - leftOut) items, skipped 0\n")
        print("backup round trip: \(count - leftOut) items imported in \(String(format: "%.2f", seconds)) s")

        let before = try dump()
        let after = try dump(in: device)
        XCTAssertEqual(after.count, count - leftOut)
        var compared = 0
        for (ref, item) in before where (item["accessible"] as? String).map({ !$0.hasSuffix("this-device-only") }) ?? false {
            XCTAssertEqual(after[ref], item, "item \(ref) differs after the round trip")
            compared += 1
        }
        XCTAssertEqual(compared, count - leftOut)
    }

    func testPassphraseRoundTripOntoANewDevice() throws {
        let passphrase = "backup passphrase\n"
        try roundTrip(export: ["--passphrase-stdin", "--kdf", "interactive"], exportInput: .text(passphrase),
                      importArguments: ["--passphrase-stdin"], importInput: .text(passphrase))
    }

    func testRecipientRoundTripOntoANewDevice() throws {
        let (publicHex, identity) = try makeIdentity("me")
        // One recipient given as hex, another as a file: either opens it.
        let (_, other) = try makeIdentity("other")
        let otherPublic = sandbox.root + "/other.pub"
        try Data(Hex.encode(try BackupRecipients.publicKey(secretKey: try readIdentity(other))).utf8).write(to: URL(fileURLWithPath: otherPublic))
        try roundTrip(export: ["--recipient", publicHex, "--recipient", otherPublic], exportInput: .devNull,
                      importArguments: ["--identity", identity], importInput: .devNull)
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
        return SecureBytes(copying: try XCTUnwrap(Hex.decode(text)))
    }

    /// A small backup, and a target keychain that already holds one item.
    private func smallBackup() throws -> (bytes: [UInt8], device: Sandbox) {
        initKeychain()
        unlock()
        add("-s", "one", "-a", "a", secret: "1")
        add("--class", "inet", "--server", "two.example", "-a", "b", "-r", "https", secret: "2")
        add("-s", "three", "-a", "c", "-j", "a comment", secret: "3")
        let exported = locket(["export", "--format", "backup", "-o", backup, "--passphrase-stdin", "--kdf", "interactive"],
                              input: .text("pw\n"))
        XCTAssertEqual(exported.status, 0, exported.summary)
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
        let before = try dump(in: device)
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
        XCTAssertEqual(try dump(in: device), before, "a damaged backup changed the keychain")
        let good = locket(in: device, "import", "--passphrase-stdin", backup, input: .text("pw\n"))
        XCTAssertEqual(good.out, "imported 3 items, skipped 0\n", good.summary)
    }

    /// Chunks swapped or dropped in a backup of several chunks: refused, nothing imported.
    func testReorderedOrDroppedChunksImportNothing() throws {
        initKeychain()
        unlock()
        for i in 0..<4 { addBytes("-s", "big\(i)", "-a", "a", data: [UInt8](repeating: UInt8(i), count: 50_000)) }
        XCTAssertEqual(locket(["export", "--format", "backup", "-o", backup, "--passphrase-stdin", "--kdf", "interactive"],
                              input: .text("pw\n")).status, 0)
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
        XCTAssertEqual(try dump(in: device).count, 0, "a reordered backup added items")
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
        XCTAssertLessThan(imported.duration, 5, "waited for a passphrase on the backup's own stdin")
        XCTAssertEqual(try dump(in: device).count, 0)
    }

    func testWrongPassphraseAndOtherRecipientImportNothing() throws {
        let (_, device) = try smallBackup()
        defer { device.remove() }
        let before = try dump(in: device)
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
        XCTAssertEqual(try dump(in: device), before)
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
        XCTAssertEqual(locket(["export", "--format", "backup", "-o", backup, "--passphrase-stdin", "--kdf", "interactive"],
                              input: .text("pw\n")).status, 0)
        let skipped = locket("import", "--passphrase-stdin", backup, input: .text("pw\n"))
        XCTAssertEqual(skipped.out, "imported 0 items, skipped 1 (1 already in the keychain; -U updates them)\n", skipped.summary)
        let updated1 = locket("update", "-s", "svc", "-a", "alice", "--set", "comment=new comment", "-w", input: .text("new\n"))
        XCTAssertEqual(updated1.status, 0, updated1.summary)
        let updated = locket("import", "-U", "--passphrase-stdin", backup, input: .text("pw\n"))
        XCTAssertEqual(updated.out, "imported 0 items, updated 1, skipped 0\n", updated.summary)
        XCTAssertEqual(secret("-s", "svc", "-a", "alice"), Array("old".utf8))
        XCTAssertTrue(locket("find", "-s", "svc").out.contains("comment: old comment"))
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
        XCTAssertEqual(locket(["export", "--format", "backup", "-o", everything, "--passphrase-stdin", "--kdf", "interactive"],
                              input: .text("pw\n")).status, 0)
        XCTAssertEqual(locket("delete", "--all").status, 0)
        let imported = locket(["-e", b, "import", "--passphrase-stdin", everything], input: .text("pw\n"))
        XCTAssertEqual(imported.status, 0, imported.summary)
        XCTAssertTrue(imported.out.hasSuffix("imported 1 item, skipped 1\n"), imported.out)
        XCTAssertTrue(imported.out.contains("not one of this app's groups"), imported.out)
    }
}
