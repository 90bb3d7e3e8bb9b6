/// The keyed digests stored beside an item's sealed values (SPEC §7): what
/// lets a query find it without the store seeing a name. No secret: keyed hashes.
package struct ItemDigests {
    /// The digest of the primary key (unique per class and group).
    package var primaryKey: [UInt8]
    /// The blind index of each attribute of the item's class, the empty
    /// value included, in the class's order. An array, not a dictionary:
    /// hashing attributes into one was a visible part of an import.
    package var index: [IndexDigest]
    /// The free-form pairs' blind indexes (SPEC §18): format 2 rows only.
    package var free: [Int64] = []

    /// One attribute's blind index.
    package struct IndexDigest {
        var attribute: Attribute
        package var digest: Int64
        /// The value is empty (format 1 stores no digest for it).
        var isEmpty: Bool
    }

    /// The blind index of `attribute`, nil when the class has none.
    func digest(of attribute: Attribute) -> IndexDigest? { index.first { $0.attribute == attribute } }
}
