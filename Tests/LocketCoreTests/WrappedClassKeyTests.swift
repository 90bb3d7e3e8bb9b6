@testable import LocketCore
import LocketSupport
import XCTest

/// A keychain without a password opens only the blind-index key at open, and
/// each class key when an item of its class is first opened (issue 43): the
/// header's MAC, checked at open with the blind-index key, covers every
/// keybag row, so a row changed by anyone without that key is refused at
/// open by every command, as before; a row that does not open although the
/// MAC holds is refused by the command that needs it.
final class WrappedClassKeyTests: XCTestCase {
    private var temporary: TemporaryKeychain!

    override func setUpWithError() throws {
        temporary = try TemporaryKeychain(password: nil)
        let keychain = try temporary.open()
        try keychain.add(genp("when-unlocked", "a"), data: secret("a-secret"))
        try keychain.add(genp("after-first-unlock", "c", accessible: .afterFirstUnlock), data: secret("c-secret"))
        try keychain.add(genp("this-device", "u", accessible: .whenUnlockedThisDeviceOnly), data: secret("u-secret"))
        try keychain.add(genp("always-this-device", "d", accessible: .alwaysThisDeviceOnly), data: secret("d-secret"))
    }

    override func tearDown() {
        temporary?.remove()
        temporary = nil
    }

    private func secretOf(_ service: String, in keychain: Keychain? = nil) throws -> String? {
        try (keychain ?? temporary.open()).search(query(.genericPassword, [.service: service]), returnData: true).first?.secretString
    }

    func testALookupOpensTheIndexKeyAndItsItemsClassKeyOnly() throws {
        let keychain = try temporary.open()
        XCTAssertEqual(keychain.engine.cache.keys.entries.map { $0.name }, [Keybag.indexKeyName])
        XCTAssertEqual(try secretOf("when-unlocked", in: keychain), "a-secret")
        XCTAssertEqual(keychain.engine.cache.keys.entries.map { $0.name }, [Keybag.indexKeyName, ProtectionClass.whenUnlocked.rawValue])
        // Every class still opens, the device-bound ones with the device key.
        for (service, expected) in [("after-first-unlock", "c-secret"), ("this-device", "u-secret"), ("always-this-device", "d-secret")] {
            XCTAssertEqual(try secretOf(service, in: keychain), expected, service)
        }
        XCTAssertEqual(try keychain.search(Query(itemClass: .genericPassword), limit: .all, returnData: true).count, 4)
    }

    /// Changed by someone without the blind-index key: the MAC fails at open, whatever the command.
    func testAKeybagRowChangedWithoutTheHeaderKeyIsRefusedAtOpen() throws {
        RawKeychainFile(path: temporary.path).execute("UPDATE keybag SET kek = (SELECT kek FROM keybag WHERE class = 'ak') WHERE class = 'ck'")
        XCTAssertKeychainError(.decode, try temporary.open())
    }

    /// A row that does not open although the MAC holds (whoever holds the
    /// blind-index key wrote it): the command whose item needs that key fails
    /// with errSecDecode and deletes nothing; the other classes still open.
    func testAWrappedKeyThatDoesNotOpenFailsTheCommandThatNeedsIt() throws {
        let engine = try temporary.open().engine
        var rows = engine.keybag.rows
        rows["ck"] = KeybagRow(kek: rows["ak"]!.kek)
        let forged = Keybag(keychainID: engine.keybag.keychainID, kdf: nil, rows: rows)
        try engine.write { try engine.storage.writeKeybag(forged, replacingAll: false) }

        XCTAssertEqual(try secretOf("when-unlocked"), "a-secret")
        XCTAssertEqual(try secretOf("this-device"), "u-secret")
        for body in [{ _ = try self.secretOf("after-first-unlock") },
                     { _ = try self.temporary.open().search(Query(itemClass: .genericPassword), limit: .all) }] {
            XCTAssertThrowsError(try body()) { error in
                XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)")
                // The keybag's damage, not the item's.
                XCTAssertTrue((error as? KeychainError)?.message.contains("wrapped class keys") == true, "\(error)")
            }
        }
        XCTAssertEqual(try temporary.file.blobs("SELECT id FROM items").count, 4, "a key that does not open deletes nothing")
    }

    /// With a password: the blind-index key opened by the device at open,
    /// the class keys from the session, and the keys the device wraps
    /// (`always`, always-this-device-only) when an item of theirs is
    /// opened and the session has none (locked).
    func testWithAPasswordTheDeviceOpensItsKeysWhenNeeded() throws {
        let locking = try TemporaryKeychain()
        defer { locking.remove() }
        let setup = try locking.open()
        try setup.add(genp("when-unlocked", "a"), data: secret("a-secret"))
        try setup.add(genp("always", "k", accessible: .always), data: secret("k-secret"))
        try setup.add(genp("always-this-device", "d", accessible: .alwaysThisDeviceOnly), data: secret("d-secret"))
        XCTAssertEqual(try secretOf("when-unlocked", in: locking.open()), "a-secret")

        try locking.lock(all: true)
        let locked = try locking.open()
        XCTAssertEqual(locked.engine.cache.keys.entries.map { $0.name }, [Keybag.indexKeyName])
        XCTAssertEqual(try secretOf("always", in: locked), "k-secret")
        XCTAssertEqual(locked.engine.cache.keys.entries.map { $0.name }, [Keybag.indexKeyName, ProtectionClass.always.rawValue])
        XCTAssertEqual(try secretOf("always-this-device", in: locked), "d-secret")
        XCTAssertKeychainError(.interactionNotAllowed, try secretOf("when-unlocked", in: locked))
        XCTAssertEqual(locked.engine.availability(of: .whenUnlocked, group: "default"), .locked)
    }
}
