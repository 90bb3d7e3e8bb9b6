import LocketCore
import XCTest

/// SPEC §4: update changes every match, all or nothing; add -U updates in place.
final class UpdateTests: KeychainTestCase {
    /// Run against a file keychain and a remote one (SPEC §17 conformance).
    override class var isConformanceSuite: Bool { true }

    /// Everything observable about an item, for before/after comparisons.
    private struct Snapshot: Equatable {
        var attributes: [Attribute: [UInt8]]
        var group: String
        var accessible: ProtectionClass
        var ref: [UInt8]
        var created: Int64
        var modified: Int64
        var secret: [UInt8]?

        init(_ item: Item) {
            attributes = item.attributes
            group = item.accessGroup
            accessible = item.accessible
            ref = item.persistentRef
            created = item.creationDate
            modified = item.modificationDate
            secret = item.data?.bytes
        }
    }

    private func snapshot() throws -> [Snapshot] { try allGenp().map(Snapshot.init) }

    // MARK: - All or nothing

    func testUpdateThatMakesTwoMatchesShareAKeyChangesNothing() throws {
        try addGenp("svc", "alice", [.comment: "team"], secret: "a")
        try addGenp("svc", "bob", [.comment: "team"], secret: "b")
        let before = try snapshot()
        tick()
        XCTAssertKeychainError(.duplicateItem,
                               try keychain.update(query(.genericPassword, [.comment: "team"]),
                                                   changes: [.account: bytes("carol"), .label: bytes("changed")],
                                                   data: secret("new")))
        XCTAssertEqual(try snapshot(), before)
    }

    func testUpdateThatCollidesWithAnItemOutsideTheMatchChangesNothing() throws {
        try addGenp("svc", "alice", secret: "a")
        try addGenp("svc", "bob", secret: "b")
        try addGenp("other", "carol", secret: "c")
        let before = try snapshot()
        tick()
        // The first match (alice) changes fine; the second (bob) collides: alice must be rolled back too.
        XCTAssertKeychainError(.duplicateItem,
                               try keychain.update(query(.genericPassword, [.service: "svc"]),
                                                   changes: [.service: bytes("other"), .account: bytes("carol")]))
        XCTAssertEqual(try snapshot(), before)
    }

    func testPartialCollisionRollsBackEarlierRows() throws {
        try addGenp("svc", "alice", [.comment: "m"], secret: "a")
        try addGenp("svc", "bob", [.comment: "m"], secret: "b")
        try addGenp("new", "bob", secret: "existing")
        let before = try snapshot()
        tick()
        // alice -> (new, alice) is fine; bob -> (new, bob) collides with the third item.
        XCTAssertKeychainError(.duplicateItem,
                               try keychain.update(query(.genericPassword, [.comment: "m"]), changes: [.service: bytes("new")]))
        XCTAssertEqual(try snapshot(), before)
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [.service: "new", .account: "alice"])))
    }

    func testUpdateThatKeepsKeysDistinctSucceeds() throws {
        try addGenp("svc", "alice", [.comment: "m"])
        try addGenp("svc", "bob", [.comment: "m"])
        XCTAssertEqual(try keychain.update(query(.genericPassword, [.comment: "m"]), changes: [.service: bytes("moved")]), 2)
        XCTAssertEqual(try allGenp().map { "\($0.string(.service))/\($0.string(.account))" }, ["moved/alice", "moved/bob"])
    }

    func testUpdateOfAnItemToItsOwnKeyIsNoCollision() throws {
        try addGenp("svc", "alice")
        XCTAssertEqual(try keychain.update(query(.genericPassword, [.account: "alice"]),
                                           changes: [.service: bytes("svc"), .account: bytes("alice")]), 1)
    }

    // MARK: - Every match

    func testUpdateChangesEveryMatchAndReturnsTheCount() throws {
        try addGenp("svc", "alice", secret: "a")
        try addGenp("svc", "bob", secret: "b")
        try addGenp("other", "carol", secret: "c")
        XCTAssertEqual(try keychain.update(query(.genericPassword, [.service: "svc"]),
                                           changes: [.comment: bytes("bulk")], data: secret("same")), 2)
        let all = try allGenp()
        XCTAssertEqual(all.map { $0.string(.comment) }, ["bulk", "bulk", ""])
        XCTAssertEqual(all.map { $0.secretString ?? "" }, ["same", "same", "c"])
    }

    func testUpdateWithNoMatchIsItemNotFound() throws {
        try addGenp("svc", "alice")
        let before = try snapshot()
        XCTAssertKeychainError(.itemNotFound,
                               try keychain.update(query(.genericPassword, [.service: "nope"]), changes: [.comment: bytes("x")]))
        XCTAssertKeychainError(.itemNotFound,
                               try keychain.update(query(.internetPassword), changes: [.comment: bytes("x")]))
        XCTAssertEqual(try snapshot(), before)
    }

    func testUpdateOfTheDataOnlyKeepsTheAttributes() throws {
        let added = try addGenp("svc", "alice", [.comment: "keep"], secret: "old")
        XCTAssertEqual(try keychain.update(query(.genericPassword, [.account: "alice"]), changes: [:], data: secret("new")), 1)
        let after = try keychain.search(query(ref: added.persistentRef), returnData: true)[0]
        XCTAssertEqual(after.attributes, added.attributes)
        XCTAssertEqual(after.secretString, "new")
    }

    func testUpdateOfAttributesOnlyKeepsTheData() throws {
        let added = try addGenp("svc", "alice", secret: "keep me")
        try keychain.update(query(.genericPassword, [.account: "alice"]), changes: [.comment: bytes("c")])
        XCTAssertEqual(try keychain.search(query(ref: added.persistentRef), returnData: true)[0].secretString, "keep me")
    }

    func testUpdateToTheEmptyValueRemovesTheAttribute() throws {
        try addGenp("svc", "alice", [.comment: "bye"])
        try keychain.update(query(.genericPassword, [.account: "alice"]), changes: [.comment: []])
        let item = try keychain.search(query(.genericPassword, [.account: "alice"]))[0]
        XCTAssertEqual(item[.comment], [])
        XCTAssertNil(item.attributes[.comment])
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.comment: ""])).count, 1)
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [.comment: "bye"])))
    }

    func testUpdatingThePrimaryKeyFreesTheOldKey() throws {
        try addGenp("svc", "alice", secret: "a")
        try keychain.update(query(.genericPassword, [.account: "alice"]), changes: [.account: bytes("alicia")])
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [.account: "alice"])))
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "alicia"]), returnData: true)[0].secretString, "a")
        XCTAssertNoThrow(try addGenp("svc", "alice", secret: "new alice"))
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "alicia"))
    }

    func testUpdatedItemIsFoundByItsNewValuesOnly() throws {
        try addGenp("svc", "alice", [.label: "old"])
        try keychain.update(query(.genericPassword, [.account: "alice"]), changes: [.label: bytes("new")])
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [.label: "old"])))
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.label: "new"])).count, 1)
    }

    // MARK: - Access groups

    func testMovingToAGroupMovesTheItemAndItsDataStillOpens() throws {
        let added = try addGenp("svc", "alice", secret: "moving")
        XCTAssertEqual(try keychain.update(query(.genericPassword, [.account: "alice"]), changes: [:], accessGroup: "T.shared"), 1)
        XCTAssertKeychainError(.itemNotFound,
                               try keychain.search(query(.genericPassword, [.account: "alice"], group: Keychain.defaultAccessGroup)))
        let moved = try keychain.search(query(.genericPassword, [.account: "alice"], group: "T.shared"), returnData: true)[0]
        XCTAssertEqual(moved.accessGroup, "T.shared")
        XCTAssertEqual(moved.secretString, "moving")
        XCTAssertEqual(moved.persistentRef, added.persistentRef)
        XCTAssertEqual(moved.creationDate, added.creationDate)
        // The old group's key is free again.
        XCTAssertNoThrow(try addGenp("svc", "alice"))
        // A fresh object (no cached group keys) still opens the moved item.
        let reopened = try temporary.open()
        XCTAssertEqual(try reopened.search(query(ref: added.persistentRef), returnData: true)[0].secretString, "moving")
    }

    func testMovingToAGroupThatCollidesChangesNothing() throws {
        try addGenp("svc", "alice", secret: "default")
        try addGenp("svc", "alice", secret: "team", group: "T.shared")
        let before = try snapshot()
        XCTAssertKeychainError(.duplicateItem,
                               try keychain.update(query(.genericPassword, [.account: "alice"], group: Keychain.defaultAccessGroup),
                                                   changes: [:], accessGroup: "T.shared"))
        XCTAssertEqual(try snapshot(), before)
    }

    func testEmptyTargetGroupIsRefused() throws {
        try addGenp("svc", "alice")
        XCTAssertKeychainError(.param, try keychain.update(query(.genericPassword), changes: [:], accessGroup: ""))
    }

    // MARK: - Stable identity

    func testReferenceAndCreationDateAreStableAcrossUpdateAndModificationDateMoves() throws {
        let added = try addGenp("svc", "alice", secret: "a")
        tick()
        try keychain.update(query(.genericPassword, [.account: "alice"]),
                            changes: [.account: bytes("bob"), .comment: bytes("c")], data: secret("b"))
        let after = try keychain.search(query(ref: added.persistentRef), returnData: true)
        XCTAssertEqual(after.count, 1)
        XCTAssertEqual(after[0].persistentRef, added.persistentRef)
        XCTAssertEqual(after[0].creationDate, added.creationDate)
        XCTAssertGreaterThan(after[0].modificationDate, added.modificationDate)
        XCTAssertEqual(after[0].string(.account), "bob")
        XCTAssertEqual(after[0].secretString, "b")
        XCTAssertEqual(after[0].accessible, added.accessible)
    }

    func testUpdatePreservesTheProtectionClass() throws {
        try addGenp("svc", "alice", accessible: .afterFirstUnlock)
        try keychain.update(query(.genericPassword, [.account: "alice"]), changes: [.comment: bytes("x")], accessGroup: "T.other")
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "alice"]))[0].accessible, .afterFirstUnlock)
    }

    // MARK: - Add-only and plaintext-column attributes

    func testChangingAccessibleMovesTheItem() throws {
        // SPEC §4 (revised): update may change the class; an unknown class is errSecParam.
        try addGenp("svc", "alice", accessible: .whenUnlocked)
        XCTAssertKeychainError(.param,
                               try keychain.update(query(.genericPassword, [.account: "alice"]),
                                                   changes: [.accessible: bytes("sometimes")]))
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "alice"]))[0].accessible, .whenUnlocked)
        try keychain.update(query(.genericPassword, [.account: "alice"]),
                            changes: [.accessible: bytes(ProtectionClass.afterFirstUnlock.rawValue)])
        let moved = try keychain.search(query(.genericPassword, [.account: "alice"]))
        XCTAssertEqual(moved.map(\.accessible), [.afterFirstUnlock])
    }

    func testAccessGroupInChangesIsNeverSilentlyIgnored() throws {
        // `update --set access-group=T.shared` (SPEC §3) must move the item; the
        // engine may take it through changes or refuse it there (errSecParam) and
        // want the accessGroup argument instead, but must not report success and do nothing.
        try addGenp("svc", "alice")
        do {
            try keychain.update(query(.genericPassword, [.account: "alice"]), changes: [.accessGroup: bytes("T.shared")])
            XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "alice"]))[0].accessGroup, "T.shared",
                           "update reported success but the item did not move")
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .param, "\(error)")
        }
    }

    // MARK: - add -U

    func testAddUpdateExistingKeepsReferenceAndCreationDate() throws {
        let added = try addGenp("svc", "alice", [.comment: "old", .description: "keep"], secret: "old")
        tick()
        let updated = try keychain.add(genp("svc", "alice", [.comment: "new"]), data: secret("new"), updateExisting: true)
        XCTAssertEqual(updated.persistentRef, added.persistentRef)
        XCTAssertEqual(updated.creationDate, added.creationDate)
        XCTAssertGreaterThan(updated.modificationDate, added.modificationDate)
        let all = try allGenp()
        XCTAssertEqual(all.count, 1)
        XCTAssertEqual(all[0].persistentRef, added.persistentRef)
        XCTAssertEqual(all[0].creationDate, added.creationDate)
        XCTAssertEqual(all[0].string(.comment), "new")
        XCTAssertEqual(all[0].string(.description), "keep", "attributes not given are left as they were")
        XCTAssertEqual(all[0].secretString, "new")
    }

    func testAddUpdateExistingAddsWhenThereIsNoSuchItem() throws {
        let added = try keychain.add(genp("svc", "alice"), data: secret("x"), updateExisting: true)
        XCTAssertEqual(added.creationDate, added.modificationDate)
        XCTAssertEqual(try allGenp().count, 1)
    }

    func testAddUpdateExistingOnlyTouchesItsOwnGroup() throws {
        let team = try addGenp("svc", "alice", secret: "team", group: "T.shared")
        try keychain.add(genp("svc", "alice"), data: secret("default"), updateExisting: true)
        let all = try allGenp()
        XCTAssertEqual(all.count, 2)
        XCTAssertEqual(all[0].persistentRef, team.persistentRef)
        XCTAssertEqual(all[0].secretString, "team")
        XCTAssertEqual(all[1].secretString, "default")
    }

    func testAddUpdateExistingRefusesAnotherProtectionClass() throws {
        try addGenp("svc", "alice", secret: "old", accessible: .whenUnlocked)
        XCTAssertKeychainError(.param, try keychain.add(genp("svc", "alice", accessible: .afterFirstUnlock),
                                                        data: secret("new"), updateExisting: true))
        let all = try allGenp()
        XCTAssertEqual(all.count, 1)
        XCTAssertEqual(all[0].secretString, "old")
        XCTAssertEqual(all[0].accessible, .whenUnlocked)
    }

    func testAddUpdateExistingWithTheSameProtectionClassWorks() throws {
        try addGenp("svc", "alice", secret: "old", accessible: .afterFirstUnlock)
        XCTAssertNoThrow(try keychain.add(genp("svc", "alice", accessible: .afterFirstUnlock), data: secret("new"), updateExisting: true))
        XCTAssertEqual(try allGenp()[0].secretString, "new")
    }

    func testAddUpdateExistingOfAnInternetPassword() throws {
        let key: [Attribute: [UInt8]] = [.server: bytes("example.com"), .account: bytes("alice"), .port: [1, 187]]
        let added = try keychain.add(inet(key), data: secret("old"))
        let updated = try keychain.add(inet(key.merging([.comment: bytes("c")]) { $1 }), data: secret("new"), updateExisting: true)
        XCTAssertEqual(updated.persistentRef, added.persistentRef)
        let all = try keychain.search(Query(itemClass: .internetPassword), limit: .all, returnData: true)
        XCTAssertEqual(all.count, 1)
        XCTAssertEqual(all[0].secretString, "new")
        XCTAssertEqual(all[0].string(.comment), "c")
        XCTAssertEqual(all[0].string(.label), "example.com")
    }
}
