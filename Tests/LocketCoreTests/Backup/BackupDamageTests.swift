@testable import LocketCore
import XCTest

/// Issue 15: a damaged, truncated or reordered backup, a wrong passphrase or
/// another recipient's backup never reads to its end, and says why.
final class BackupDamageTests: XCTestCase {
    private let passphrase = try! SecureBytes(copying: Array("hunter2 but longer".utf8))

    /// A small backup of several 1 KiB chunks (records span chunks).
    private func smallBackup(recipients: [[UInt8]]? = nil, records: Int = 3) throws -> [UInt8] {
        let file = TemporaryFile()
        defer { file.remove() }
        let fd = file.create()
        let writer = try recipients.map { try BackupWriter(fd: fd, recipients: $0, chunkSize: 1024) }
            ?? BackupWriter(fd: fd, passphrase: passphrase, cost: weakKDF(), chunkSize: 1024)
        for i in 0..<records {
            var record = try SampleRecords.record(i)
            record.data = try SecureBytes(copying: (0..<600).map { UInt8(truncatingIfNeeded: $0 + i) })
            try writer.append(record)
        }
        try writer.finish()
        close(fd)
        return file.bytes
    }

    /// Reads to the end; returns the error that stopped it, or nil if it read to the end.
    private func failure(_ bytes: [UInt8], open: (BackupReader) throws -> Void) -> KeychainError? {
        do {
            let reader = try BackupReader(bytes: bytes)
            try open(reader)
            while try reader.next() != nil {}
            return nil
        } catch let error as KeychainError {
            return error
        } catch {
            XCTFail("not a KeychainError: \(error)")
            return nil
        }
    }

    private func openPassphrase(_ reader: BackupReader) throws { try reader.open(passphrase: passphrase) }

    /// The byte offsets where chunks start (after the header), from their length prefixes.
    private func chunkOffsets(_ bytes: [UInt8], headerLength: Int) -> [Int] {
        var offsets: [Int] = []
        var i = headerLength
        while i + 4 <= bytes.count {
            offsets.append(i)
            i += 4 + bytes[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) }
        }
        XCTAssertEqual(i, bytes.count)
        return offsets
    }

    private let passphraseHeaderLength = 8 + 2 + 4 + 1 + 1 + 8 + 8 + 16 + 72 + 24

    /// The length of `bytes`' header as the reader reads it, and the file key
    /// `fileKey` opens from it. A flip after the header leaves the header as
    /// it was, and so its key: the flip tests derive it once for those flips
    /// (a passphrase's is an Argon2 run, a mapping of its memory included;
    /// a recipient's two X25519 operations) and start the reader with it,
    /// as `open` does, then read the damaged chunks as any reader would.
    private func header(_ bytes: [UInt8], fileKey: (BackupHeader) throws -> SecureBytes) throws -> (length: Int, fileKey: SecureBytes) {
        let input = BackupInput(bytes: bytes)
        let header = try BackupHeader.read(from: input)
        let length = bytes.count - (try input.read(bytes.count)).count
        let key = try fileKey(header)
        XCTAssertNil(failure(bytes) { try $0.start(key) }, "the intact backup read with the key its header gave")
        return (length, key)
    }

    func testIntactSmallBackupReads() throws {
        let bytes = try smallBackup()
        XCTAssertNil(failure(bytes, open: openPassphrase))
        XCTAssertGreaterThanOrEqual(chunkOffsets(bytes, headerLength: passphraseHeaderLength).count, 3)
    }

    /// Every single-bit flip anywhere in the file is refused: errSecDecode,
    /// or errSecAuthFailed where the flip is in what the passphrase opens
    /// (salt, Argon2id limits, wrapped key), which can't be told from a wrong passphrase.
    func testEveryBitFlipInAPassphraseBackupIsRefused() throws {
        let bytes = try smallBackup()
        let intact = try header(bytes) { try $0.fileKey(passphrase: passphrase) }
        XCTAssertEqual(intact.length, passphraseHeaderLength)
        var authFailures = 0
        for index in bytes.indices {
            let open: (BackupReader) throws -> Void = index < intact.length ? openPassphrase : { try $0.start(intact.fileKey) }
            for bit in 0..<8 {
                var damaged = bytes
                damaged[index] ^= 1 << bit
                guard let error = failure(damaged, open: open) else {
                    return XCTFail("a flip of bit \(bit) of byte \(index) went unnoticed")
                }
                if error.code == .authFailed {
                    authFailures += 1
                    XCTAssertTrue((15..<(passphraseHeaderLength - 24)).contains(index), "byte \(index): \(error)")
                } else {
                    XCTAssertEqual(error.code, .decode, "byte \(index) bit \(bit): \(error)")
                }
            }
        }
        XCTAssertGreaterThan(authFailures, 0)
    }

    /// Every flip of a backup sealed to two recipients (the reader tries the
    /// other one's entry first): the header and its recipient list, and one
    /// chunk, the final one; chunks are read as in a passphrase backup, whose
    /// every flip the test above makes across several (a second record here
    /// made a second chunk and most of the flips, each two X25519 operations).
    func testEveryBitFlipInARecipientBackupIsRefused() throws {
        let key = try recipientKeyPair(), other = try recipientKeyPair()
        let bytes = try smallBackup(recipients: [other.publicKey, key.publicKey], records: 1)
        let intact = try header(bytes) { try $0.fileKey(secretKey: key.secretKey) }
        XCTAssertGreaterThan(intact.length, passphraseHeaderLength)
        for index in bytes.indices {
            let open: (BackupReader) throws -> Void = index < intact.length
                ? { try $0.open(secretKey: key.secretKey) } : { try $0.start(intact.fileKey) }
            for bit in 0..<8 {
                var damaged = bytes
                damaged[index] ^= 1 << bit
                guard let error = failure(damaged, open: open) else {
                    return XCTFail("a flip of bit \(bit) of byte \(index) went unnoticed")
                }
                // The recipient count flipped can make the list unreadable for this key: also a refusal.
                XCTAssertTrue(error.code == .decode || error.code == .authFailed, "byte \(index) bit \(bit): \(error)")
            }
        }
    }

    /// Cut at every length: refused as truncated (an empty file as empty).
    func testEveryTruncationPointIsRefusedAsTruncated() throws {
        let bytes = try smallBackup()
        for length in 0..<bytes.count {
            guard let error = failure(Array(bytes[0..<length]), open: openPassphrase) else {
                return XCTFail("a backup cut to \(length) bytes read to its end")
            }
            XCTAssertEqual(error.code, .decode, "cut at \(length)")
            XCTAssertTrue(error.message.contains(length == 0 ? "empty" : "truncated"), "cut at \(length): \(error.message)")
        }
        // Exactly at chunk boundaries, the message says which chunk it ends after.
        for offset in chunkOffsets(bytes, headerLength: passphraseHeaderLength).dropFirst() {
            XCTAssertTrue(failure(Array(bytes[0..<offset]), open: openPassphrase)?.message.contains("before its final chunk") == true)
        }
    }

    func testReorderedDuplicatedDroppedAndForeignChunksAreRefused() throws {
        let bytes = try smallBackup(records: 6)
        let offsets = chunkOffsets(bytes, headerLength: passphraseHeaderLength)
        XCTAssertGreaterThanOrEqual(offsets.count, 4)
        func chunk(_ k: Int) -> [UInt8] { Array(bytes[offsets[k]..<(k + 1 < offsets.count ? offsets[k + 1] : bytes.count)]) }
        let header = Array(bytes[0..<passphraseHeaderLength])
        let chunks = offsets.indices.map(chunk)

        var swapped = chunks
        swapped.swapAt(1, 2)
        let cases: [(String, [UInt8])] = [
            ("swapped", header + swapped.joined()),
            ("duplicated", header + chunks[0] + chunks[1] + chunks[1] + chunks[2...].joined()),
            ("dropped", header + chunks[0] + chunks[2...].joined()),
            ("first dropped", header + chunks[1...].joined()),
            ("final repeated", header + chunks.joined() + chunks.last!),
            ("garbage after", header + chunks.joined() + [0]),
        ]
        for (name, damaged) in cases {
            let error = failure(damaged, open: openPassphrase)
            XCTAssertEqual(error?.code, .decode, name)
            XCTAssertTrue(error?.message.contains("altered") == true, "\(name): \(String(describing: error))")
        }
        XCTAssertTrue(failure(header + chunks.dropLast().joined(), open: openPassphrase)?.message.contains("truncated") == true)

        // A chunk from another backup under the same passphrase, at the same position.
        let other = try smallBackup(records: 6)
        let otherOffsets = chunkOffsets(other, headerLength: passphraseHeaderLength)
        let spliced = header + chunks[0] + Array(other[otherOffsets[1]..<otherOffsets[2]]) + chunks[2...].joined()
        XCTAssertEqual(failure(spliced, open: openPassphrase)?.code, .decode)
        // Another backup's header (same passphrase) in front of these chunks.
        XCTAssertEqual(failure(Array(other[0..<passphraseHeaderLength]) + chunks.joined(), open: openPassphrase)?.code, .decode)
    }

    func testWrongPassphraseAndWrongKeyAndWrongMode() throws {
        let bytes = try smallBackup()
        let wrong = failure(bytes) { try $0.open(passphrase: SecureBytes(copying: Array("hunter3 but longer".utf8))) }
        XCTAssertEqual(wrong?.code, .authFailed)
        XCTAssertTrue(wrong?.message.contains("passphrase is not correct") == true)
        let key = try recipientKeyPair()
        XCTAssertEqual(failure(bytes) { try $0.open(secretKey: key.secretKey) }?.code, .param)

        let sealed = try smallBackup(recipients: [key.publicKey])
        let stranger = try recipientKeyPair()
        let other = failure(sealed) { try $0.open(secretKey: stranger.secretKey) }
        XCTAssertEqual(other?.code, .authFailed)
        XCTAssertTrue(other?.message.contains("this backup is for other recipients") == true, String(describing: other))
        XCTAssertEqual(failure(sealed, open: openPassphrase)?.code, .param)

        // Reading before opening is a usage error, not a silent empty backup.
        let reader = try BackupReader(bytes: bytes)
        XCTAssertThrowsError(try reader.next()) { XCTAssertEqual(($0 as? KeychainError)?.code, .param) }
    }

    /// A recipient list swapped for another backup's (the attacker's own key
    /// included) does not open these chunks.
    func testSwappedRecipientListIsRefused() throws {
        let key = try recipientKeyPair()
        let mine = try smallBackup(recipients: [key.publicKey])
        let theirs = try smallBackup(recipients: [key.publicKey])
        let headerLength = 8 + 2 + 4 + 1 + 2 + 84 + 24
        let swapped = Array(theirs[0..<(headerLength - 24)]) + Array(mine[(headerLength - 24)...])
        let error = failure(swapped) { try $0.open(secretKey: key.secretKey) }
        XCTAssertEqual(error?.code, .decode)
        XCTAssertTrue(error?.message.contains("altered") == true)
    }

    func testNotABackupAndNewerVersion() throws {
        var bytes = try smallBackup()
        XCTAssertTrue(failure(Array("PK\u{3}\u{4} not a backup at all".utf8), open: openPassphrase)?.message.contains("not a locket backup") == true)
        bytes[9] = 2
        let newer = failure(bytes, open: openPassphrase)
        XCTAssertEqual(newer?.code, .decode)
        XCTAssertTrue(newer?.message.contains("made by a newer locket") == true, String(describing: newer))
    }

    /// Records from a newer locket: an unknown item class or a required
    /// unknown attribute refuse the backup; an optional unknown attribute is
    /// left out and named.
    func testUnknownClassAndAttributesFromANewerWriter() throws {
        var head: [UInt8] = []
        let record = try SampleRecords.record(0)
        BackupRecordCoding.encodeHead(record, into: &head)
        var body = Array(head.dropFirst(4)) + record.data.bytes + [0]
        if let extra = record.extra { body.removeLast(); body += [1, 0, 0, 0, UInt8(extra.count)] + extra.bytes }
        let decoded = try body.withUnsafeBytes { try BackupRecordCoding.decode($0, number: 1) }
        SampleRecords.assertEqual(record, decoded, "plain")

        // "keys" and "cert" are classes since issue 13: a class no locket has yet.
        var keys = body
        keys.replaceSubrange(1..<5, with: Array("zzzz".utf8))
        XCTAssertThrowsError(try keys.withUnsafeBytes { try BackupRecordCoding.decode($0, number: 7) }) {
            XCTAssertTrue(($0 as? KeychainError)?.message.contains("newer locket") == true)
        }

        // Rename the first attribute (acct, part of the primary key: required) to an unknown code.
        let first = 1 + 4 + 1 + 2 + 2 + record.accessGroup.utf8.count + 1 + 16 + 16 + 2
        XCTAssertEqual(Array(body[first..<(first + 4)]), Array("acct".utf8))
        var required = body
        required.replaceSubrange(first..<(first + 4), with: Array("zzzz".utf8))
        XCTAssertThrowsError(try required.withUnsafeBytes { try BackupRecordCoding.decode($0, number: 1) }) {
            XCTAssertTrue(($0 as? KeychainError)?.message.contains("attribute 'zzzz'") == true, "\($0)")
        }
        var optional = required
        optional[first + 4] = 0
        let skipped = try optional.withUnsafeBytes { try BackupRecordCoding.decode($0, number: 1) }
        XCTAssertEqual(skipped.skippedAttributeCodes, ["zzzz"])
        XCTAssertNil(skipped.attributes[.account])
    }
}
