import LocketCore
import LocketSupport

/// The authenticated map of a remote keychain's items (docs/REMOTE.md
/// "Freshness"): a 16-ary Merkle tree keyed by item id, whose root the
/// signed state carries. A leaf is what the state vouches for of one item,
/// its (id, reference, version hash); a node is its 16 children's hashes,
/// an absent child the all-zero marker. A node whose children are all absent
/// is absent itself (no row, the marker in its parent), so one set of items
/// has one tree. Ten levels cover ids below 2^40; a proof is the ten nodes
/// on an id's path, whatever the number of items.
///
/// Pure: the nodes come from and go to the server through RemoteStore+Tree.
/// This value holds the nodes it has verified from the root down, and the
/// leaves changed in the transaction until `commit` folds them in.
struct ItemTree {
    static let depth = 10
    static let fanout = 16
    static let hashBytes = 32
    static let nodeBytes = fanout * hashBytes
    /// The largest id the tree covers: 4 bits per level.
    static let maximumID: Int64 = (1 << (4 * Int64(depth))) - 1
    /// An absent child, leaf or subtree; the root of an empty keychain.
    static let absent = [UInt8](repeating: 0, count: hashBytes)

    /// Why a proof failed: the node at `level` on a path is missing or not the one its parent names.
    enum Failure: Error, Equatable {
        case missing(level: Int)
        case altered(level: Int)
        case unproven(id: Int64)
    }

    /// The root this tree is verified against, or was last committed to.
    private(set) var root: [UInt8]
    /// Nodes verified from `root` down, by key.
    private var nodes: [Int64: [UInt8]] = [:]
    /// Leaves changed since the last commit, by id (`absent`: removed).
    private var changed: [Int64: [UInt8]] = [:]

    init(root: [UInt8]) { self.root = root }

    static func covers(_ id: Int64) -> Bool { id >= 0 && id <= maximumID }

    /// The key of the node at `level` (0: the root) on `id`'s path: the level and the id's leading 4·level bits.
    static func key(level: Int, id: Int64) -> Int64 { Int64(level) << 40 | id >> (4 * Int64(depth - level)) }

    /// Which child of its level's node `id`'s path goes through.
    static func slot(level: Int, id: Int64) -> Int { Int(id >> (4 * Int64(depth - 1 - level)) & 15) }

    static func leaf(id: Int64, ref: [UInt8], version: [UInt8]) -> [UInt8] {
        DeviceSigning.hash("locket.remote.item-leaf.v1", [BigEndian.bytes(id), ref, version])
    }

    /// A node's hash, bound to its level; `absent` when every child is.
    static func hash(level: Int, _ node: [UInt8]) -> [UInt8] {
        if node.allSatisfy({ $0 == 0 }) { return absent }
        return DeviceSigning.hash("locket.remote.item-node.v1", [BigEndian.bytes(Int64(level)), node])
    }

    private static func child(_ node: [UInt8], _ slot: Int) -> [UInt8] {
        Array(node[slot * hashBytes..<(slot + 1) * hashBytes])
    }

    /// The leaf at `id` as the root vouches for it, before this transaction's
    /// changes (`absent`: no such item); nil while its path is not verified.
    func provenLeaf(_ id: Int64) -> [UInt8]? {
        var expected = root
        for level in 0..<Self.depth {
            if expected == Self.absent { return expected }
            guard let node = nodes[Self.key(level: level, id: id)] else { return nil }
            expected = Self.child(node, Self.slot(level: level, id: id))
        }
        return expected
    }

    /// The leaf at `id` with this transaction's changes; nil while unproven.
    func leaf(_ id: Int64) -> [UInt8]? { changed[id] ?? provenLeaf(id) }

    /// The keys of the nodes `ids`' paths need that are not verified yet.
    func wanted(_ ids: some Sequence<Int64>) -> [Int64] {
        var keys: Set<Int64> = []
        for id in ids {
            var expected = root
            for level in 0..<Self.depth {
                if expected == Self.absent { break }
                let key = Self.key(level: level, id: id)
                guard let node = nodes[key] else {
                    for deeper in level..<Self.depth { keys.insert(Self.key(level: deeper, id: id)) }
                    break
                }
                expected = Self.child(node, Self.slot(level: level, id: id))
            }
        }
        return keys.sorted()
    }

    /// Verifies the paths of `ids` from the root down through `rows` (node
    /// rows by key, as the server gave them) and keeps the nodes verified.
    /// A node a path needs that is not there, or not the one its parent names, fails.
    mutating func prove(_ ids: some Sequence<Int64>, rows: [Int64: [UInt8]]) throws(Failure) {
        for id in ids {
            var expected = root
            for level in 0..<Self.depth {
                if expected == Self.absent { break }
                let key = Self.key(level: level, id: id)
                if nodes[key] == nil {
                    guard let row = rows[key] else { throw .missing(level: level) }
                    guard row.count == Self.nodeBytes, Self.hash(level: level, row) == expected else { throw .altered(level: level) }
                    nodes[key] = row
                }
                expected = Self.child(nodes[key]!, Self.slot(level: level, id: id))
            }
        }
    }

    /// Sets the leaf at `id` (`absent` removes it); its path is verified before `commit`.
    mutating func set(_ id: Int64, leaf: [UInt8]) { changed[id] = leaf }

    var hasChanges: Bool { !changed.isEmpty }

    /// The ids changed since the last commit.
    var changedIDs: [Int64] { changed.keys.sorted() }

    /// Folds the changed leaves in, bottom up: the new root and the node rows
    /// to write, by key (nil: the node is absent now, its row deleted).
    /// Every changed id's path must be verified.
    mutating func commit() throws(Failure) -> (root: [UInt8], writes: [Int64: [UInt8]?]) {
        for id in changed.keys where provenLeaf(id) == nil { throw .unproven(id: id) }
        var writes: [Int64: [UInt8]?] = [:]
        // The new hashes of the level below, by their prefix (the ids at the bottom).
        var below = changed
        for level in stride(from: Self.depth - 1, through: 0, by: -1) {
            var grouped: [Int64: [(slot: Int, hash: [UInt8])]] = [:]
            for (prefix, hash) in below { grouped[prefix >> 4, default: []].append((Int(prefix & 15), hash)) }
            var hashes: [Int64: [UInt8]] = [:]
            for (prefix, slots) in grouped {
                let key = Int64(level) << 40 | prefix
                var node = nodes[key] ?? [UInt8](repeating: 0, count: Self.nodeBytes)
                for (slot, hash) in slots { node.replaceSubrange(slot * Self.hashBytes..<(slot + 1) * Self.hashBytes, with: hash) }
                let hash = Self.hash(level: level, node)
                if hash == Self.absent {
                    if nodes.removeValue(forKey: key) != nil { writes[key] = .some(nil) }
                } else if nodes[key] != node {
                    nodes[key] = node
                    writes[key] = node
                }
                hashes[prefix] = hash
            }
            below = hashes
        }
        if let top = below[0] { root = top }
        changed = [:]
        return (root, writes)
    }
}
