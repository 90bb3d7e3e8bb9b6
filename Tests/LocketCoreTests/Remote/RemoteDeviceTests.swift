import Foundation
@testable import LocketCore
@testable import LocketRemote
import XCTest

/// Devices of a remote keychain (SPEC §17 "Devices"): a device opens only
/// the access groups it was approved for, shown by reading the database as
/// the server holds it with the device's own secret key; a revoked device's
/// keys open nothing written after the revocation.
final class RemoteDeviceTests: PostgresTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    func testADeviceOpensOnlyItsGroupsByTheKeysItCanUnwrap() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one", group: "g1"), data: secret("secret-one"))
        try admin.open().add(genp("s", "two", group: "g2"), data: secret("secret-two"))
        let (device, id) = try machines.enrolled(location, name: "b")
        try machines.approve(admin, id, groups: ["g1"])

        // Through the engine: g1 opens, g2 is refused as not approved.
        XCTAssertEqual(try device.open().search(query(.genericPassword, [.account: "one"]), returnData: true)[0].secretString, "secret-one")
        XCTAssertThrowsError(try device.open().search(query(.genericPassword, [.account: "two"]), returnData: true)) { error in
            XCTAssertEqual((error as? KeychainError)?.reason, .notApproved(group: "g2"))
        }
        // The owner of an app's entitlements or not, a WHERE clause is not
        // what stops it: as the server holds the database, every wrapped
        // group key is there to try, and the device's secret key opens only g1's.
        let identity = try XCTUnwrap(try DeviceIdentity.load(keychainID: try device.open().engine.keybag.keychainID, environment: device.environment))
        let connection = try running().connect(database: database)
        let wraps = try connection.execute("SELECT agrp, wrapped FROM locket.group_keys ORDER BY agrp, device")
        XCTAssertEqual(Set(wraps.compactMap { $0[0].text }), ["g1", "g2"])
        var opened: [String] = []
        for row in wraps {
            if (try? identity.open(row[1].bytes ?? [])) != nil { opened.append(row[0].text ?? "") }
        }
        XCTAssertEqual(opened, ["g1"])
        // And a g2 item does not open under any field key the device can make.
        let keychain = try device.open()
        let g2 = try XCTUnwrap(try connection.execute("SELECT ref, cls, pdmn, data FROM locket.items WHERE agrp = 'g2'").first)
        let row = Sealing.RowIdentity(itemClass: .genericPassword, accessible: .whenUnlocked, accessGroup: "g2", ref: g2[0].bytes ?? [])
        let classGroupKey = try keychain.engine.cache.groupKey(.whenUnlocked, "g2")
        for wrap in wraps {
            guard let key = try? identity.open(wrap[1].bytes ?? []) else { continue }
            let mixed = try classGroupKey.withUnsafeBytes { try KeyDerivation.derive(key, KeyDerivation.Context("locket.remote.group.v1").with($0)) }
            XCTAssertThrowsError(try SecretBox.open(g2[3].bytes ?? [], key: Sealing.fieldKey(mixed, row, .data), what: "g2"))
        }
    }

    func testRevokingRotatesTheGroupAndReSealsItsItemsInOneTransaction() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one", group: "g1"), data: secret("before"))
        let (device, id) = try machines.enrolled(location, name: "b")
        try machines.approve(admin, id, groups: ["g1"])
        XCTAssertEqual(try device.open().search(query(.genericPassword, [.account: "one"]), returnData: true)[0].secretString, "before")
        let connection = try running().connect(database: database)
        let sealedBefore = try connection.execute("SELECT data FROM locket.items")[0][0].bytes
        // What the device kept: its key for generation 1.
        let identity = try XCTUnwrap(try DeviceIdentity.load(keychainID: try device.open().engine.keybag.keychainID, environment: device.environment))
        let keptWrap = try XCTUnwrap(try connection.execute("SELECT wrapped FROM locket.group_keys WHERE device = $1", [.int(id)]).first?[0].bytes)
        let kept = try identity.open(keptWrap)

        try admin.open().remote!.revoke(device: id)
        XCTAssertEqual(try connection.execute("SELECT generation FROM locket.groups WHERE agrp = 'g1'")[0][0].int, 2)
        XCTAssertEqual(try connection.execute("SELECT count(*) FROM locket.group_keys WHERE device = $1", [.int(id)])[0][0].int, 0)
        XCTAssertNotEqual(try connection.execute("SELECT data FROM locket.items")[0][0].bytes, sealedBefore, "re-sealed")
        XCTAssertEqual(try connection.execute("SELECT state FROM locket.devices WHERE id = $1", [.int(id)])[0][0].text, "revoked")
        // The admin reads on; the revoked device reads nothing, even with the key it kept.
        XCTAssertEqual(try admin.open().search(query(.genericPassword, [.account: "one"]), returnData: true)[0].secretString, "before")
        try admin.open().update(query(.genericPassword, [.account: "one"]), changes: [:], data: secret("after"))
        XCTAssertThrowsError(try device.open().search(query(.genericPassword, [.account: "one"]), returnData: true))
        let keychain = try device.open()
        let item = try connection.execute("SELECT ref, data FROM locket.items")[0]
        let row = Sealing.RowIdentity(itemClass: .genericPassword, accessible: .whenUnlocked, accessGroup: "g1", ref: item[0].bytes ?? [])
        let mixed = try keychain.engine.cache.groupKey(.whenUnlocked, "g1").withUnsafeBytes {
            try KeyDerivation.derive(kept, KeyDerivation.Context("locket.remote.group.v1").with($0))
        }
        XCTAssertThrowsError(try SecretBox.open(item[1].bytes ?? [], key: Sealing.fieldKey(mixed, row, .data), what: "after"))
        XCTAssertThrowsError(try admin.open().remote!.revoke(device: id)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .itemNotFound)
        }
    }

    func testDevicesListsStatesGroupsAndThisMachine() throws {
        let (admin, location, _) = try machines.created()
        try admin.open().add(genp("s", "one", group: "g1"), data: secret("x"))
        let (device, id) = try machines.enrolled(location, name: "b")
        var listed = try device.open().remote!.devices()
        XCTAssertEqual(listed.map(\.state), ["approved", "pending"])
        XCTAssertEqual(listed.map(\.isThisMachine), [false, true])
        try machines.approve(admin, id, groups: ["g1"])
        listed = try admin.open().remote!.devices()
        XCTAssertEqual(listed.map(\.groups), [["g1"], ["g1"]])
        XCTAssertThrowsError(try device.open().remote!.enroll(name: "again")) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .duplicateItem)
        }
        XCTAssertThrowsError(try admin.open().remote!.approve(device: 999, groups: ["g1"], fingerprint: "0000-0000-0000-0000-0000")) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .itemNotFound)
        }
    }
}
