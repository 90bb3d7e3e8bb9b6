import LocketCore
import LocketSupport

/// Schema 2 to 3 (docs/REMOTE.md "Upgrading"): a keychain made by the
/// release of issue 28 signs a root over every item (`SignedState.root`);
/// this one signs the root of the item tree. The first transaction of an
/// approved device checks the old root against every item, builds the tree,
/// signs a state whose root is the tree's and records version 3, all in one
/// transaction: two devices upgrading at once meet on the state they both
/// insert, and the one retried finds version 3. Until then a device that is
/// not approved, which could sign nothing, is refused with what to do.
extension RemoteStore {
    /// Items read per statement by the upgrade (a test makes it small).
    nonisolated(unsafe) static var upgradePage = 20_000

    /// In the transaction's verification, after the state chain: `state` is the newest, verified.
    func upgradeTree(_ state: SignedState) throws {
        let found = try execute("SELECT value FROM locket.meta WHERE name = 'schema'", []).first?[0].bytes
        if let found, found.count == 4, found.reduce(0, { $0 << 8 | Int32($1) }) >= 3 {
            // Another device upgraded it since this store opened.
            itemTree = ItemTree(root: state.root)
            upgradedTree = true
            return
        }
        guard let device, let roster = verifiedRoster, roster.roster.isApproved(device.id), let keychainID else {
            throw KeychainError(.invalidKeychain, """
                \(location.url) has remote schema version 2, which the first command of an approved device running this locket \
                upgrades: until then use it from an approved device, or with the earlier release
                """)
        }
        var items: [(id: Int64, ref: [UInt8], version: [UInt8])] = []
        // A page at a time: every item in one answer would pass the helper's
        // frame limit (17 MB) above about 150,000 items.
        while true {
            let rows = try execute("SELECT id, ref, vh FROM locket.items WHERE id > $1 ORDER BY id LIMIT $2",
                                   [.int(items.last?.id ?? Int64.min), .int(Int64(Self.upgradePage))])
            for row in rows {
                guard let id = row[0].int, let ref = row[1].bytes, let version = row[2].bytes else {
                    throw KeychainError(.decode, "an item of \(location.url) has no version hash: the database was altered")
                }
                // Each page strictly after the last: a server that answers otherwise can't keep the upgrade reading.
                guard id > items.last?.id ?? Int64.min else {
                    throw KeychainError(.decode, "\(location.url) gave its items out of order: the database was altered")
                }
                items.append((id, ref, version))
            }
            if rows.count < Self.upgradePage { break }
        }
        guard SignedState.root(items) == state.root else {
            throw KeychainError(.decode, "the items in \(location.url) are not those of its signed state \(state.sequence) (rows put back, added or removed): the database was altered")
        }
        var tree = ItemTree(root: ItemTree.absent)
        for item in items {
            guard ItemTree.covers(item.id) else { throw beyondTree(item.id) }
            tree.set(item.id, leaf: ItemTree.leaf(id: item.id, ref: item.ref, version: item.version))
        }
        let (root, writes): ([UInt8], [Int64: [UInt8]?])
        do { (root, writes) = try tree.commit() } catch { throw treeAltered(error) }
        // Rows someone put there before are no node of this tree.
        try execute("DELETE FROM locket.nodes", [])
        try writeNodes(writes)
        let next = try SignedState.sign(after: state, keychainID: keychainID, rosterEpoch: roster.roster.epoch, root: root, by: device)
        try insertState(next)
        try execute("UPDATE locket.meta SET value = int4send($1::int4) WHERE name = 'schema'", [.int(Int64(RemoteSchema.version))])
        verifiedState = next
        itemTree = tree
        upgradedTree = true
    }
}
