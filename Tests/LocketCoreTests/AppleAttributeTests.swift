import LocketCore
import XCTest

/// SPEC §4 as revised (issue 37), in the engine: the protection class is an
/// ordinary query attribute and `update` may change it (each item sealed
/// again under the new class's key, in the same transaction); synchronizable
/// is stored and matched as Apple's (absent or false: only items that are
/// not; `any`: both), part of the primary key.
final class AppleAttributeTests: KeychainTestCase {
    /// Run against a file keychain and a remote one (SPEC §17 conformance).
    override class var isConformanceSuite: Bool { true }

    private func synced(_ service: String, _ account: String, secret text: String) throws -> Item {
        var item = try genp(service, account)
        try item.set(.synchronizable, [0x31])
        return try keychain.add(item, data: secret(text))
    }

    private func accounts(_ query: Query) throws -> [String] {
        do {
            return try keychain.search(query, limit: .all).map { $0.string(.account) }
        } catch let error as KeychainError where error.code == .itemNotFound {
            return []
        }
    }

    func testTheProtectionClassIsAQueryTerm() throws {
        try addGenp("svc", "a", accessible: .afterFirstUnlock)
        try addGenp("svc", "b")
        var byClass = try query(.genericPassword, [.service: "svc"])
        byClass.accessible = .afterFirstUnlock
        XCTAssertEqual(try accounts(byClass), ["a"])
        var asAttribute = Query(itemClass: .genericPassword)
        try asAttribute.match(.accessible, bytes("kSecAttrAccessibleWhenUnlocked"))
        XCTAssertEqual(try accounts(asAttribute), ["b"])
        XCTAssertEqual(try keychain.delete(asAttribute), 1)
        XCTAssertEqual(try allGenp().map { $0.string(.account) }, ["a"])
    }

    func testUpdateMovesAnItemToAnotherClassSealedUnderItsKey() throws {
        let added = try addGenp("svc", "a", secret: "A")
        XCTAssertEqual(try keychain.update(try query(.genericPassword, [.account: "a"]), changes: [.accessible: bytes("ck")]), 1)
        let moved = try keychain.search(try query(.genericPassword, [.account: "a"]), returnData: true)[0]
        XCTAssertEqual(moved.accessible, .afterFirstUnlock)
        XCTAssertEqual(moved.persistentRef, added.persistentRef, "the same item")
        XCTAssertEqual(moved.secretString, "A")
        // Opened with after-first-unlock's key alone: `lock` forgets when-unlocked's.
        try temporary.lock(all: false)
        keychain = try temporary.open()
        XCTAssertEqual(try keychain.search(try query(.genericPassword, [.account: "a"]), returnData: true)[0].secretString, "A")
        // Back to when-unlocked, whose key is not here: nothing changes.
        assertKeychainError(.interactionNotAllowed) {
            try self.keychain.update(try query(.genericPassword, [.account: "a"]), changes: [.accessible: bytes("when-unlocked")])
        }
        XCTAssertEqual(try keychain.search(try query(.genericPassword, [.account: "a"]))[0].accessible, .afterFirstUnlock)
        try temporary.unlock()
        keychain = try temporary.open()
        if isRemoteRun {
            // A shared keychain holds no item bound to one device.
            assertKeychainError(.param) {
                try self.keychain.update(try query(.genericPassword, [.account: "a"]), changes: [.accessible: bytes("cku")])
            }
        }
    }

    func testSynchronizableIsPartOfThePrimaryKeyAndMatchedAsApplesIs() throws {
        try addGenp("svc", "me", secret: "plain")
        let twin = try synced("svc", "me", secret: "synced")
        assertKeychainError(.duplicateItem) { _ = try self.synced("svc", "me", secret: "again") }
        let full = try query(.genericPassword, [.service: "svc", .account: "me"])
        XCTAssertEqual(try keychain.search(full, returnData: true).map { $0.secretString }, ["plain"], "not given: not synchronizable")
        var yes = full
        yes.synchronizable = .yes
        XCTAssertEqual(try keychain.search(yes, returnData: true).map { $0.secretString }, ["synced"])
        var any = try query(.genericPassword, [.service: "svc"])
        any.synchronizable = .any
        XCTAssertEqual(try keychain.search(any, limit: .all).count, 2)
        // Without the whole primary key: the blind rows, the mark excluded or asked for.
        XCTAssertEqual(try keychain.search(try query(.genericPassword, [.service: "svc"]), limit: .all, returnData: true).map { $0.secretString },
                       ["plain"])
        var syncedOnly = try query(.genericPassword, [.service: "svc"])
        syncedOnly.synchronizable = .yes
        XCTAssertEqual(try keychain.search(syncedOnly, limit: .all, returnData: true).map { $0.secretString }, ["synced"])
        // A persistent reference names its item whatever it is.
        XCTAssertEqual(try keychain.search(query(ref: twin.persistentRef), returnData: true)[0].secretString, "synced")
        // A delete without it leaves the synchronizable item, locked or not.
        try temporary.lock(all: false)
        keychain = try temporary.open()
        XCTAssertEqual(try keychain.delete(try query(.genericPassword, [.service: "svc"])), 1)
        try temporary.unlock()
        keychain = try temporary.open()
        XCTAssertEqual(try keychain.search(any, limit: .all, returnData: true).map { $0.secretString }, ["synced"])
        // Changed by update, as any attribute of the primary key.
        XCTAssertEqual(try keychain.update(yes, changes: [.synchronizable: []]), 1)
        XCTAssertEqual(try keychain.search(full, returnData: true)[0].secretString, "synced")
        XCTAssertEqual(try keychain.search(any, limit: .all)[0].string(.synchronizable), "")
    }
}
