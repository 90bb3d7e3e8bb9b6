import LocketSupport

/// SecItemCopyMatching and dump: finding rows and opening them.
extension Keychain {
    /// Finds items (SecItemCopyMatching): at most one unless `limit` says otherwise.
    public func search(_ query: Query, limit: MatchLimit = .one, returnData: Bool = false) throws -> [Item] {
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let found = try transaction(write: false) { () throws -> [Item] in
            try refreshFormat()
            return try lookUp(query, limit: limit, returnData: returnData)
        }
        if found.isEmpty { throw miss() }
        return found
    }

    /// Each query's items, as `search` would find or refuse them. In a file
    /// keychain all are looked up in one transaction: one opening of the
    /// file and one parse of its schema for all of them, where a call per
    /// query pays both every time (about 0.47 M instructions each); `exec`
    /// and `inject` resolve their references this way before anything
    /// starts. A query's own failure is its result. A remote keychain runs
    /// `search` per query, so that its transaction's retry and its lost
    /// connections are handled as they are for one.
    public func search(_ queries: [Query], limit: MatchLimit = .one, returnData: Bool = false) throws -> [Result<[Item], KeychainError>] {
        func result(_ body: () throws -> [Item]) throws -> Result<[Item], KeychainError> {
            do { return .success(try body()) } catch let error as KeychainError { return .failure(error) }
        }
        guard !isRemote else { return try queries.map { query in try result { try search(query, limit: limit, returnData: returnData) } } }
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let found = try transaction(write: false) { () throws -> [Result<[Item], KeychainError>] in
            try refreshFormat()
            return try queries.map { query in try result { try lookUp(query, limit: limit, returnData: returnData) } }
        }
        return found.map { looked in
            if case .success(let items) = looked, items.isEmpty { return .failure(miss()) }
            return looked
        }
    }

    /// What `search` reports when nothing matched. Offline, a miss is not
    /// an answer: the server may hold the item (or it is not after-first-unlock).
    private func miss() -> KeychainError {
        if let remote, remote.offline != nil {
            return KeychainError(.notAvailable, "\(remote.location.url) is unreachable and no after-first-unlock item in its offline cache matches")
        }
        return KeychainError(.itemNotFound)
    }

    /// One query's rows, inside the transaction `search` runs.
    private func lookUp(_ query: Query, limit: MatchLimit, returnData: Bool) throws -> [Item] {
        do {
            if returnData && query.itemClass == .key { try refuseNonExtractable(query, limit: limit) }
            let found = try rows(query, limit: limit, data: returnData)
            if found.isEmpty { try checkKeysCurrent() }
            if returnData, let remote { try remote.audit(found.map(\.persistentRef), "read") }
            return found
        } catch let error as KeychainError where error.code == .decode {
            try checkKeysCurrent()
            throw error
        }
    }

    /// The store filter of a query: the groups the caller may touch, and
    /// the blind index of each attribute equality.
    func storeFilter(_ query: Query) throws -> ItemFilter {
        var filter = try self.filter(query)
        guard !query.attributes.isEmpty else { return filter }
        let indexKey = try indexKey()
        filter.terms = query.attributes.map { attribute, value in
            ItemFilter.Term(attribute: attribute, digest: Sealing.indexDigest(indexKey, query.itemClass, attribute, value),
                                  isEmpty: value.isEmpty)
        }
        let given = Dictionary(query.attributes, uniquingKeysWith: { first, _ in first })
        if query.itemClass.primaryKey.allSatisfy({ given[$0] != nil }) {
            filter.primaryKey = Sealing.primaryKeyDigest(indexKey, query.itemClass, given)
        }
        return filter
    }

    /// Matching items in stable order (oldest first). A match whose class key
    /// is unavailable fails the whole search with errSecInteractionNotAllowed:
    /// a locked item is never reported as missing.
    func rows(_ query: Query, limit: MatchLimit, data: Bool) throws -> [Item] {
        switch backend {
        case .file(let database): try rows(query, limit: limit, data: data, in: ItemStore(database: database, format: format))
        case .remote(let remote): try rows(query, limit: limit, data: data, in: remote.items)
        }
    }

    private func rows<Store: ItemStoring>(_ query: Query, limit: MatchLimit, data: Bool, in store: Store) throws -> [Item] {
        let cursor = try store.select(try storeFilter(query), data: data)
        var found: [Item] = []
        let wanted = limit.sqlLimit
        while let row = try cursor.next() {
            guard let item = try open(row, itemClass: query.itemClass, data: data, strict: true) else { continue }
            // The digests matched; confirm byte for byte now that the values are open.
            guard query.attributes.allSatisfy({ item[$0.0] == $0.1 }) else { continue }
            found.append(item)
            if wanted >= 0 && found.count >= wanted { break }
        }
        return found
    }

    /// Opens a selected row. With `strict`, an unavailable key or damaged
    /// value throws; otherwise the item comes back with its availability set
    /// and no attributes.
    /// With `keepingAccessData`, the secret of an item with access control is
    /// left closed (an update re-seals around it without a proof).
    func open(_ stored: some StoredItemRow, itemClass: ItemClass, data: Bool, strict: Bool, keepingAccessData: Bool = false) throws -> Item? {
        let id = stored.id
        let ref = stored.ref
        let group = stored.accessGroup
        guard let pclass = ProtectionClass(rawValue: stored.protectionClassCode) else {
            if strict { throw KeychainError(.decode, "an item has an unknown protection class") }
            return Item(itemClass: itemClass, attributes: [:], accessGroup: group, accessible: .whenUnlocked,
                        persistentRef: ref, creationDate: 0, modificationDate: 0, data: nil, availability: .damaged)
        }
        let row = Sealing.RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: group, ref: ref)
        var item = Item(itemClass: itemClass, attributes: [:], accessGroup: group, accessible: pclass,
                        persistentRef: ref, creationDate: 0, modificationDate: 0, data: nil,
                        availability: availability(of: pclass, group: group, id: id))
        guard item.availability == .available else {
            if strict { throw unavailable(pclass, group, id: id) }
            return item
        }
        do {
            let opened = try stored.withAttributes { try SecretBox.open($0, key: try fieldKey(row, .attributes), what: "an item's attributes") }
            let record = try ItemRecord.decode(opened)
            item.attributes = record.attributes
            item.creationDate = record.created
            item.modificationDate = record.modified
            let access = try record.access.map { try ItemAccess(encoded: $0, protection: pclass) }
            item.accessControl = access?.control
            item.access = access
            if let access, isInvalidated(access) { item.availability = .invalidated }
            // A dump never asks for proofs: the secrets of items with access control stay out of it.
            if data && (access == nil || (strict && !keepingAccessData)) {
                let key = try access.map { try openAccess($0, row, label: Keychain.label(item.attributes)) } ?? fieldKey(row, .data)
                let record: SecureBytes
                do {
                    record = try stored.withData { try SecretBox.open($0, key: key, what: "an item's secret") }
                } catch let error as KeychainError where error.code == .decode && access?.applicationKDF != nil {
                    throw KeychainError(.authFailed, "the application password is not correct")
                }
                (item.data, item.extra) = try DataRecord.decode(record)
            }
        } catch let error as KeychainError where error.code == .decode {
            if strict {
                throw KeychainError(.decode, "an item (ref \(Hex.encode(ref))) could not be opened: it was altered or moved")
            }
            item.attributes = [:]
            item.availability = .damaged
        }
        return item
    }

    /// Streams every item, oldest first. Items that cannot be opened come with
    /// their availability set. With `returnData`, a locked class with items
    /// fails the dump up front (errSecInteractionNotAllowed) before anything is streamed.
    public func dump(returnData: Bool, _ body: (Item) throws -> Void) throws {
        try transaction(write: false) {
            try refreshFormat()
            try checkKeysCurrent()
            let visible = ItemFilter(visibleGroups: caller.accessGroups)
            if returnData {
                // Fail before streaming anything: every (class, group) present must open.
                for (code, group) in try itemStore.classesAndGroups(visible) {
                    guard let pclass = ProtectionClass(rawValue: code) else { continue }
                    if let remote, try !remote.holdsKey(group) { continue }
                    if availability(of: pclass, group: group) == .locked { throw unavailable(pclass, group) }
                }
            }
            let cursor = try itemStore.select(visible, data: returnData)
            while let row = try cursor.next() {
                guard let itemClass = row.itemClass else { continue }
                // A device's view of a remote keychain leaves out the groups it holds no key for (docs/REMOTE.md).
                if let remote, try !remote.holdsKey(row.accessGroup) { continue }
                guard var item = try open(row, itemClass: itemClass, data: returnData, strict: false) else { continue }
                // A non-extractable key is listed without its value (SPEC §12).
                if !item.isExtractable { item.data = nil }
                if item.data != nil, let remote { try remote.audit([item.persistentRef], "read") }
                try body(item)
            }
        }
    }
}
