import LocketCore
import XCTest

/// Items made over the Secret Service are unique by reference (SPEC §18):
/// an update "of the item with this primary key" (add -U, import -U, the
/// credential helpers' store) must never reach one that only shares the
/// service and account, while update and delete by a query still change
/// every match (SecItemUpdate, SecItemDelete). And `update` edits some
/// free-form attributes, keeping the others.
final class FreeFormUpdateTests: KeychainTestCase {
    /// Two bus items (service=gh, username=bob, labels L1/L2) and one CLI item (-s gh -a bob), in that order.
    private func threeGhBob() throws -> (bus: [Item], cli: Item) {
        var bus: [Item] = []
        for label in ["L1", "L2"] {
            var item = try genp("gh", "bob", [.label: label])
            item.freeForm = FreeForm(attributes: ["xdg:schema": "org.freedesktop.Secret.Generic"], uniqueByReference: true)
            bus.append(try keychain.add(item, data: secret("bus \(label)")))
        }
        return (bus, try addGenp("gh", "bob", [.label: "CLI"], secret: "cli"))
    }

    private func state(_ ref: [UInt8]) throws -> (label: String, secret: String) {
        let item = try keychain.search(query(ref: ref), returnData: true)[0]
        return (String(decoding: item[.label], as: UTF8.self), item.secretString ?? "")
    }

    func testAddUpdateExistingChangesOnlyTheItemWhosePrimaryKeyConflicted() throws {
        let (bus, cli) = try threeGhBob()
        let updated = try keychain.add(try genp("gh", "bob", [.label: "new"]), data: secret("rotated"), updateExisting: true)
        XCTAssertEqual(updated.persistentRef, cli.persistentRef)
        XCTAssertEqual(try state(cli.persistentRef).label, "new")
        XCTAssertEqual(try state(cli.persistentRef).secret, "rotated")
        XCTAssertEqual(try state(bus[0].persistentRef).label, "L1")
        XCTAssertEqual(try state(bus[0].persistentRef).secret, "bus L1")
        XCTAssertEqual(try state(bus[1].persistentRef).label, "L2")
        XCTAssertEqual(try state(bus[1].persistentRef).secret, "bus L2")
    }

    func testAddUpdateExistingWithOnlyBusItemsAddsBesideThem() throws {
        var item = try genp("gh", "bob", [.label: "L1"])
        item.freeForm = FreeForm(attributes: ["k": "v"], uniqueByReference: true)
        let bus = try keychain.add(item, data: secret("bus"))
        let added = try keychain.add(try genp("gh", "bob"), data: secret("cli"), updateExisting: true)
        XCTAssertNotEqual(added.persistentRef, bus.persistentRef)
        XCTAssertEqual(try state(bus.persistentRef).secret, "bus")
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "gh", .account: "bob"]), limit: .all).count, 2)
    }

    func testUpdateAndDeleteByQueryStillChangeEveryMatch() throws {
        let (bus, cli) = try threeGhBob()
        XCTAssertEqual(try keychain.update(query(.genericPassword, [.service: "gh", .account: "bob"]), changes: [.comment: bytes("all")]), 3)
        for ref in bus.map(\.persistentRef) + [cli.persistentRef] {
            XCTAssertEqual(try keychain.search(query(ref: ref))[0][.comment], bytes("all"))
        }
        XCTAssertEqual(try keychain.delete(query(.genericPassword, [.service: "gh", .account: "bob"])), 3)
    }

    func testImportUpdateExistingChangesOnlyTheConflictingItem() throws {
        let (bus, cli) = try threeGhBob()
        let record = ImportedItem(itemClass: .genericPassword, attributes: [.service: bytes("gh"), .account: bytes("bob"), .label: bytes("imported")],
                                  data: try secret("from backup"), persistentRef: Array(repeating: 7, count: 16))
        var outcomes: [ImportOutcome] = []
        var offered = [record]
        try keychain.importItems(updateExisting: true, next: { offered.popLast() }, outcome: { outcomes.append($1) })
        XCTAssertEqual(outcomes, [.updated])
        XCTAssertEqual(try state(cli.persistentRef).label, "imported")
        XCTAssertEqual(try state(bus[0].persistentRef).label, "L1")
        XCTAssertEqual(try state(bus[1].persistentRef).secret, "bus L2")
    }

    // MARK: - Editing free-form attributes

    func testAnEditSetsAndRemovesSomeAttributesAndKeepsTheRest() throws {
        var item = try genp("gh", "bob")
        item.freeForm = FreeForm(attributes: ["keep": "1", "change": "old", "drop": "x"], contentType: "text/plain", uniqueByReference: true)
        let made = try keychain.add(item, data: secret("s"))
        let edit = FreeFormEdit(setting: ["change": "new", "added": ""], removing: ["drop", "absent"])
        XCTAssertEqual(try keychain.update(query(ref: made.persistentRef), changes: [:], freeFormEdit: edit), 1)
        let found = try keychain.search(query(ref: made.persistentRef))[0]
        XCTAssertEqual(found.freeForm, FreeForm(attributes: ["keep": "1", "change": "new", "added": ""], contentType: "text/plain",
                                                uniqueByReference: true))
        // The blind rows follow: the new pairs find it, the old ones no longer do.
        var byNew = Query(itemClass: .genericPassword)
        byNew.match(freeForm: "change", "new")
        byNew.match(freeForm: "added", "")
        XCTAssertEqual(try keychain.search(byNew).map(\.persistentRef), [made.persistentRef])
        for (name, value) in [("change", "old"), ("drop", "x")] {
            var old = Query(itemClass: .genericPassword)
            old.match(freeForm: name, value)
            XCTAssertKeychainError(.itemNotFound, try keychain.search(old))
        }
    }

    func testAnEditAppliesToEachMatchOnItsOwnAttributes() throws {
        var a = try genp("svc", "a")
        a.freeForm = FreeForm(attributes: ["app": "one"])
        var b = try genp("svc", "b")
        b.freeForm = FreeForm(attributes: ["app": "two", "extra": "y"])
        try keychain.add(a, data: secret("a"))
        try keychain.add(b, data: secret("b"))
        XCTAssertEqual(try keychain.update(query(.genericPassword, [.service: "svc"]), changes: [:],
                                           freeFormEdit: FreeFormEdit(setting: ["tag": "t"], removing: ["extra"])), 2)
        let found = try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .all)
        XCTAssertEqual(found.map(\.freeForm.attributes), [["app": "one", "tag": "t"], ["app": "two", "tag": "t"]])
    }

    func testAnEditIsRefusedWhereNoFreeFormAttributesCanBe() throws {
        try keychain.add(try inet([.server: bytes("h.example")]), data: secret("s"))
        XCTAssertKeychainError(.noSuchAttr, try keychain.update(query(.internetPassword, [.server: "h.example"]), changes: [:],
                                                                freeFormEdit: FreeFormEdit(setting: ["k": "v"])))
        try addGenp("svc", "a")
        XCTAssertKeychainError(.param, try keychain.update(query(.genericPassword, [.service: "svc"]), changes: [:],
                                                           freeFormEdit: FreeFormEdit(setting: ["": "v"])))
        XCTAssertKeychainError(.dataTooLarge, try keychain.update(query(.genericPassword, [.service: "svc"]), changes: [:],
                                                                  freeFormEdit: FreeFormEdit(setting: ["k": String(repeating: "v", count: Attribute.maximumValueLength + 1)])))
    }
}
