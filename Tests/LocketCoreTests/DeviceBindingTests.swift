import Foundation
import LocketCore
import XCTest

/// SPEC §5/§7: a keychain file copied to another device opens there with its
/// password; its migratable items are readable, its ThisDeviceOnly items never are.
final class DeviceBindingTests: KeychainTestCase {
    private var copies: [TemporaryKeychain] = []

    /// Copies are unlocked on another device, where weaker parameters are refused.
    override class var kdf: KDFCost { .interactive }

    override func tearDown() {
        for copy in copies { copy.remove() }
        copies = []
        super.tearDown()
    }

    /// One item of every protection class, account = class code, secret = class code.
    private func addOneOfEach() throws {
        for pclass in ProtectionClass.allCases {
            try addGenp("svc", pclass.rawValue, secret: pclass.rawValue, accessible: pclass)
        }
    }

    private func copyToAnotherDevice() throws -> TemporaryKeychain {
        keychain = nil  // close the connection so the WAL is checkpointed
        let copy = try TemporaryKeychain(copyOf: temporary)
        copies.append(copy)
        return copy
    }

    private func read(_ pclass: ProtectionClass, _ target: Keychain) throws -> String? {
        try target.search(query(.genericPassword, [.account: pclass.rawValue]), returnData: true)[0].secretString
    }

    func testCopyOpensWithItsPasswordAndOnlyMigratableItemsAreReadable() throws {
        try addOneOfEach()
        let copy = try copyToAnotherDevice()
        XCTAssertFalse(try copy.open().session.isUnlocked, "a copy carries no session")
        XCTAssertKeychainError(.authFailed, try copy.open().session.unlock(password: secret("wrong"), timeout: nil))
        try copy.unlock()
        let there = try copy.open()
        for pclass in ProtectionClass.allCases {
            if pclass.thisDeviceOnly {
                XCTAssertKeychainError(.interactionNotAllowed, try read(pclass, there), pclass.name)
            } else {
                XCTAssertEqual(try read(pclass, there), pclass.rawValue, pclass.name)
            }
        }
    }

    func testDumpOnAnotherDeviceMarksThisDeviceOnlyItemsUnavailable() throws {
        try addOneOfEach()
        let copy = try copyToAnotherDevice()
        try copy.unlock()
        var availability: [String: Item.Availability] = [:]
        var count = 0
        try copy.open().dump(returnData: false) { item in
            count += 1
            availability[item.accessible.rawValue] = item.availability
        }
        XCTAssertEqual(count, ProtectionClass.allCases.count, "every item is listed")
        for pclass in ProtectionClass.allCases {
            XCTAssertEqual(availability[pclass.rawValue], pclass.thisDeviceOnly ? .unavailableOnThisDevice : .available, pclass.name)
        }
    }

    func testAlwaysItemsOfACopyOpenWithoutThePasswordOnceUnlockedThere() throws {
        try addGenp("svc", "dk", secret: "always", accessible: .always)
        let copy = try copyToAnotherDevice()
        // Before any unlock on the new device the always key is wrapped for the old device only.
        XCTAssertKeychainError(.interactionNotAllowed, try read(.always, copy.open()))
        try copy.unlock()
        try copy.lock(all: true)
        XCTAssertEqual(try read(.always, copy.open()), "always", "unlock re-wrapped the always key for this device")
    }

    func testDeleteOnACopyNeedsOneUnlockThere() throws {
        try addGenp("svc", "alice")
        let copy = try copyToAnotherDevice()
        // The blind-index key is wrapped for the old device; without it nothing can be looked up.
        XCTAssertKeychainError(.interactionNotAllowed, try copy.open().delete(query(.genericPassword, [.account: "alice"])))
        try copy.unlock()
        XCTAssertEqual(try copy.open().delete(query(.genericPassword, [.account: "alice"])), 1)
    }

    func testTheOriginalIsUnaffectedByItsCopy() throws {
        try addOneOfEach()
        let copy = try copyToAnotherDevice()
        try copy.unlock()
        try copy.open().add(genp("svc", "added there"), data: secret("x"))
        let here = try temporary.open()
        for pclass in ProtectionClass.allCases {
            XCTAssertEqual(try read(pclass, here), pclass.rawValue, pclass.name)
        }
        XCTAssertKeychainError(.itemNotFound, try here.search(query(.genericPassword, [.account: "added there"])))
    }

    /// One object through a lost device secret: opened without a device key
    /// (nothing to keep a mirror with), it makes one at unlock, and the
    /// unlock's writes keep this device's mirror with it. The engine keeps
    /// the mirror it made only while the device key is the same one.
    func testTheUnlockThatMakesANewDeviceKeyKeepsTheMirrorWithIt() throws {
        try addGenp("svc", "a", secret: "a")
        try temporary.lock(all: true)
        keychain = nil
        XCTAssertEqual(unlink(temporary.deviceSecretPath), 0)
        for mirror in temporary.mirrors { XCTAssertEqual(unlink(mirror), 0) }
        let opened = try temporary.open()
        try opened.session.unlock(password: secret(temporary.password!), timeout: nil)
        XCTAssertEqual(temporary.mirrors.count, 1, "the unlock's writes kept no mirror for the new device key")
        XCTAssertEqual(try opened.search(query(.genericPassword, [.account: "a"]), returnData: true)[0].secretString, "a")
    }

    func testALostDeviceSecretLosesThisDeviceOnlyItemsOnly() throws {
        try addOneOfEach()
        try temporary.lock(all: true)
        keychain = nil
        XCTAssertEqual(unlink(temporary.deviceSecretPath), 0)
        try temporary.unlock()
        let opened = try temporary.open()
        for pclass in ProtectionClass.allCases {
            if pclass.thisDeviceOnly {
                XCTAssertKeychainError(.interactionNotAllowed, try read(pclass, opened), pclass.name)
            } else {
                XCTAssertEqual(try read(pclass, opened), pclass.rawValue, pclass.name)
            }
        }
    }
}
