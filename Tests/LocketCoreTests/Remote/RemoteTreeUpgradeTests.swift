@testable import LocketCore
@testable import LocketRemote
import XCTest

/// Schema 2 (issue 28's release, a signed root over every item) upgraded
/// to the item tree of schema 3 by the first transaction of an approved
/// device (RemoteStore+Upgrade); a device that is not approved is told what
/// to do meanwhile; a schema-2 keychain whose items are not its signed
/// state's is refused, not upgraded.
final class RemoteTreeUpgradeTests: PostgresTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    private func read(_ machine: TemporaryKeychain, _ account: String) throws -> String? {
        try machine.open().search(query(.genericPassword, [.account: account]), returnData: true).first?.secretString
    }

    private func schema(_ sql: RemoteConnection) throws -> [UInt8]? {
        try sql.execute("SELECT value FROM locket.meta WHERE name = 'schema'").first?[0].bytes
    }

    /// The database as the previous release leaves it: the newest state's
    /// root over every item (signed by `signer`, as its last write would
    /// have), no node table, version 2.
    private func downgrade(_ sql: RemoteConnection, signer: TemporaryKeychain) throws {
        let keychainID = try signer.open().engine.keybag.keychainID
        let device = try XCTUnwrap(try DeviceIdentity.load(keychainID: keychainID, environment: signer.environment))
        let newest = try XCTUnwrap(sql.execute("SELECT body, signature FROM locket.states ORDER BY seq DESC LIMIT 1").first)
        let state = try SignedState(body: newest[0].bytes ?? [], signature: newest[1].bytes ?? [])
        let items = try sql.execute("SELECT id, ref, vh FROM locket.items ORDER BY id").map { ($0[0].int ?? 0, $0[1].bytes ?? [], $0[2].bytes ?? []) }
        let next = try SignedState.sign(after: state, keychainID: keychainID, rosterEpoch: state.rosterEpoch,
                                        root: SignedState.root(items.map { (id: $0.0, ref: $0.1, version: $0.2) }), by: device)
        try sql.execute("INSERT INTO locket.states(seq, body, signature) VALUES ($1, $2, $3)",
                        [.int(next.sequence), .bytes(next.body), .bytes(next.signature)])
        try sql.execute("DROP TABLE locket.nodes")
        try sql.execute("UPDATE locket.meta SET value = int4send(2) WHERE name = 'schema'")
    }

    private func keychainOfSchema2() throws -> (admin: TemporaryKeychain, other: TemporaryKeychain, pending: TemporaryKeychain,
                                                sql: RemoteConnection) {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one"), data: secret("secret-one"))
        try admin.open().add(genp("s", "two"), data: secret("secret-two"))
        let (other, _) = try machines.enrolled(location, name: "other", approvedBy: admin)
        let (pending, _) = try machines.enrolled(location, name: "pending")
        let sql = try running().connect(database: database)
        try downgrade(sql, signer: admin)
        return (admin, other, pending, sql)
    }

    func testTheFirstApprovedDeviceUpgradesAndEveryDeviceGoesOn() throws {
        let (admin, other, pending, sql) = try keychainOfSchema2()
        // One item per statement: the upgrade reads its pages whole, none twice.
        let page = RemoteStore.upgradePage
        RemoteStore.upgradePage = 1
        defer { RemoteStore.upgradePage = page }
        XCTAssertThrowsError(try pending.open().remote!.devices()) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .invalidKeychain, "\(error)")
            XCTAssertTrue("\(error)".contains("schema version 2"), "\(error)")
            XCTAssertTrue("\(error)".contains("approved device"), "says what to do: \(error)")
        }
        XCTAssertEqual(try schema(sql), [0, 0, 0, 2], "a device that is not approved changes nothing")
        XCTAssertEqual(try read(other, "one"), "secret-one")
        XCTAssertEqual(try schema(sql), [0, 0, 0, 3])
        // The newest state is the upgrader's, over the tree the nodes hold.
        let newest = try XCTUnwrap(sql.execute("SELECT body, signature FROM locket.states ORDER BY seq DESC LIMIT 1").first)
        let state = try SignedState(body: newest[0].bytes ?? [], signature: newest[1].bytes ?? [])
        let root = try XCTUnwrap(sql.execute("SELECT hashes FROM locket.nodes WHERE node = 0").first?[0].bytes)
        XCTAssertEqual(state.root, ItemTree.hash(level: 0, root))
        XCTAssertEqual(try read(admin, "two"), "secret-two")
        try admin.open().add(genp("s", "three"), data: secret("secret-three"))
        XCTAssertEqual(try read(other, "three"), "secret-three")
        XCTAssertEqual(try pending.open().remote!.devices().count, 3, "the pending device goes on too")
    }

    func testTwoApprovedDevicesUpgradingAtOnceBothSucceed() throws {
        let (admin, other, _, sql) = try keychainOfSchema2()
        nonisolated(unsafe) let devices = [admin, other]
        nonisolated(unsafe) var results: [String?] = [nil, nil]
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let result: String
            do {
                result = try devices[index].open().search(query(.genericPassword, [.account: "one"]), returnData: true).first?.secretString ?? "none"
            } catch { result = "\(error)" }
            lock.lock(); results[index] = result; lock.unlock()
        }
        XCTAssertEqual(results, ["secret-one", "secret-one"])
        XCTAssertEqual(try schema(sql), [0, 0, 0, 3])
    }

    func testASchema2KeychainWhoseItemsAreNotItsSignedStatesIsRefusedNotUpgraded() throws {
        let (_, other, _, sql) = try keychainOfSchema2()
        try sql.execute("DELETE FROM locket.items WHERE id = (SELECT max(id) FROM locket.items)")
        XCTAssertThrowsError(try read(other, "one")) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)")
        }
        XCTAssertEqual(try schema(sql), [0, 0, 0, 2])
    }
}
