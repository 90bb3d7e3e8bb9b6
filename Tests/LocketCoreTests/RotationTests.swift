import Foundation
import LocketCore
import XCTest

/// Issue 11 item 6, SPEC §7: `passwd --rotate` replaces every class key and
/// re-seals every item in one transaction, so that a stolen older copy plus the
/// old password opens nothing written after the rotation. Plain `passwd`
/// only re-wraps: what it leaves exposed is pinned here too.
final class RotationTests: KeychainTestCase {
    private var others: [TemporaryKeychain] = []

    override func tearDown() {
        for other in others { other.remove() }
        others = []
        super.tearDown()
    }

    /// One item per protection class in two groups, and an internet password.
    private func addOneOfEachEverywhere() throws {
        for pclass in ProtectionClass.allCases {
            for group in ["default", "T.shared"] {
                try addGenp("svc-\(group)", pclass.rawValue, [.comment: "c-\(pclass.rawValue)"], secret: "\(pclass.rawValue)@\(group)",
                            group: group, accessible: pclass)
            }
        }
        try keychain.add(inet([.server: bytes("example.com"), .account: bytes("alice")]), data: secret("inet-secret"))
    }

    /// Every item with its secret, in order: (class, account, group, ref, created, modified, secret, comment).
    private func everything(in target: Keychain? = nil) throws -> [String] {
        var out: [String] = []
        try (target ?? temporary.open()).dump(returnData: true) { item in
            out.append([item.itemClass.rawValue, item.string(.account), item.accessGroup, item.persistentRef.map { String($0) }.joined(),
                        String(item.creationDate), String(item.modificationDate), item.secretString ?? "-", item.string(.comment),
                        "\(item.availability)"].joined(separator: "|"))
        }
        return out
    }

    private func rotate(to new: String = "rotated password", in target: Keychain? = nil) throws {
        try (target ?? temporary.open()).session.changePassword(old: secret(temporary.password!), new: secret(new), kdf: .weakForTests, rotate: true)
    }

    func testRotationKeepsEveryItemExactlyAndReplacesEveryKeyAndDigest() throws {
        try addOneOfEachEverywhere()
        let before = try everything()
        keychain = nil
        let keybag = try temporary.file.blobs("SELECT class || ':' || hex(ifnull(kek, '')) || ':' || hex(ifnull(device, '')) FROM keybag ORDER BY class")
        // Per item: its primary-key digest, sealed values, and every blind-index row.
        let rowsSQL = """
            SELECT hex(pk) || hex(attrs) || hex(data) FROM items ORDER BY id
            """
        let blindSQL = "SELECT CAST(digest AS TEXT) FROM blind"
        let digests = try temporary.file.blobs(rowsSQL)
        let blind = try temporary.file.blobs(blindSQL)
        XCTAssertEqual(digests.count, ProtectionClass.allCases.count * 2 + 1, "the statement reads every row")
        XCTAssertGreaterThan(blind.count, digests.count, "every item has blind rows")
        try rotate()

        XCTAssertEqual(try everything(), before, "the session holds the new keys and every item reads back as it was")
        XCTAssertTrue(try temporary.open().session.isUnlocked)
        let rotatedBag = try temporary.file.blobs("SELECT class || ':' || hex(ifnull(kek, '')) || ':' || hex(ifnull(device, '')) FROM keybag ORDER BY class")
        XCTAssertEqual(rotatedBag.count, keybag.count)
        XCTAssertEqual(Set(rotatedBag).intersection(keybag), [], "a keybag row survived the rotation")
        let rotatedDigests = try temporary.file.blobs(rowsSQL)
        XCTAssertEqual(rotatedDigests.count, digests.count)
        XCTAssertEqual(Set(rotatedDigests).intersection(digests), [], "a row kept its digests or sealed values")
        let rotatedBlind = try temporary.file.blobs(blindSQL)
        XCTAssertEqual(rotatedBlind.count, blind.count, "one blind row per attribute, as before")
        XCTAssertEqual(Set(rotatedBlind).intersection(blind), [], "a blind-index row kept its digest")

        // Lookups use the new blind-index key; a fresh unlock with the new password opens everything.
        try temporary.lock(all: true)
        XCTAssertKeychainError(.authFailed, try temporary.open().session.unlock(password: secret(temporary.password!), timeout: nil))
        try temporary.open().session.unlock(password: secret("rotated password"), timeout: nil)
        XCTAssertEqual(try everything(), before)
        XCTAssertEqual(try temporary.open().search(query(.genericPassword, [.account: "ck", .service: "svc-T.shared"]), returnData: true)[0].secretString,
                       "ck@T.shared")
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc-default", "ak", group: "default", in: temporary.open()),
                               "uniqueness holds under the new digests")
    }

    /// What the rotation is for: the thief of an older copy who knows the old
    /// password, and later gets the current file (its items), reads nothing
    /// written after the rotation. After a plain password change, they would.
    func testAStolenCopyAndTheOldPasswordOpenNothingWrittenAfterARotation() throws {
        for rotate in [false, true] {
            // The thief opens the copy on another device, where locket's floor on the cost applies.
            let victim = try TemporaryKeychain(name: rotate ? "rotated" : "plain", sharing: temporary, kdf: .interactive)
            others.append(victim)
            try victim.open().add(genp("svc", "before"), data: secret("written before"))
            let stolen = try victim.file.bytes()
            try victim.open().session.changePassword(old: secret(victim.password!), new: secret("new password"), kdf: .weakForTests, rotate: rotate)
            try victim.open().add(genp("svc", "after"), data: secret("written after"))

            // The thief's machine: the stolen header and keybag, with the current file's item rows.
            let thief = try TemporaryKeychain(password: nil, name: "scratch")
            others.append(thief)
            try FileManager.default.removeItem(atPath: thief.path)
            try stolen.write(to: URL(fileURLWithPath: thief.path))
            chmod(thief.path, 0o600)
            thief.file.execute("ATTACH '\(victim.path)' AS now; DELETE FROM items; INSERT INTO items SELECT * FROM now.items;")
            let opened = try Keychain.open(at: thief.path, environment: thief.environment)
            try opened.session.unlock(password: secret(victim.password!), timeout: nil)
            let there = try Keychain.open(at: thief.path, environment: thief.environment)
            var readable: [String] = []
            try there.dump(returnData: true) { item in
                if let data = item.secretString { readable.append(data) }
            }
            if rotate {
                XCTAssertEqual(readable, [], "the old keys opened items of the rotated file")
                XCTAssertKeychainError(.itemNotFound, try there.search(query(.genericPassword, [.account: "after"])),
                                       "the old blind-index key still finds the new rows")
            } else {
                XCTAssertEqual(readable, ["written before", "written after"],
                               "plain passwd keeps the class keys: the man page says what it does not protect")
            }
        }
    }

    func testRowsThatCannotBeOpenedAreLeftExactlyAsTheyWere() throws {
        try addGenp("svc", "fine", secret: "f")
        let damaged = try addGenp("svc", "damaged", secret: "d")
        keychain = nil
        temporary.file.execute("UPDATE items SET data = substr(data, 1, length(data) - 1) || x'00' WHERE ref = \(hexLiteral(damaged.persistentRef))")
        temporary.file.execute("INSERT INTO items(ref, cls, pdmn, agrp, pk, attrs, data) VALUES (randomblob(16), 'genp', 'zz', 'default', randomblob(16), x'00', x'00')")
        let untouched = try temporary.file.blobs("SELECT hex(ref) || hex(pk) || hex(attrs) || hex(data) FROM items WHERE pdmn = 'zz' OR ref = \(hexLiteral(damaged.persistentRef)) ORDER BY id")
        try rotate()
        XCTAssertEqual(try temporary.file.blobs("SELECT hex(ref) || hex(pk) || hex(attrs) || hex(data) FROM items WHERE pdmn = 'zz' OR ref = \(hexLiteral(damaged.persistentRef)) ORDER BY id"),
                       untouched, "a row that can't be opened must never be changed or deleted")
        let all = try everything()
        XCTAssertEqual(all.count, 3, "still listed")
        XCTAssertEqual(try temporary.open().search(query(.genericPassword, [.account: "fine"]), returnData: true)[0].secretString, "f")
        XCTAssertEqual(try temporary.open().delete(query(ref: damaged.persistentRef)), 1, "and deleted by reference")
    }

    func testAnotherProcessHoldingTheOldKeysFailsCleanlyInsteadOfLosingOrMissingItems() throws {
        try addGenp("svc", "a", secret: "a")
        let stale = try temporary.open()  // loaded the old keys
        try rotate()
        for (name, attempt) in [
            ("search", { _ = try stale.search(query(.genericPassword, [.account: "a"]), returnData: true) }),
            ("add", { try self.addGenp("svc", "b", secret: "b", in: stale) }),
            ("update", { try stale.update(query(.genericPassword, [.account: "a"]), changes: [.comment: bytes("x")]) }),
            ("delete", { try stale.delete(query(.genericPassword, [.account: "a"])) }),
            ("dump", { try stale.dump(returnData: true) { _ in } }),
        ] as [(String, () throws -> Void)] {
            do {
                try attempt()
                XCTFail("\(name) with keys from before the rotation went through")
            } catch let error as KeychainError {
                XCTAssertEqual(error.reason, .keysReplaced, "\(name): \(error)")
                XCTAssertEqual(error.code, .interactionNotAllowed, "\(name): \(error)")
            }
        }
        XCTAssertEqual(try allGenp(in: temporary.open()).map { $0.secretString }, ["a"], "nothing was added, changed or lost")
    }

    func testRotationKeepsLockedTiersLockedAndIsTheOwners() throws {
        try addGenp("svc", "a", secret: "a")
        try temporary.lock(all: false)
        try rotate()
        let after = try temporary.open()
        XCTAssertFalse(after.session.isUnlocked, "a locked keychain stays locked")
        XCTAssertKeychainError(.interactionNotAllowed, try after.search(query(.genericPassword, [.account: "a"]), returnData: true))
        try after.session.unlock(password: secret("rotated password"), timeout: nil)
        XCTAssertEqual(try allGenp(in: temporary.open()).map { $0.secretString }, ["a"])

        let app = try temporary.open(caller: .app(try Entitlements.parse(bytes(#"{"keychain-access-groups": ["T.app"]}"#), name: "app.json")))
        XCTAssertKeychainError(.missingEntitlement, try app.session.changePassword(old: secret("rotated password"), new: secret("x"), rotate: true))
    }
}
