@testable import LocketCore
@testable import LocketRemote
import XCTest

/// The item tree on its own (no server): the node rows live in a
/// dictionary standing for `locket.nodes`, each transaction a fresh tree
/// from the root it trusts, as RemoteStore+Tree makes one.
final class ItemTreeTests: XCTestCase {
    /// `locket.nodes`, and the root the latest signed state would carry.
    private struct Server {
        var rows: [Int64: [UInt8]] = [:]
        var root = ItemTree.absent

        /// A transaction: `changes` (id -> leaf, `absent` to delete) folded in, written, the new root kept.
        mutating func write(_ changes: [Int64: [UInt8]]) throws {
            var tree = ItemTree(root: root)
            try tree.prove(changes.keys, rows: fetch(tree.wanted(changes.keys)))
            for (id, leaf) in changes { tree.set(id, leaf: leaf) }
            let (newRoot, writes) = try tree.commit()
            for (key, node) in writes { rows[key] = node }
            root = newRoot
        }

        /// What `SELECT ... WHERE node = ANY(keys)` returns.
        func fetch(_ keys: [Int64]) -> [Int64: [UInt8]] { rows.filter { keys.contains($0.key) } }

        /// The leaf of `id` proven from `root`, in a fresh transaction.
        func read(_ id: Int64) throws -> [UInt8] {
            var tree = ItemTree(root: root)
            try tree.prove([id], rows: fetch(tree.wanted([id])))
            return try XCTUnwrap(tree.leaf(id))
        }
    }

    private func leaf(_ id: Int64, _ version: UInt8 = 1) -> [UInt8] {
        ItemTree.leaf(id: id, ref: [UInt8](repeating: UInt8(id & 0xff), count: 16), version: [UInt8](repeating: version, count: 32))
    }

    func testAnEmptyTreeHasTheAbsentRootNoRowsAndProvesEveryIDAbsent() throws {
        let server = Server()
        var tree = ItemTree(root: server.root)
        XCTAssertEqual(tree.wanted([1, 99, ItemTree.maximumID]), [], "nothing to fetch under an absent root")
        try tree.prove([1, 99], rows: [:])
        XCTAssertEqual(tree.leaf(1), ItemTree.absent)
        let (root, writes) = try tree.commit()
        XCTAssertEqual(root, ItemTree.absent)
        XCTAssertTrue(writes.isEmpty)
    }

    func testInsertsUpdatesAndDeletesAreProvenFromTheRoot() throws {
        var server = Server()
        try server.write([1: leaf(1)])
        XCTAssertEqual(server.rows.count, ItemTree.depth, "one item: one node per level")
        XCTAssertEqual(try server.read(1), leaf(1))
        XCTAssertEqual(try server.read(2), ItemTree.absent, "a sibling is proven absent")
        XCTAssertEqual(try server.read(1 << 36), ItemTree.absent, "an id in another subtree is proven absent")
        try server.write([2: leaf(2), 1 << 20: leaf(1 << 20)])
        try server.write([1: leaf(1, 2)])
        XCTAssertEqual(try server.read(1), leaf(1, 2), "updated")
        XCTAssertEqual(try server.read(1 << 20), leaf(1 << 20))
        try server.write([1: ItemTree.absent, 2: ItemTree.absent])
        XCTAssertEqual(try server.read(1), ItemTree.absent, "deleted")
        XCTAssertEqual(try server.read(1 << 20), leaf(1 << 20))
        try server.write([1 << 20: ItemTree.absent])
        XCTAssertEqual(server.root, ItemTree.absent, "every item deleted: the empty tree again")
        XCTAssertEqual(server.rows.count, 0, "and no node row left")
    }

    /// One set of items has one root, whatever the order, the grouping into
    /// transactions, or the items added and removed on the way.
    func testTheRootDependsOnlyOnTheItems() throws {
        let ids: [Int64] = [1, 2, 3, 17, 255, 256, 4096, 70_000, 1 << 33, ItemTree.maximumID]
        var together = Server()
        try together.write(Dictionary(uniqueKeysWithValues: ids.map { ($0, leaf($0)) }))
        var oneByOne = Server()
        for id in ids.reversed() { try oneByOne.write([id: leaf(id)]) }
        var detour = Server()
        try detour.write([5: leaf(5), 6: leaf(6)])
        for id in ids { try detour.write([id: leaf(id, 9)]) }
        var back: [Int64: [UInt8]] = [5: ItemTree.absent, 6: ItemTree.absent]
        for id in ids { back[id] = leaf(id) }
        try detour.write(back)
        XCTAssertEqual(oneByOne.root, together.root)
        XCTAssertEqual(detour.root, together.root)
        XCTAssertEqual(detour.rows.count, together.rows.count, "no node left behind by the detour")
        for id in ids { XCTAssertEqual(try together.read(id), leaf(id)) }
    }

    /// Many changes in one transaction compose: the same root as one per transaction.
    func testManyChangesInOneTransactionCompose() throws {
        var batched = Server(), single = Server()
        let ids = (1...600).map { Int64($0) * 37 }
        try batched.write(Dictionary(uniqueKeysWithValues: ids.map { ($0, leaf($0)) }))
        for id in ids { try single.write([id: leaf(id)]) }
        XCTAssertEqual(batched.root, single.root)
        var mixed = ItemTree(root: batched.root)
        let touched: [Int64] = [37, 74, 999_999, 22_200]
        try mixed.prove(touched, rows: batched.fetch(mixed.wanted(touched)))
        mixed.set(37, leaf: ItemTree.absent)
        mixed.set(74, leaf: leaf(74, 3))
        mixed.set(999_999, leaf: leaf(999_999))
        mixed.set(999_999, leaf: leaf(999_999, 4))
        XCTAssertEqual(mixed.leaf(74), leaf(74, 3), "a change is read back before the commit")
        let (root, _) = try mixed.commit()
        try single.write([37: ItemTree.absent])
        try single.write([74: leaf(74, 3)])
        try single.write([999_999: leaf(999_999, 4)])
        XCTAssertEqual(root, single.root)
    }

    func testAProofFailsOnAMissingAlteredSwappedOrMisplacedNode() throws {
        var server = Server()
        try server.write([1: leaf(1), 2: leaf(2), 300: leaf(300)])
        let bottom = ItemTree.key(level: ItemTree.depth - 1, id: 1)
        var altered = server
        altered.rows[bottom]![40] ^= 1
        XCTAssertThrowsError(try altered.read(1)) { XCTAssertEqual($0 as? ItemTree.Failure, .altered(level: ItemTree.depth - 1)) }
        var swapped = server
        // Items 1 and 2 are children 1 and 2 of the same bottom node.
        let node = server.rows[bottom]!
        swapped.rows[bottom] = Array(node[0..<32] + node[64..<96] + node[32..<64] + node[96...])
        XCTAssertThrowsError(try swapped.read(2)) { XCTAssertEqual($0 as? ItemTree.Failure, .altered(level: ItemTree.depth - 1)) }
        var missing = server
        missing.rows[ItemTree.key(level: 3, id: 1)] = nil
        XCTAssertThrowsError(try missing.read(1)) { XCTAssertEqual($0 as? ItemTree.Failure, .missing(level: 3)) }
        var short = server
        short.rows[ItemTree.key(level: 0, id: 1)]!.removeLast()
        XCTAssertThrowsError(try short.read(300)) { XCTAssertEqual($0 as? ItemTree.Failure, .altered(level: 0)) }
        // A node copied to another key: bound to its place by its parent (and its level by its hash).
        var moved = server
        moved.rows[ItemTree.key(level: ItemTree.depth - 1, id: 300)] = server.rows[bottom]
        XCTAssertThrowsError(try moved.read(300)) { XCTAssertEqual($0 as? ItemTree.Failure, .altered(level: ItemTree.depth - 1)) }
        // A leaf moved to another slot is not the leaf of that id.
        XCTAssertNotEqual(try server.read(2), leaf(1))
    }

    func testAChangeWhosePathWasNotProvenIsNotCommitted() throws {
        var server = Server()
        try server.write([1: leaf(1)])
        var tree = ItemTree(root: server.root)
        tree.set(2, leaf: leaf(2))
        XCTAssertThrowsError(try tree.commit()) { XCTAssertEqual($0 as? ItemTree.Failure, .unproven(id: 2)) }
    }

    func testKeysAndSlotsFollowTheIDsNibbles() {
        XCTAssertEqual(ItemTree.key(level: 0, id: 0x12_3456_789a), 0)
        XCTAssertEqual(ItemTree.key(level: 9, id: 0x12_3456_789a), 9 << 40 | 0x12_3456_789)
        XCTAssertEqual(ItemTree.slot(level: 0, id: 0x12_3456_789a), 1)
        XCTAssertEqual(ItemTree.slot(level: 9, id: 0x12_3456_789a), 0xa)
        XCTAssertTrue(ItemTree.covers(ItemTree.maximumID))
        XCTAssertFalse(ItemTree.covers(ItemTree.maximumID + 1))
        XCTAssertFalse(ItemTree.covers(-1))
    }
}
