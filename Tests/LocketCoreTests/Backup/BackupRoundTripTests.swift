import Foundation
import LocketCore
import XCTest

/// Issue 15: every field of every record survives a backup, through a
/// passphrase and through recipients' keys, with flat memory: at 20 k records
/// in `make test` (memory sampled over the last 18 k), the full 100 k in
/// `make soak` (LOCKET_SOAK).
final class BackupRoundTripTests: XCTestCase {
    static let count = ReliabilityScale.soak ? 100_000 : 20_000

    private struct Figures {
        var writeSeconds = 0.0
        var readSeconds = 0.0
        var bytes = 0
        var residentGrowthKiB = 0
    }

    /// Writes `count` sample records, reads them back and compares each one;
    /// resident memory is sampled while reading and must not grow with the count.
    private func roundTrip(count: Int, write makeWriter: (Int32) throws -> BackupWriter,
                           open: (BackupReader) throws -> Void) throws -> Figures {
        let file = TemporaryFile()
        defer { file.remove() }
        var figures = Figures()
        let fd = file.create()
        XCTAssertGreaterThanOrEqual(fd, 0)
        // Only the writer's and reader's own calls are timed, not making and comparing the samples.
        let clock = ContinuousClock()
        var spent = Duration.zero
        var start = clock.now
        let writer = try makeWriter(fd)
        for i in 0..<count {
            let record = try SampleRecords.record(i)
            start = clock.now
            try writer.append(record)
            spent += clock.now - start
        }
        start = clock.now
        try writer.finish()
        close(fd)
        spent += clock.now - start
        figures.writeSeconds = Double(spent.components.seconds) + Double(spent.components.attoseconds) / 1e18
        XCTAssertEqual(writer.count, count)
        figures.bytes = file.size

        let input = file.openForReading()
        defer { close(input) }
        spent = .zero
        start = clock.now
        let reader = try BackupReader(fd: input)
        try open(reader)
        spent += clock.now - start
        var i = 0
        var baseline = 0
        var largest = 0
        while true {
            start = clock.now
            let next = try reader.next()
            spent += clock.now - start
            guard let record = next else { break }
            if i < 3 || i % 97 == 0 { SampleRecords.assertEqual(try SampleRecords.record(i), record, "record \(i)") }
            else {
                // Cheaper check for the rest, still every field that varies.
                let expected = try SampleRecords.record(i)
                if record.attributes != expected.attributes || !record.data.constantTimeEquals(expected.data)
                    || record.persistentRef != expected.persistentRef || record.extra?.bytes != expected.extra?.bytes
                    || record.accessible != expected.accessible || record.accessGroup != expected.accessGroup
                    || record.creationDate != expected.creationDate || record.modificationDate != expected.modificationDate
                    || record.itemClass != expected.itemClass {
                    SampleRecords.assertEqual(expected, record, "record \(i)")
                    return figures
                }
            }
            i += 1
            if i == min(10_000, count / 10) { baseline = ProcessMemory.residentKiB }
            if i % 5_000 == 0 { largest = max(largest, ProcessMemory.residentKiB) }
        }
        figures.readSeconds = Double(spent.components.seconds) + Double(spent.components.attoseconds) / 1e18
        XCTAssertEqual(i, count)
        XCTAssertTrue(reader.isComplete)
        XCTAssertNil(try reader.next(), "a finished reader stays finished")
        figures.residentGrowthKiB = max(0, largest - baseline)
        return figures
    }

    private func report(_ name: String, _ f: Figures) {
        let count = Double(BackupRoundTripTests.count)
        print(String(format: "backup %@: %d records, %.1f MB; write %.2f s (%.0f records/s), read+verify %.2f s (%.0f records/s); resident growth while reading %d KiB; process peak RSS %d KiB",
                     name, BackupRoundTripTests.count, Double(f.bytes) / 1e6, f.writeSeconds, count / f.writeSeconds,
                     f.readSeconds, count / f.readSeconds, f.residentGrowthKiB, ProcessMemory.peakKiB))
        // Flat memory: reading the last nine tenths of the records may not grow the process by more than a few MiB.
        XCTAssertLessThan(f.residentGrowthKiB, 8 * 1024, "\(name): memory grew while reading")
        #if !DEBUG
        XCTAssertGreaterThan(count / f.writeSeconds, 100_000, "\(name): write slower than 100 k records/s")
        XCTAssertGreaterThan(count / f.readSeconds, 100_000, "\(name): read slower than 100 k records/s")
        #endif
    }

    func testHundredThousandRecordsThroughAPassphrase() throws {
        let passphrase = try SecureBytes(copying: Array("correct horse battery staple".utf8))
        let figures = try roundTrip(count: BackupRoundTripTests.count, write: {
            try BackupWriter(fd: $0, passphrase: passphrase, cost: weakKDF())
        }, open: { reader in
            guard case .passphrase(let p) = reader.protection else { return XCTFail("mode") }
            XCTAssertEqual(p.opsLimit, 1)
            try reader.open(passphrase: SecureBytes(copying: Array("correct horse battery staple".utf8)))
        })
        report("passphrase", figures)
    }

    func testHundredThousandRecordsThroughRecipients() throws {
        let alice = try recipientKeyPair(), bob = try recipientKeyPair()
        let figures = try roundTrip(count: BackupRoundTripTests.count, write: {
            try BackupWriter(fd: $0, recipients: [alice.publicKey, bob.publicKey])
        }, open: { reader in
            XCTAssertEqual(reader.protection, .recipients(count: 2))
            try reader.open(secretKey: bob.secretKey)
        })
        report("recipients", figures)
    }

    /// Either recipient opens it; the same key twice is one entry.
    func testEveryRecipientOpensTheBackup() throws {
        let keys = try (0..<3).map { _ in try recipientKeyPair() }
        let file = TemporaryFile()
        defer { file.remove() }
        let fd = file.create()
        let writer = try BackupWriter(fd: fd, recipients: keys.map(\.publicKey) + [keys[0].publicKey])
        try writer.append(SampleRecords.record(1))
        try writer.finish()
        close(fd)
        for key in keys {
            let reader = try BackupReader(bytes: file.bytes)
            XCTAssertEqual(reader.protection, .recipients(count: 3))
            try reader.open(secretKey: key.secretKey)
            SampleRecords.assertEqual(try SampleRecords.record(1), try XCTUnwrap(reader.next()), "record")
            XCTAssertNil(try reader.next())
        }
    }

    /// The largest secret, split across many small chunks, and an empty backup.
    func testLargestSecretAcrossChunksAndAnEmptyBackup() throws {
        let passphrase = try SecureBytes(copying: Array("pw".utf8))
        let file = TemporaryFile()
        defer { file.remove() }
        var fd = file.create()
        var big = try SampleRecords.record(2)
        big.data = try SampleRecords.secure(SampleRecords.bytes(Keychain.maximumDataLength) { UInt8(truncatingIfNeeded: $0 >> 3) })
        var writer = try BackupWriter(fd: fd, passphrase: passphrase, cost: weakKDF(), chunkSize: 4096)
        try writer.append(SampleRecords.record(0))
        try writer.append(big)
        try writer.append(SampleRecords.record(3))
        try writer.finish()
        close(fd)
        var reader = try BackupReader(bytes: file.bytes)
        try reader.open(passphrase: passphrase)
        SampleRecords.assertEqual(try SampleRecords.record(0), try XCTUnwrap(reader.next()), "first")
        SampleRecords.assertEqual(big, try XCTUnwrap(reader.next()), "big")
        SampleRecords.assertEqual(try SampleRecords.record(3), try XCTUnwrap(reader.next()), "last")
        XCTAssertNil(try reader.next())

        fd = file.create()
        writer = try BackupWriter(fd: fd, passphrase: passphrase, cost: weakKDF())
        try writer.finish()
        close(fd)
        reader = try BackupReader(bytes: file.bytes)
        try reader.open(passphrase: passphrase)
        XCTAssertNil(try reader.next())
        XCTAssertTrue(reader.isComplete)
    }

    /// What a writer refuses: ThisDeviceOnly items, attributes the class lacks, access group as an attribute, secrets over the limit.
    func testWriterRefusesRecordsThatCannotBeImported() throws {
        let file = TemporaryFile()
        defer { file.remove() }
        let fd = file.create()
        defer { close(fd) }
        let writer = try BackupWriter(fd: fd, passphrase: SecureBytes(copying: [1]), cost: weakKDF())
        var record = try SampleRecords.record(0)
        record.attributes[.server] = Array("x".utf8)
        XCTAssertThrowsError(try writer.append(record)) { XCTAssertEqual(($0 as? KeychainError)?.code, .param) }
        record = try SampleRecords.record(0)
        record.attributes[.accessGroup] = Array("g".utf8)
        XCTAssertThrowsError(try writer.append(record)) { XCTAssertEqual(($0 as? KeychainError)?.code, .param) }
        record = try SampleRecords.record(0)
        record.data = try SecureBytes(count: Keychain.maximumDataLength + 1)
        XCTAssertThrowsError(try writer.append(record)) { XCTAssertEqual(($0 as? KeychainError)?.code, .param) }
        for accessible in ProtectionClass.allCases.filter(\.thisDeviceOnly) {
            record = try SampleRecords.record(0)
            record.accessible = accessible
            XCTAssertThrowsError(try writer.append(record), accessible.name) {
                XCTAssertTrue(($0 as? KeychainError)?.message.contains("never leaves this device") == true)
            }
        }
        XCTAssertEqual(writer.count, 0)
        XCTAssertThrowsError(try BackupWriter(fd: fd, recipients: [[UInt8](repeating: 0, count: 32)])) {
            XCTAssertEqual(($0 as? KeychainError)?.code, .param, "a small-order key")
        }
        XCTAssertThrowsError(try BackupWriter(fd: fd, recipients: [])) { XCTAssertEqual(($0 as? KeychainError)?.code, .param) }
    }
}
