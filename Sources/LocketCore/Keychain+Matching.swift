/// A search that reports locked matches rather than failing on them (SPEC
/// §18: the Secret Service lists locked items apart from unlocked ones).
extension Keychain {
    /// Every item `query` matches, oldest first, each with its availability:
    /// an available item is opened (attributes, no secret) and compared byte
    /// for byte; a locked (or otherwise unavailable) one is matched by its
    /// blind indexes alone, as `delete` matches, and comes without
    /// attributes. Nothing matched: an empty array, not errSecItemNotFound.
    public func matching(_ query: Query) throws -> [Item] {
        try transaction(write: false) {
            try refreshFormat()
            let cursor = try itemStore.select(try storeFilter(query), data: false)
            var found: [Item] = []
            while let row = try cursor.next() {
                guard let item = try open(row, itemClass: query.itemClass, data: false, strict: false) else { continue }
                if item.availability == .available {
                    guard query.attributes.allSatisfy({ item[$0.0] == $0.1 }), query.matchesFreeForm(item) else { continue }
                }
                found.append(item)
            }
            return found
        }
    }
}
