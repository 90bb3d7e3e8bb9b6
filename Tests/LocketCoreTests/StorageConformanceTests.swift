import Foundation
import LocketCore
import XCTest

/// Issue 38, point 4: what every storage must do alike beside the query,
/// uniqueness, update and attribute suites: keep each protection class and
/// lock it by tier (class), keep access groups apart (group), undo every
/// part of a write that fails (rollback) and import in one transaction
/// (import). A conformance suite: `make test` runs it against a file, a
/// remote keychain and one in memory (`isConformanceSuite`).
final class StorageConformanceTests: KeychainTestCase {
    override class var isConformanceSuite: Bool { true }

    private func services(_ query: Query = Query(itemClass: .genericPassword)) throws -> [String] {
        do {
            return try keychain.search(query, limit: .all).map { $0.string(.service) }
        } catch let error as KeychainError where error.code == .itemNotFound {
            return []
        }
    }

    // MARK: - Class

    /// Every protection class the storage holds is kept, found by it, and
    /// locked with its tier: a lock leaves after-first-unlock items readable,
    /// lock --all none but the always tier (and not that where no key is
    /// wrapped for the device: a keychain many devices share). A class the
    /// storage can't hold (a device's own, in such a keychain) is refused
    /// when added, and nothing is stored. A locked item is never reported missing.
    func testEachProtectionClassIsKeptFoundByItAndLockedWithItsTier() throws {
        var kept: [ProtectionClass] = []
        for pclass in ProtectionClass.allCases {
            do {
                try addGenp(pclass.rawValue, "acct", secret: "s-" + pclass.rawValue, accessible: pclass)
                kept.append(pclass)
            } catch let error as KeychainError {
                XCTAssertTrue(isRemoteRun && pclass.thisDeviceOnly, "\(pclass) refused: \(error)")
            }
        }
        XCTAssertTrue(kept.contains(.whenUnlocked) && kept.contains(.afterFirstUnlock) && kept.contains(.always), "\(kept)")
        for pclass in kept {
            var query = Query(itemClass: .genericPassword)
            query.accessible = pclass
            XCTAssertEqual(try services(query), [pclass.rawValue], "found by its class")
        }
        XCTAssertEqual(try services().sorted(), kept.map(\.rawValue).sorted())

        func readable() -> [String] {
            kept.filter { pclass in
                (try? keychain.search(query(.genericPassword, [.service: pclass.rawValue]), returnData: true).first?.secretString)
                    == "s-" + pclass.rawValue
            }.map(\.rawValue)
        }
        keychain.session.lock(all: false)
        keychain = try temporary.open()
        XCTAssertEqual(Set(readable()), Set(kept.filter { $0.tier != .whenUnlocked }.map(\.rawValue)), "a lock locks the when-unlocked tier")
        keychain.session.lock(all: true)
        keychain = try temporary.open()
        XCTAssertEqual(Set(readable()), isRemoteRun ? [] : Set(kept.filter { $0.tier == .always }.map(\.rawValue)),
                       "lock --all leaves the always tier")
        XCTAssertKeychainError(.interactionNotAllowed, try keychain.search(query(.genericPassword, [.service: ProtectionClass.whenUnlocked.rawValue])))
    }

    // MARK: - Group

    /// The same primary key in two groups is two items; a query in one group
    /// sees its own; an update that would move an item onto another's key in
    /// the target group is errSecDuplicateItem and moves nothing.
    func testAccessGroupsKeepTheSamePrimaryKeyApart() throws {
        try addGenp("svc", "acct", secret: "in default", group: "default")
        try addGenp("svc", "acct", secret: "in shared", group: "T.shared")
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .all).count, 2)
        for (group, value) in [("default", "in default"), ("T.shared", "in shared")] {
            let found = try keychain.search(query(.genericPassword, [.service: "svc"], group: group), limit: .all, returnData: true)
            XCTAssertEqual(found.map(\.secretString), [value], group)
            XCTAssertEqual(found.map(\.accessGroup), [group])
        }
        XCTAssertKeychainError(.duplicateItem, try keychain.update(query(.genericPassword, [.service: "svc"], group: "default"),
                                                                    changes: [:], accessGroup: "T.shared"))
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"], group: "default"), returnData: true)
            .map(\.secretString), ["in default"], "the refused move changed nothing")
        XCTAssertEqual(try keychain.delete(query(.genericPassword, [.service: "svc"], group: "T.shared")), 1)
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .all).map(\.accessGroup), ["default"])
    }

    // MARK: - Rollback

    /// A write that fails part of the way leaves nothing of itself: a batch
    /// with a duplicate in its middle adds none of its items; an update of
    /// several items of which one would collide changes none of them.
    func testAWriteThatFailsPartOfTheWayChangesNothing() throws {
        try addGenp("taken", "acct", secret: "first")
        let batch = try ["new 1", "new 2", "taken", "new 3"].map { (item: try genp($0, "acct"), data: try secret("batch")) }
        XCTAssertKeychainError(.duplicateItem, try keychain.addBatch(batch))
        XCTAssertEqual(try services(), ["taken"], "the batch left nothing")

        try addGenp("x", "one", secret: "1")
        try addGenp("x", "two", secret: "2")
        try addGenp("y", "two", secret: "y2")
        // Both x items to account "two": the second would collide with the first (and with y's? no: another service).
        XCTAssertKeychainError(.duplicateItem, try keychain.update(query(.genericPassword, [.service: "x"]), changes: [.account: bytes("two")]))
        let xs = try keychain.search(query(.genericPassword, [.service: "x"]), limit: .all, returnData: true)
        XCTAssertEqual(xs.map { $0.string(.account) }.sorted(), ["one", "two"], "no item of the failed update changed")
        XCTAssertEqual(xs.compactMap(\.secretString).sorted(), ["1", "2"])
        XCTAssertEqual(try services().sorted(), ["taken", "x", "x", "y"])
    }

    // MARK: - Import

    /// An import is one transaction: an error from its source adds nothing;
    /// a whole one adds every item, an existing primary key left alone or
    /// updated (`updateExisting`), its reference and creation date kept. A
    /// storage without imports (a keychain many devices share) refuses it
    /// with errSecNotAvailable before anything is read.
    func testImportIsOneTransaction() throws {
        struct SourceBroke: Error {}
        try addGenp("existing", "acct", secret: "old")
        let before = try keychain.search(query(.genericPassword, [.service: "existing"]))[0]
        func items(_ names: [String]) throws -> [ImportedItem] {
            try names.map { ImportedItem(itemClass: .genericPassword, attributes: [.service: bytes($0), .account: bytes("acct")],
                                         data: try secret("imported " + $0)) }
        }
        guard keychain.capabilities.contains(.importItems) else {
            XCTAssertTrue(isRemoteRun, "only a remote keychain lacks imports")
            var asked = false
            XCTAssertKeychainError(.notAvailable, try keychain.importItems(updateExisting: false, next: { asked = true; return nil },
                                                                          outcome: { _, _ in }))
            XCTAssertFalse(asked, "refused before the source was read")
            return
        }
        var source = try items(["a", "b", "c"])[...]
        var given = 0
        XCTAssertThrowsError(try keychain.importItems(updateExisting: false, next: {
            given += 1
            if given == 3 { throw SourceBroke() }
            return source.popFirst()
        }, outcome: { _, _ in })) { XCTAssertTrue($0 is SourceBroke, "\($0)") }
        XCTAssertEqual(try services(), ["existing"], "a source that broke part of the way added nothing")

        source = try items(["a", "existing", "b"])[...]
        var outcomes: [ImportOutcome] = []
        try keychain.importItems(updateExisting: false, next: { source.popFirst() }, outcome: { outcomes.append($1) })
        XCTAssertEqual(outcomes, [.added, .existing, .added])
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "existing"]), returnData: true).map(\.secretString), ["old"])

        source = try items(["existing"])[...]
        outcomes = []
        try keychain.importItems(updateExisting: true, next: { source.popFirst() }, outcome: { outcomes.append($1) })
        XCTAssertEqual(outcomes, [.updated])
        let updated = try keychain.search(query(.genericPassword, [.service: "existing"]), returnData: true)
        XCTAssertEqual(updated.map(\.secretString), ["imported existing"])
        XCTAssertEqual(updated.first?.persistentRef, before.persistentRef, "updated in place")
        XCTAssertEqual(updated.first?.creationDate, before.creationDate)
        XCTAssertEqual(try services().sorted(), ["a", "b", "existing"])
    }
}
