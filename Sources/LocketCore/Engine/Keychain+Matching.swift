import LocketSupport

/// A search that reports locked matches rather than failing on them (SPEC
/// §18: the Secret Service lists locked items apart from unlocked ones).
extension Keychain {
    /// Every item `query` matches, oldest first, each with its availability:
    /// an available item is opened (attributes, no secret) and compared byte
    /// for byte; a locked (or otherwise unavailable) one is matched by its
    /// blind indexes alone, as `delete` matches, and comes without
    /// attributes. Nothing matched: an empty array, not errSecItemNotFound.
    ///
    /// With `opening` false, a query of no attribute (every item the caller
    /// may see) opens nothing: the items come with their reference, class,
    /// group and availability only (a listing of 10,000 items then holds no
    /// 10,000 attribute sets at once).
    public func matching(_ query: Query, opening: Bool = true) throws -> [Item] {
        var found: [Item] = []
        try forEachMatch(query, opening: opening) { found.append($0) }
        return found
    }

    /// `matching`, one item at a time: memory stays flat however many match.
    public func forEachMatch(_ query: Query, opening: Bool = true, _ body: (Item) throws -> Void) throws {
        try engine.transaction(write: false) {
            let scan = RowScan(query, filter: try engine.storeFilter(query), data: false, strict: false)
            scan.opening = opening || !query.attributes.isEmpty || query.hasFreeForm
            try engine.scan(scan) { match in
                try body(match.item)
                return true
            }
        }
    }
}
