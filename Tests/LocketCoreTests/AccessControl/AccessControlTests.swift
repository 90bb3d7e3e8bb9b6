import Foundation
@testable import LocketCore
import LocketTestSupport
import XCTest

/// SPEC §14: access control on items. The engine asks (a typed reason),
/// the caller proves; the secret is sealed so that nothing but the proof opens it.
final class AccessControlTests: KeychainTestCase {
    private let presence = AccessControl(protection: .whenUnlocked, flags: [.userPresence])

    private func add(_ account: String, _ control: AccessControl, secret text: String = "guarded", in target: Keychain? = nil) throws {
        var item = try genp("svc", account)
        item.accessControl = control
        try (target ?? keychain).add(item, data: secret(text))
    }

    private func read(_ account: String, in target: Keychain? = nil) throws -> String? {
        try (target ?? keychain).search(query(.genericPassword, [.account: account]), returnData: true)[0].secretString
    }


    func testParsing() throws {
        XCTAssertEqual(try AccessControl(parsing: "when-passcode-set-this-device-only:user-presence"),
                       AccessControl(protection: .whenPasscodeSetThisDeviceOnly, flags: [.userPresence]))
        XCTAssertEqual(try AccessControl(parsing: "ak:biometryCurrentSet,applicationPassword"),
                       AccessControl(protection: .whenUnlocked, flags: [.passwordCurrentSet, .applicationPassword]))
        XCTAssertEqual(try AccessControl(parsing: "ck:devicePasscode").flags, [.userPresence])
        XCTAssertEqual(try AccessControl(parsing: "ak:application-password,user-presence").text,
                       "when-unlocked:user-presence,application-password")
        for bad in ["user-presence", "when-unlocked:", "when-unlocked:face-id", "nowhere:user-presence", "ak:user-presence,"] {
            XCTAssertKeychainError(.param, try AccessControl(parsing: bad), bad)
        }
    }

    func testUserPresenceNeedsTheKeychainPasswordEvenWhileUnlocked() throws {
        try add("up", presence)
        XCTAssertTrue(keychain.session.isUnlocked)
        let attributes = try keychain.search(query(.genericPassword, [.account: "up"]))[0]
        XCTAssertEqual(attributes.accessControl, presence, "attributes read without a proof")
        XCTAssertEqual(proofRequest(try read("up")), AccessRequest(keychainPassword: true, applicationPassword: false, label: "svc"))
        XCTAssertKeychainError(.authFailed, try keychain.session.provePresence(password: secret("wrong")))
        XCTAssertEqual(keychain.session.failedAttempts, 1, "a wrong proof counts as a wrong password")
        try keychain.session.provePresence(password: secret(temporary.password!))
        XCTAssertEqual(try read("up"), "guarded")
        // The proof is this process's: the next one asks again.
        XCTAssertNotNil(proofRequest(try read("up", in: temporary.open())))
    }

    /// SPEC §14 "Enforcement is cryptographic": a process that holds the
    /// unlocked session and a copy of the file, reading the rows itself with
    /// every key the session and the device secret give, opens the
    /// attributes and never the secret; the password does open it.
    func testTheSessionAndACopyOfTheFileDoNotOpenTheSecret() throws {
        try add("up", presence, secret: "only-with-proof")
        try add("pcs", AccessControl(protection: .whenUnlocked, flags: [.passwordCurrentSet]), secret: "only-with-proof")
        let copy = temporary.directory + "/copy.keychain"
        try ReliabilityDatabase.checkpoint(temporary.path)
        try FileManager.default.copyItem(atPath: temporary.path, toPath: copy)
        let thief = try Keychain.open(at: copy, environment: temporary.environment)
        XCTAssertTrue(thief.session.isUnlocked, "the copy opens with the live session's keys")
        var held = thief.engine.keys
        for (name, key) in thief.engine.keybag.unwrapWithDevice(try XCTUnwrap(thief.engine.device)).entries { held.set(name, key) }
        XCTAssertTrue(held.entries.allSatisfy { !PresenceKeys.names.contains($0.name) }, "no presence key in the session")

        // The raw connection is closed before the engine reads the file again (it locks the file while reading).
        let rows = try { () throws -> [[[UInt8]?]] in
            let db = try ReliabilityDatabase(copy, readOnly: true)
            return try db.rows("SELECT ref, attrs, data FROM items ORDER BY id")
        }()
        XCTAssertEqual(rows.count, 2)
        let classKey = try XCTUnwrap(held[ProtectionClass.whenUnlocked.rawValue])
        let groupKey = try Sealing.groupKey(classKey, keychainID: thief.engine.keybag.keychainID, .whenUnlocked, "default")
        for row in rows {
            let identity = Sealing.RowIdentity(itemClass: .genericPassword, accessible: .whenUnlocked, accessGroup: "default", ref: row[0]!)
            let attributes = try row[1]!.withUnsafeBytes { try SecretBox.open($0, key: Sealing.fieldKey(groupKey, identity, .attributes), what: "attrs") }
            let access = try ItemAccess(encoded: try XCTUnwrap(ItemRecord.decode(attributes).access), protection: .whenUnlocked)
            let data = row[2]!
            XCTAssertThrowsError(try data.withUnsafeBytes { try SecretBox.open($0, key: Sealing.fieldKey(groupKey, identity, .data), what: "data") })
            for (name, key) in held.entries {
                XCTAssertThrowsError(try PresenceKeys.open(access.secret, publicKey: access.publicKey!, secretKey: key), name)
                let guess = try ItemAccess.dataKey(itemSecret: key, identity, applicationKey: nil)
                XCTAssertThrowsError(try data.withUnsafeBytes { try SecretBox.open($0, key: guess, what: "data") }, name)
            }

            // The password's KEK opens the presence key, and with it the secret.
            let kek = try thief.engine.keybag.kek(password: secret(temporary.password!))
            let presenceKey = try XCTUnwrap(thief.engine.keybag.unwrapPresence(try XCTUnwrap(access.control.presenceKeyName), kek: kek))
            let itemSecret = try PresenceKeys.open(access.secret, publicKey: access.publicKey!, secretKey: presenceKey)
            let opened = try data.withUnsafeBytes {
                try SecretBox.open($0, key: ItemAccess.dataKey(itemSecret: itemSecret, identity, applicationKey: nil), what: "data")
            }
            XCTAssertEqual(try DataRecord.decode(opened).0.bytes, bytes("only-with-proof"))
        }
        XCTAssertEqual(proofRequest(try thief.search(Query(itemClass: .genericPassword), limit: .all, returnData: true))?.keychainPassword, true)
    }

    func testPasswordCurrentSetIsInvalidatedByAPasswordChangeAndUserPresenceIsNot() throws {
        try add("up", presence, secret: "survives")
        try add("pcs", AccessControl(protection: .whenUnlocked, flags: [.passwordCurrentSet]), secret: "bound")
        try keychain.session.provePresence(password: secret(temporary.password!))
        XCTAssertEqual(try read("pcs"), "bound")
        try keychain.session.changePassword(old: secret(temporary.password!), new: secret("second password"))

        let after = try temporary.open()
        XCTAssertKeychainError(.authFailed, try after.session.provePresence(password: secret(temporary.password!)), "the old password is gone")
        try after.session.provePresence(password: secret("second password"))
        XCTAssertEqual(try read("up", in: after), "survives")
        do {
            _ = try read("pcs", in: after)
            XCTFail("an invalidated item was read")
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .authFailed)
            XCTAssertEqual(error.reason, .accessInvalidated)
        }
        var statuses: [String: Item.Availability] = [:]
        try after.dump(returnData: false) { statuses[$0.string(.account)] = $0.availability }
        XCTAssertEqual(statuses, ["up": .available, "pcs": .invalidated])
        XCTAssertEqual(try after.delete(query(.genericPassword, [.account: "pcs"])), 1)

        // A rotation keeps user presence too, and invalidates a new password-current-set item again.
        try add("pcs2", AccessControl(protection: .whenUnlocked, flags: [.passwordCurrentSet]), secret: "bound2", in: after)
        try after.session.changePassword(old: secret("second password"), new: secret("third password"), rotate: true)
        let rotated = try temporary.open()
        try rotated.session.provePresence(password: secret("third password"))
        XCTAssertEqual(try read("up", in: rotated), "survives")
        XCTAssertKeychainError(.authFailed, try read("pcs2", in: rotated))
    }

    func testApplicationPassword() throws {
        let control = AccessControl(protection: .afterFirstUnlock, flags: [.applicationPassword])
        XCTAssertEqual(proofRequest(try add("app", control))?.applicationPassword, true, "add needs the application password")
        keychain.session.applicationPassword = try secret("per-item")
        try add("app", control, secret: "app-secret")
        let reader = try temporary.open()
        XCTAssertEqual(proofRequest(try read("app", in: reader)), AccessRequest(keychainPassword: false, applicationPassword: true, label: "svc"))
        reader.session.applicationPassword = try secret("not it")
        XCTAssertKeychainError(.authFailed, try read("app", in: reader))
        reader.session.applicationPassword = try secret("per-item")
        XCTAssertEqual(try read("app", in: reader), "app-secret")

        // Attributes change without the password; a new secret needs it.
        let other = try temporary.open()
        XCTAssertEqual(try other.update(query(.genericPassword, [.account: "app"]), changes: [.comment: bytes("c")]), 1)
        XCTAssertNotNil(proofRequest(try other.update(query(.genericPassword, [.account: "app"]), changes: [:], data: secret("new"))))
        other.session.applicationPassword = try secret("per-item")
        try other.update(query(.genericPassword, [.account: "app"]), changes: [:], data: secret("new"))
        XCTAssertEqual(try read("app", in: reader), "new")
    }

    func testBothKindsOfProofTogether() throws {
        keychain.session.applicationPassword = try secret("per-item")
        try add("both", AccessControl(protection: .whenUnlocked, flags: [.userPresence, .applicationPassword]), secret: "two")
        let reader = try temporary.open()
        XCTAssertEqual(proofRequest(try read("both", in: reader)), AccessRequest(keychainPassword: true, applicationPassword: true, label: "svc"))
        try reader.session.provePresence(password: secret(temporary.password!))
        XCTAssertEqual(proofRequest(try read("both", in: reader))?.applicationPassword, true)
        reader.session.applicationPassword = try secret("per-item")
        XCTAssertEqual(try read("both", in: reader), "two")
    }

    func testAccessibleWithAccessControlIsErrSecParam() throws {
        var item = try genp("svc", "both", accessible: .whenUnlocked)
        item.accessControl = presence
        XCTAssertKeychainError(.param, try keychain.add(item, data: secret("x")))
    }

    func testAKeychainWithoutAPasswordRefusesPresence() throws {
        let bare = try TemporaryKeychain(password: nil, name: "bare", sharing: temporary)
        let opened = try bare.open()
        XCTAssertKeychainError(.notAvailable, try add("up", presence, in: opened))
        XCTAssertKeychainError(.notAvailable, try add("pcs", AccessControl(protection: .whenUnlocked, flags: [.passwordCurrentSet]), in: opened))
        opened.session.applicationPassword = try secret("fine")
        XCTAssertNoThrow(try add("app", AccessControl(protection: .whenUnlocked, flags: [.applicationPassword]), in: opened))
    }

    func testRemovingThePasswordInvalidatesPresenceItems() throws {
        try add("up", presence)
        try keychain.session.changePassword(old: secret(temporary.password!), new: nil)
        var statuses: [Item.Availability] = []
        try temporary.open().dump(returnData: false) { statuses.append($0.availability) }
        XCTAssertEqual(statuses, [.invalidated])
        XCTAssertKeychainError(.authFailed, try read("up", in: temporary.open()))
    }

    /// A release before access control changes the password without
    /// re-wrapping the presence rows: the proof then makes new keys (the old
    /// items are invalidated) instead of failing every time, and passwd works.
    func testPresenceRowsLeftForAnOlderPasswordAreReplaced() throws {
        try add("up", presence)
        var bag = keychain.engine.keybag
        try bag.wrapPresence(PresenceKeys.presenceName, SecureBytes(copying: Sodium.random(32)), kek: SecureBytes(copying: Sodium.random(32)))
        try keychain.engine.write { try keychain.engine.storage.writeKeybag(bag, replacingAll: false) }
        let later = try temporary.open()
        XCTAssertNoThrow(try later.session.changePassword(old: secret(temporary.password!), new: secret("second")))
        let proving = try temporary.open()
        try proving.session.provePresence(password: secret("second"))
        XCTAssertKeychainError(.authFailed, try read("up", in: proving))
        try add("up2", presence, secret: "new", in: proving)
        XCTAssertEqual(try read("up2", in: proving), "new")
    }

    func testPresenceReuseIsBoundedAndNeedsATerminalSession() throws {
        XCTAssertKeychainError(.param, try keychain.session.setPresenceReuse(301))
        try keychain.session.provePresence(password: secret(temporary.password!))
        try keychain.session.setPresenceReuse(60)
        try add("up", presence)
        let first = try temporary.open()
        first.session.terminalSession = "tty-1"
        try first.session.provePresence(password: secret(temporary.password!))
        let same = try temporary.open()
        same.session.terminalSession = "tty-1"
        XCTAssertEqual(try read("up", in: same), "guarded", "the same terminal session reuses the proof")
        let other = try temporary.open()
        other.session.terminalSession = "tty-2"
        XCTAssertNotNil(proofRequest(try read("up", in: other)), "another terminal session does not")
        XCTAssertNotNil(proofRequest(try read("up", in: temporary.open())), "nor does a caller without a terminal")
        try temporary.lock(all: false)
        try temporary.unlock()
        let afterLock = try temporary.open()
        afterLock.session.terminalSession = "tty-1"
        XCTAssertNotNil(proofRequest(try read("up", in: afterLock)), "lock ends the reuse window")
    }

    /// Issue 31, item 2: a background process could widen the reuse window
    /// and wait for the user's next proof. Lengthening it needs the keychain
    /// password proven in this process (locked or not); shortening is free;
    /// a proof found in a reuse window is not the password.
    func testLengtheningTheReuseWindowNeedsThePassword() throws {
        let asked = AccessRequest(keychainPassword: true, applicationPassword: false, label: nil)
        XCTAssertEqual(proofRequest(try keychain.session.setPresenceReuse(60)), asked)
        XCTAssertEqual(try temporary.open().session.presenceReuse, 0, "a refused change changed the setting")

        try temporary.lock(all: true)
        let locked = try temporary.open()
        XCTAssertEqual(proofRequest(try locked.session.setPresenceReuse(300)), asked, "locked: still the password, never a free pass")
        XCTAssertKeychainError(.authFailed, try locked.session.provePresence(password: secret("wrong")))
        XCTAssertEqual(proofRequest(try locked.session.setPresenceReuse(300)), asked, "a wrong password proves nothing")
        try locked.session.provePresence(password: secret(temporary.password!))
        try locked.session.setPresenceReuse(300)
        XCTAssertEqual(try temporary.open().session.presenceReuse, 300)

        // Shortening, and setting the current value again, need nothing.
        try temporary.open().session.setPresenceReuse(30)
        try temporary.open().session.setPresenceReuse(30)
        XCTAssertEqual(try temporary.open().session.presenceReuse, 30)

        // Reading through the window gives the presence keys, not the password.
        try temporary.unlock()
        try add("up", presence, in: try temporary.open())
        let proving = try temporary.open()
        proving.session.terminalSession = "tty-1"
        try proving.session.provePresence(password: secret(temporary.password!))
        let reusing = try temporary.open()
        reusing.session.terminalSession = "tty-1"
        XCTAssertEqual(try read("up", in: reusing), "guarded")
        XCTAssertEqual(proofRequest(try reusing.session.setPresenceReuse(60)), asked)
        XCTAssertEqual(try temporary.open().session.presenceReuse, 30)

        // Without a password there is no proof to give.
        let bare = try TemporaryKeychain(password: nil, name: "bare", sharing: temporary)
        XCTAssertKeychainError(.notAvailable, try bare.open().session.setPresenceReuse(60))
        XCTAssertNoThrow(try bare.open().session.setPresenceReuse(0))
    }

    /// Issue 31: a key's public half is not what its access control protects
    /// (Apple's SecKeyCopyPublicKey asks for nothing): `publicKey` gives it
    /// without a proof, locked classes aside; the private key still needs one.
    func testAPrivateKeysPublicHalfNeedsNoProof() throws {
        for (type, control) in [(KeyGenerationType.ed25519, presence),
                                (.p256, AccessControl(protection: .afterFirstUnlock, flags: [.passwordCurrentSet])),
                                (.x25519, AccessControl(protection: .whenUnlocked, flags: [.applicationPassword]))] {
            var options = KeyItemOptions()
            options.label = "key-\(type.rawValue)"
            options.accessControl = control
            let maker = try temporary.open()
            maker.session.applicationPassword = try secret("app-pw")
            let generated = try maker.keys.generateKey(type, options: options).publicKey
            let keyQuery = try query(.key, [.label: "key-\(type.rawValue)"])
            let opened = try temporary.open()
            XCTAssertEqual(try opened.keys.publicKey(keyQuery).key.subjectPublicKeyInfo, generated.subjectPublicKeyInfo, type.rawValue)
            XCTAssertNotNil(proofRequest(try opened.keys.withKey(keyQuery, needsPrivate: true) { _, key in (key as? AsymmetricKey)?.pkcs8 != nil }), type.rawValue)
            XCTAssertNotNil(proofRequest(try opened.keys.exportableKey(keyQuery)), type.rawValue)
        }
        // The proof still opens the private key.
        let proven = try temporary.open()
        try proven.session.provePresence(password: secret(temporary.password!))
        XCTAssertTrue(try proven.keys.withKey(query(.key, [.label: "key-ed25519"]), needsPrivate: true) { _, key in (key as? AsymmetricKey)?.pkcs8 != nil })
        // Locked is locked: the public half is sealed with the item's attributes.
        try temporary.lock(all: false)
        XCTAssertKeychainError(.interactionNotAllowed, try temporary.open().keys.publicKey(query(.key, [.label: "key-ed25519"])))
    }
}
