import LocketCore
import LocketSupport

/// The item tree (`ItemTree`) in the database, table `locket.nodes`: each
/// row a node, 16 hashes of 32 bytes. A transaction proves the rows it reads
/// through their paths (the nodes of all of them in one statement) against
/// the signed root it verified, and at its end folds what it wrote into the
/// tree, writes the nodes up those paths and signs the new root
/// (docs/REMOTE.md "Freshness"). Nothing here reads every item, except the
/// one-time upgrade of a keychain of schema 2 (`upgradeTree`).
extension RemoteStore {
    /// What a change found at its id before: an insert finds nothing there, an update the item it read.
    enum Expectation { case absent, present, any }

    /// Verifies the paths of `ids` not yet verified in this transaction, their
    /// nodes read in one statement. An id beyond the tree has no path: no
    /// signed state holds it (`checkVersion` refuses its row).
    func prove(_ ids: [Int64]) throws {
        guard let tree = itemTree else { return }
        let ids = ids.filter(ItemTree.covers)
        let keys = tree.wanted(ids)
        guard !keys.isEmpty else { return }
        var rows: [Int64: [UInt8]] = [:]
        for row in try execute("SELECT node, hashes FROM locket.nodes WHERE node = ANY($1::text::bigint[])", [Self.intArray(keys)]) {
            if let key = row[0].int, let hashes = row[1].bytes { rows[key] = hashes }
        }
        do { try itemTree?.prove(ids, rows: rows) } catch { throw treeAltered(error) }
    }

    /// A row read must be the version the signed state holds for its id.
    func checkVersion(id: Int64, ref: [UInt8], primaryKey: [UInt8], attributes: [UInt8], dataHash: [UInt8]) throws {
        guard itemTree != nil else { return }
        if ItemTree.covers(id), itemTree?.leaf(id) == nil { try prove([id]) }
        let version = SignedState.version(primaryKey: primaryKey, attributes: attributes, dataHash: dataHash)
        guard let leaf = itemTree?.leaf(id), leaf != ItemTree.absent, leaf == ItemTree.leaf(id: id, ref: ref, version: version) else {
            throw KeychainError(.decode, "an item of \(location.url) is not the version its signed state holds (an older or foreign row): the database was altered")
        }
    }

    /// An item this transaction inserted (`inserted`) or updated: its version
    /// is trusted from here on. `recorded`: in the journal of what this device
    /// wrote (not an item a revocation only re-sealed).
    func wrote(id: Int64, ref: [UInt8], version: [UInt8], inserted: Bool, recorded: Bool = true) throws {
        if recorded { writtenRefs.append(ref) }
        guard itemTree != nil else { return }
        guard ItemTree.covers(id) else { throw beyondTree(id) }
        if expectations[id] == nil { expectations[id] = inserted ? .absent : .present }
        itemTree?.set(id, leaf: ItemTree.leaf(id: id, ref: ref, version: version))
        changedItems = true
    }

    /// Items this transaction deleted (`refs`: theirs, for the journal).
    func removed(_ ids: [Int64], refs: [[UInt8]]) {
        writtenRefs += refs
        if !ids.isEmpty { changedItems = true }
        guard itemTree != nil else { return }
        for id in ids where ItemTree.covers(id) {
            if expectations[id] == nil { expectations[id] = .any }
            itemTree?.set(id, leaf: ItemTree.absent)
        }
    }

    /// The root after this transaction's changes, their nodes written: each
    /// changed id's old path verified first (nothing there for an insert).
    func commitTree() throws -> [UInt8] {
        guard let changed = itemTree?.changedIDs else { throw KeychainError(.io, "the item tree was not read") }
        if changed.isEmpty { return itemTree!.root }
        try prove(changed)
        var tree = itemTree!
        for (id, expectation) in expectations {
            let old = tree.provenLeaf(id) ?? ItemTree.absent
            switch expectation {
            case .absent where old != ItemTree.absent:
                throw KeychainError(.decode, "\(location.url) gave a new item the id \(id), which its signed state already holds: the database was altered")
            case .present where old == ItemTree.absent:
                throw KeychainError(.decode, "an item of \(location.url) is not the version its signed state holds (an older or foreign row): the database was altered")
            default: break
            }
        }
        let (root, writes): ([UInt8], [Int64: [UInt8]?])
        do { (root, writes) = try tree.commit() } catch { throw treeAltered(error) }
        try writeNodes(writes)
        itemTree = tree
        expectations = [:]
        return root
    }

    /// Node rows written and deleted, a few thousand per statement. An upsert
    /// two writers race on is a serialization failure (retried), never a unique violation.
    func writeNodes(_ writes: [Int64: [UInt8]?]) throws {
        let upserts = writes.compactMap { key, node in node.map { (key, $0) } }.sorted { $0.0 < $1.0 }
        var start = 0
        while start < upserts.count {
            let chunk = upserts[start..<min(start + 4096, upserts.count)]
            try execute("""
                INSERT INTO locket.nodes(node, hashes) SELECT k, decode(h, 'hex') FROM unnest($1::text::bigint[], $2::text::text[]) AS t(k, h)
                ON CONFLICT (node) DO UPDATE SET hashes = excluded.hashes
                """, [Self.intArray(chunk.map(\.0)), .text("{" + chunk.map { Hex.encode($0.1) }.joined(separator: ",") + "}")])
            start += chunk.count
        }
        let deletes = writes.compactMap { key, node in node == nil ? key : nil }.sorted()
        if !deletes.isEmpty {
            try execute("DELETE FROM locket.nodes WHERE node = ANY($1::text::bigint[])", [Self.intArray(deletes)])
        }
    }

    static func intArray(_ values: some Sequence<Int64>) -> RemoteValue {
        .text("{" + values.map(String.init).joined(separator: ",") + "}")
    }

    func treeAltered(_ error: Error) -> KeychainError {
        if case ItemTree.Failure.unproven(let id)? = error as? ItemTree.Failure {
            return KeychainError(.io, "the path of item \(id) in \(location.url)'s item tree was not verified before its change")
        }
        return KeychainError(.decode, "\(location.url)'s item tree is not the one its signed state names (a node altered, put back or removed): the database was altered")
    }

    func beyondTree(_ id: Int64) -> KeychainError {
        KeychainError(.io, "\(location.url) has reached item id \(id), beyond the \(ItemTree.maximumID) its item tree covers: dump its items and add them to a new keychain")
    }
}
