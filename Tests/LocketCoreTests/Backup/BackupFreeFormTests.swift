@testable import LocketCore
import XCTest

/// A backup carries what an item made over the Secret Service is found by
/// (SPEC §15, §18): its free-form attributes, content type and uniqueness by
/// reference, in a kind-2 record; every other item stays a kind-1 record,
/// as every backup before kind 2 was written.
final class BackupFreeFormTests: KeychainTestCase {
    private func backup(of source: Keychain, passphrase: SecureBytes) throws -> TemporaryFile {
        let file = TemporaryFile()
        let fd = file.create()
        defer { close(fd) }
        let writer = try BackupWriter(fd: fd, passphrase: passphrase, cost: weakKDF())
        try source.dump(returnData: true) { item in try writer.append(BackupRecord(item: item, data: try XCTUnwrap(item.data))) }
        try writer.finish()
        return file
    }

    private func restore(_ file: TemporaryFile, passphrase: SecureBytes, into target: Keychain, updateExisting: Bool = false) throws -> [ImportOutcome] {
        let reader = try BackupReader(bytes: file.bytes)
        try reader.open(passphrase: passphrase)
        var outcomes: [ImportOutcome] = []
        try target.importItems(updateExisting: updateExisting, next: { try reader.next().map(ImportedItem.init) },
                               outcome: { outcomes.append($1) })
        return outcomes
    }

    private func busItem(_ label: String, _ attributes: [String: String], contentType: String? = nil) throws -> NewItem {
        var item = try genp("gh", "bob", [.label: label])
        item.freeForm = FreeForm(attributes: attributes, contentType: contentType, uniqueByReference: true)
        return item
    }

    func testItemsMadeOverTheBusSurviveExportAndImportIntoAFreshKeychain() throws {
        let first = try keychain.add(busItem("L1", ["xdg:schema": "org.example.Token", "app": "one"], contentType: "application/octet-stream"),
                                     data: secret("bus one"))
        let second = try keychain.add(busItem("L2", ["xdg:schema": "org.example.Token", "app": "two"]), data: secret("bus two"))
        let cli = try addGenp("gh", "bob", secret: "cli")
        let passphrase = try secret("backup passphrase")
        let file = try backup(of: keychain, passphrase: passphrase)
        defer { file.remove() }

        let fresh = try TemporaryKeychain(name: "fresh", kdf: weakKDF())
        defer { fresh.remove() }
        let target = try fresh.open()
        XCTAssertEqual(try restore(file, passphrase: passphrase, into: target), [.added, .added, .added])

        var byApp = Query(itemClass: .genericPassword)
        byApp.match(freeForm: "app", "one")
        let found = try target.search(byApp, limit: .all, returnData: true)
        XCTAssertEqual(found.map(\.persistentRef), [first.persistentRef])
        XCTAssertEqual(found[0].freeForm, FreeForm(attributes: ["xdg:schema": "org.example.Token", "app": "one"],
                                                   contentType: "application/octet-stream", uniqueByReference: true))
        XCTAssertEqual(found[0].secretString, "bus one")
        var bySchema = Query(itemClass: .genericPassword)
        bySchema.match(freeForm: "xdg:schema", "org.example.Token")
        XCTAssertEqual(try target.search(bySchema, limit: .all).map(\.persistentRef), [first.persistentRef, second.persistentRef])
        // Still three items by the service and account: the bus items kept their uniqueness by reference.
        let all = try target.search(query(.genericPassword, [.service: "gh", .account: "bob"]), limit: .all)
        XCTAssertEqual(all.map(\.persistentRef), [first.persistentRef, second.persistentRef, cli.persistentRef])
        XCTAssertEqual(all.map(\.freeForm.uniqueByReference), [true, true, false])
        // And -U on the restored keychain still touches the CLI item alone.
        try target.add(try genp("gh", "bob"), data: secret("rotated"), updateExisting: true)
        XCTAssertEqual(try target.search(query(ref: first.persistentRef), returnData: true)[0].secretString, "bus one")
    }

    func testBusItemsBehindManyOthersAreRestoredWhole() throws {
        // The first item unique by reference writes the header row while the import's
        // writer thread has rows queued: it waits for the writer to be idle first.
        try keychain.addBatch(try (0..<300).map { (item: try genp("svc \($0)", "acct"), data: try secret("s")) })
        var refs: [[UInt8]] = []
        for i in 0..<3 { refs.append(try keychain.add(busItem("bus \(i)", ["k": "\(i)"]), data: secret("bus \(i)")).persistentRef) }
        let passphrase = try secret("backup passphrase")
        let file = try backup(of: keychain, passphrase: passphrase)
        defer { file.remove() }
        let fresh = try TemporaryKeychain(name: "fresh", kdf: weakKDF())
        defer { fresh.remove() }
        let target = try fresh.open()
        XCTAssertEqual(try restore(file, passphrase: passphrase, into: target), Array(repeating: .added, count: 303))
        for (i, ref) in refs.enumerated() {
            var byK = Query(itemClass: .genericPassword)
            byK.match(freeForm: "k", "\(i)")
            XCTAssertEqual(try target.search(byK, returnData: true).map(\.persistentRef), [ref])
        }
        XCTAssertEqual(try target.search(query(.genericPassword, [.service: "gh", .account: "bob"]), limit: .all).count, 3)
    }

    func testImportingTheSameBackupAgainSkipsOrUpdatesEachItemByItsOwnIdentity() throws {
        let bus = try keychain.add(busItem("L1", ["app": "one"]), data: secret("bus"))
        let passphrase = try secret("backup passphrase")
        let file = try backup(of: keychain, passphrase: passphrase)
        defer { file.remove() }
        // Another bus item with the same service and account: not the same item as the one in the backup.
        let other = try keychain.add(busItem("other", ["app": "two"]), data: secret("other"))
        try keychain.update(query(ref: bus.persistentRef), changes: [.label: bytes("edited")], data: secret("edited"))
        XCTAssertEqual(try restore(file, passphrase: passphrase, into: keychain), [.existing])
        XCTAssertEqual(try restore(file, passphrase: passphrase, into: keychain, updateExisting: true), [.updated])
        let restored = try keychain.search(query(ref: bus.persistentRef), returnData: true)[0]
        XCTAssertEqual(restored[.label], bytes("L1"))
        XCTAssertEqual(restored.secretString, "bus")
        XCTAssertEqual(restored.freeForm.attributes, ["app": "one"])
        XCTAssertEqual(try keychain.search(query(ref: other.persistentRef), returnData: true)[0].secretString, "other")
    }

    func testOnlyItemsWithFreeFormAttributesAreKindTwo() throws {
        var plain = BackupRecord(itemClass: .genericPassword, accessible: .whenUnlocked, accessGroup: "default",
                                 persistentRef: Array(repeating: 1, count: 16), creationDate: 1, modificationDate: 2,
                                 attributes: [.service: bytes("s")], data: try secret("x"))
        var head: [UInt8] = []
        BackupRecordCoding.encodeHead(plain, freeForm: BackupRecordCoding.encodeFreeForm(plain), into: &head)
        XCTAssertEqual(head[4], 1, "an item without free-form attributes is written as every backup before kind 2 was")
        plain.freeForm = FreeForm(attributes: ["k": "v"], uniqueByReference: true)
        head.removeAll()
        let field = try XCTUnwrap(BackupRecordCoding.encodeFreeForm(plain))
        BackupRecordCoding.encodeHead(plain, freeForm: field, into: &head)
        XCTAssertEqual(head[4], 2)
        // The whole body (head, secret, no metadata, the field) decodes to the same free-form set.
        var body = Array(head[4...]) + bytes("x") + [0] + field
        XCTAssertEqual(head[0..<4].reduce(0) { $0 << 8 | Int($1) }, body.count)
        let decoded = try body.withUnsafeBytes { try BackupRecordCoding.decode($0, number: 1) }
        XCTAssertEqual(decoded.freeForm, plain.freeForm)
        // A kind-2 record whose field is damaged is malformed, never half read.
        body[body.count - 1] ^= 0xff
        XCTAssertKeychainError(.decode, try body.withUnsafeBytes { try BackupRecordCoding.decode($0, number: 1) })
        body[0] = 3
        XCTAssertKeychainError(.decode, try body.withUnsafeBytes { try BackupRecordCoding.decode($0, number: 1) })
    }
}
