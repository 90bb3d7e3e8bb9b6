@testable import LocketCore
@testable import LocketRemote
import XCTest

/// The item tree attacked by the operator (SQL as the server's superuser):
/// each alteration of `locket.nodes`, alone or with the item rows, is
/// refused (errSecDecode) before any secret is returned, by both the device
/// that wrote and another; with the tree put back, the same reads succeed.
final class RemoteTreeAttackTests: PostgresTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    private func read(_ machine: TemporaryKeychain, _ account: String) throws -> String? {
        try machine.open().search(query(.genericPassword, [.account: account]), returnData: true).first?.secretString
    }

    /// Two devices of a keychain holding items "one" and "two" (neighbours in one bottom node), their ids, and the operator.
    private func keychain() throws -> (devices: [TemporaryKeychain], one: Int64, two: Int64, sql: RemoteConnection) {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one"), data: secret("secret-one"))
        try admin.open().add(genp("s", "two"), data: secret("secret-two"))
        let (other, _) = try machines.enrolled(location, name: "other", approvedBy: admin)
        XCTAssertEqual(try read(other, "two"), "secret-two")
        let sql = try running().connect(database: database)
        let ids = try sql.execute("SELECT id FROM locket.items ORDER BY id").compactMap { $0[0].int }
        XCTAssertEqual(ids.count, 2)
        XCTAssertEqual(ids[0] >> 4, ids[1] >> 4, "one bottom node")
        try sql.execute("CREATE TABLE public.saved_nodes AS SELECT * FROM locket.nodes")
        return ([admin, other], ids[0], ids[1], sql)
    }

    /// Every device is refused the item; with the nodes put back, each reads it again.
    private func assertRefused(_ devices: [TemporaryKeychain], _ account: String, _ sql: RemoteConnection, restoring: Bool = true,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        for device in devices {
            XCTAssertThrowsError(try read(device, account), file: file, line: line) { error in
                XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)", file: file, line: line)
            }
        }
        guard restoring else { return }
        try sql.execute("DELETE FROM locket.nodes")
        try sql.execute("INSERT INTO locket.nodes SELECT * FROM public.saved_nodes")
        for device in devices { XCTAssertEqual(try read(device, account), "secret-\(account)", file: file, line: line) }
    }

    private func node(_ sql: RemoteConnection, level: Int, id: Int64) throws -> [UInt8] {
        try XCTUnwrap(sql.execute("SELECT hashes FROM locket.nodes WHERE node = $1", [.int(ItemTree.key(level: level, id: id))]).first?[0].bytes)
    }

    private func setNode(_ sql: RemoteConnection, level: Int, id: Int64, _ hashes: [UInt8]) throws {
        try sql.execute("UPDATE locket.nodes SET hashes = $2 WHERE node = $1", [.int(ItemTree.key(level: level, id: id)), .bytes(hashes)])
    }

    func testANodeRowAlteredAtAnyLevelIsRefused() throws {
        let (devices, one, _, sql) = try keychain()
        for level in [0, 4, ItemTree.depth - 1] {
            var hashes = try node(sql, level: level, id: one)
            hashes[hashes.count - 1] ^= 1
            try setNode(sql, level: level, id: one, hashes)
            try assertRefused(devices, "one", sql)
        }
    }

    func testTwoSiblingsSwappedAreRefused() throws {
        let (devices, one, two, sql) = try keychain()
        let bottom = try node(sql, level: ItemTree.depth - 1, id: one)
        let a = ItemTree.slot(level: ItemTree.depth - 1, id: one) * 32, b = ItemTree.slot(level: ItemTree.depth - 1, id: two) * 32
        var swapped = bottom
        swapped.replaceSubrange(a..<a + 32, with: bottom[b..<b + 32])
        swapped.replaceSubrange(b..<b + 32, with: bottom[a..<a + 32])
        try setNode(sql, level: ItemTree.depth - 1, id: one, swapped)
        try assertRefused(devices, "one", sql)
    }

    func testANodeRowDeletedIsRefused() throws {
        let (devices, one, _, sql) = try keychain()
        for level in [0, 6, ItemTree.depth - 1] {
            try sql.execute("DELETE FROM locket.nodes WHERE node = $1", [.int(ItemTree.key(level: level, id: one))])
            try assertRefused(devices, "two", sql)
        }
    }

    /// The row given another id (its blind rows with it), its leaf moved to that id's place in the node too.
    func testALeafMovedToAnotherIDIsRefused() throws {
        let (devices, one, _, sql) = try keychain()
        let target = one + 5
        try sql.execute("CREATE TABLE public.moved AS SELECT * FROM locket.items WHERE id = $1", [.int(one)])
        try sql.execute("CREATE TABLE public.moved_blind AS SELECT * FROM locket.blind WHERE item = $1", [.int(one)])
        try sql.execute("DELETE FROM locket.items WHERE id = $1", [.int(one)])
        try sql.execute("UPDATE public.moved SET id = $1", [.int(target)])
        try sql.execute("UPDATE public.moved_blind SET item = $1", [.int(target)])
        try sql.execute("INSERT INTO locket.items OVERRIDING SYSTEM VALUE SELECT * FROM public.moved")
        try sql.execute("INSERT INTO locket.blind SELECT * FROM public.moved_blind")
        try assertRefused(devices, "one", sql, restoring: false)
        let bottom = try node(sql, level: ItemTree.depth - 1, id: one)
        let from = ItemTree.slot(level: ItemTree.depth - 1, id: one) * 32, to = ItemTree.slot(level: ItemTree.depth - 1, id: target) * 32
        var moved = bottom
        moved.replaceSubrange(to..<to + 32, with: bottom[from..<from + 32])
        moved.replaceSubrange(from..<from + 32, with: ItemTree.absent)
        try setNode(sql, level: ItemTree.depth - 1, id: one, moved)
        try assertRefused(devices, "one", sql, restoring: false)
    }

    /// An item updated, then its old row put back with the old nodes: the whole tree, or only its path's bottom.
    func testAnOldNodePutBackWithItsOldRowIsRefused() throws {
        let (devices, one, _, sql) = try keychain()
        try sql.execute("CREATE TABLE public.old_items AS SELECT * FROM locket.items")
        try devices[0].open().update(query(.genericPassword, [.account: "one"]), changes: [:], data: secret("secret-one-v2"))
        XCTAssertEqual(try read(devices[1], "one"), "secret-one-v2")
        try sql.execute("UPDATE locket.items i SET attrs = o.attrs, data = o.data, vh = o.vh, dh = o.dh FROM public.old_items o WHERE o.id = i.id")
        let bottom = ItemTree.key(level: ItemTree.depth - 1, id: one)
        try sql.execute("UPDATE locket.nodes n SET hashes = s.hashes FROM public.saved_nodes s WHERE s.node = n.node AND n.node = $1", [.int(bottom)])
        try assertRefused(devices, "one", sql, restoring: false)
        try sql.execute("UPDATE locket.nodes n SET hashes = s.hashes FROM public.saved_nodes s WHERE s.node = n.node")
        try assertRefused(devices, "one", sql, restoring: false)
    }

    /// A writer checks the path of what it changes first: with a node of
    /// the new item's path altered, an add is refused and leaves nothing.
    func testAnAddOverAnAlteredPathIsRefusedAndWritesNothing() throws {
        let (devices, one, _, sql) = try keychain()
        var hashes = try node(sql, level: 2, id: one)
        hashes[0] ^= 1
        try setNode(sql, level: 2, id: one, hashes)
        let states = try sql.execute("SELECT count(*) FROM locket.states").first?[0].int
        XCTAssertThrowsError(try devices[1].open().add(genp("s", "three"), data: secret("secret-three"))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)")
        }
        XCTAssertEqual(try sql.execute("SELECT count(*) FROM locket.items").first?[0].int, 2)
        XCTAssertEqual(try sql.execute("SELECT count(*) FROM locket.states").first?[0].int, states)
    }
}
