import Foundation
import LocketCore
import XCTest

/// Records made from their index alone, so that a test of 100 k records can
/// check each one as it is read back without keeping any of them.
enum SampleRecords {
    static let migratable: [ProtectionClass] = ProtectionClass.allCases.filter { !$0.thisDeviceOnly }

    static func record(_ i: Int) throws -> BackupRecord {
        let inet = i % 3 == 1
        var attributes: [Attribute: [UInt8]] = [.account: Array("user\(i)@example.com".utf8)]
        if inet {
            attributes[.server] = Array("host\(i % 977).example.org".utf8)
            attributes[.protocol] = Array("htps".utf8)
            attributes[.port] = i % 5 == 0 ? [] : [UInt8(i % 256), 0x50]
            attributes[.path] = Array("/p/\(i)".utf8)
            if i % 7 == 0 { attributes[.securityDomain] = Array("realm ü \(i)".utf8) }
            if i % 11 == 0 { attributes[.authenticationType] = Array("form".utf8) }
        } else {
            attributes[.service] = Array("svc-\(i % 1013)/naïve 🔑".utf8)
            if i % 4 == 0 { attributes[.generic] = bytes(i % 50) { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) } }
        }
        if i % 2 == 0 { attributes[.label] = Array("Label \(i)".utf8) }
        if i % 9 == 0 { attributes[.comment] = Array("line one\nline \"two\", \(i)".utf8) }
        if i % 13 == 0 { attributes[.description] = Array("kind".utf8) }
        if i % 17 == 0 { attributes[.creator] = Array("abcd".utf8); attributes[.type] = Array("note".utf8) }
        attributes = attributes.filter { !$0.value.isEmpty }
        let secretLength = i % 100 == 0 ? 0 : (i % 29 == 0 ? 1500 + i % 300 : 8 + i % 40)
        let data = try secure(bytes(secretLength) { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) })
        let extra: SecureBytes? = i % 6 == 0 ? try secure(Array("password_expiry_utc=\(1_700_000_000 + i)\n".utf8)) : nil
        return BackupRecord(itemClass: inet ? .internetPassword : .genericPassword,
                            accessible: migratable[i % migratable.count],
                            accessGroup: i % 10 == 0 ? "TEAM1234.com.example.shared" : "default",
                            persistentRef: bytes(16) { UInt8(truncatingIfNeeded: i >> ($0 % 4 * 8)) ^ UInt8($0) },
                            creationDate: 1_600_000_000_000 + Int64(i) * 1000,
                            modificationDate: 1_650_000_000_000 + Int64(i) * 3,
                            attributes: attributes, data: data, extra: extra)
    }

    /// `bytes` in guarded memory, copied as one buffer: SecureBytes's generic
    /// `copying:` goes a byte at a time through an unspecialized iterator in
    /// the test build, which was three quarters of the 16 MiB secret's case (issue 38).
    static func secure(_ bytes: [UInt8]) throws -> SecureBytes {
        try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    /// `count` bytes, `byte(j)` each: a plain loop, since `map` over a range
    /// (unspecialized in the test build) was most of a 100 k round trip's time.
    static func bytes(_ count: Int, _ byte: (Int) -> UInt8) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var j = 0
            while j < count {
                buffer[j] = byte(j)
                j += 1
            }
            initialized = count
        }
    }

    /// Fails the test with the first field that differs.
    static func assertEqual(_ a: BackupRecord, _ b: BackupRecord, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.itemClass, b.itemClass, "\(what): class", file: file, line: line)
        XCTAssertEqual(a.accessible, b.accessible, "\(what): accessible", file: file, line: line)
        XCTAssertEqual(a.accessGroup, b.accessGroup, "\(what): access group", file: file, line: line)
        XCTAssertEqual(a.persistentRef, b.persistentRef, "\(what): reference", file: file, line: line)
        XCTAssertEqual(a.creationDate, b.creationDate, "\(what): creation date", file: file, line: line)
        XCTAssertEqual(a.modificationDate, b.modificationDate, "\(what): modification date", file: file, line: line)
        XCTAssertEqual(a.attributes, b.attributes, "\(what): attributes", file: file, line: line)
        XCTAssertTrue(a.data.constantTimeEquals(b.data), "\(what): secret", file: file, line: line)
        XCTAssertEqual(a.extra?.bytes, b.extra?.bytes, "\(what): extra", file: file, line: line)
        XCTAssertEqual(b.skippedAttributeCodes, [], "\(what): skipped attributes", file: file, line: line)
    }
}

/// A private temporary file, removed by `remove()`.
final class TemporaryFile {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "/locket-backup-\(getpid())-\(UUID().uuidString)"
    }
    func create() -> Int32 { open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) }
    func openForReading() -> Int32 { open(path, O_RDONLY | O_CLOEXEC) }
    var bytes: [UInt8] { (try? Array(Data(contentsOf: URL(fileURLWithPath: path)))) ?? [] }
    var size: Int { ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? Int) ?? 0 }
    func remove() { unlink(path) }
}

/// This process's memory from /proc/self/status, in KiB.
enum ProcessMemory {
    static func kib(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? 0
        }
        return 0
    }
    /// Resident memory now.
    static var residentKiB: Int { kib("VmRSS") }
    /// The process's peak resident memory.
    static var peakKiB: Int { kib("VmHWM") }
}

/// libsodium's minimum Argon2id cost: tests make hundreds of backups.
func weakKDF() -> KDFCost { .weakForTests }

/// A random X25519 secret key and its public key.
func recipientKeyPair() throws -> (publicKey: [UInt8], secretKey: SecureBytes) {
    let secretKey = try SecureBytes(copying: (0..<32).map { _ in UInt8.random(in: 0...255) })
    return (try BackupRecipients.publicKey(secretKey: secretKey), secretKey)
}
