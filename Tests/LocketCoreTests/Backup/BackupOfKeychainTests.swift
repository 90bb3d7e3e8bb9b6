import LocketCore
import XCTest

/// The records the exporter will make from a real keychain's dump carry
/// every field of its items through a backup unchanged.
final class BackupOfKeychainTests: KeychainTestCase {
    func testItemsOfAKeychainThroughABackup() throws {
        for i in 0..<50 {
            try addGenp("svc \(i) ü", "acct\(i)", [.comment: "note\n\(i)", .label: "L\(i)"], secret: "s\(i)",
                        group: i % 2 == 0 ? "default" : "T.shared", accessible: i % 3 == 0 ? .afterFirstUnlock : .whenUnlocked)
            _ = try keychain.add(inet([.server: bytes("h\(i).example"), .protocol: bytes("htps"), .port: [0x01, 0xbb],
                                       .account: bytes("u\(i)"), .path: bytes("p/\(i)")]),
                                 data: secret("inet \(i)"), extra: i % 4 == 0 ? secret("password_expiry_utc=1\n") : nil)
        }
        var items: [Item] = []
        try keychain.dump(returnData: true) { items.append($0) }
        XCTAssertEqual(items.count, 100)

        let file = TemporaryFile()
        defer { file.remove() }
        let fd = file.create()
        let passphrase = try secret("backup passphrase")
        let writer = try BackupWriter(fd: fd, passphrase: passphrase, cost: weakKDF())
        for item in items { try writer.append(BackupRecord(item: item, data: try XCTUnwrap(item.data))) }
        try writer.finish()
        close(fd)

        let reader = try BackupReader(bytes: file.bytes)
        try reader.open(passphrase: passphrase)
        var k = 0
        while let record = try reader.next() {
            let item = items[k]
            XCTAssertEqual(record.itemClass, item.itemClass)
            XCTAssertEqual(record.attributes, item.attributes)
            XCTAssertEqual(record.accessGroup, item.accessGroup)
            XCTAssertEqual(record.accessible, item.accessible)
            XCTAssertEqual(record.persistentRef, item.persistentRef)
            XCTAssertEqual(record.creationDate, item.creationDate)
            XCTAssertEqual(record.modificationDate, item.modificationDate)
            XCTAssertTrue(record.data.constantTimeEquals(try XCTUnwrap(item.data)))
            XCTAssertEqual(record.extra?.bytes, item.extra?.bytes)
            k += 1
        }
        XCTAssertEqual(k, 100)
        XCTAssertTrue(items.contains { $0.extra != nil })
    }
}
