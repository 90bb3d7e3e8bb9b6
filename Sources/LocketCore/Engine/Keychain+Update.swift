import LocketSupport

/// SecItemUpdate and SecItemDelete.
extension Keychain {
    /// Changes every match (SecItemUpdate), all or nothing. `changes` maps
    /// sealed attributes to new values; `accessGroup` moves the items to that
    /// group. As everywhere in the API, the access group is its own
    /// `accessGroup` value; `.accessGroup` in `changes` means the same.
    /// `.accessible` in `changes` moves the items to that protection class:
    /// each is sealed again under the new class's key in the same
    /// transaction (errSecInteractionNotAllowed when that key is not
    /// available), as SecItemUpdate does (SPEC §4). `.synchronizable` is
    /// Apple's attribute, part of the primary key like the others.
    /// `givenAsBytes` names the changed string attributes given as bytes
    /// (the Security module's CFData), so that they read back as bytes.
    /// `freeForm` replaces the matches' free-form attributes whole (the
    /// Secret Service's Attributes); `freeFormEdit` sets and removes some,
    /// keeping each match's others (`locket update --set-attr`).
    @discardableResult
    public func update(_ query: Query, changes: [Attribute: [UInt8]], accessGroup: String? = nil, data: SecureBytes? = nil,
                       extra: SecureBytes? = nil, freeForm: FreeForm? = nil, freeFormEdit: FreeFormEdit? = nil,
                       givenAsBytes: Set<Attribute> = []) throws -> Int {
        if let data { try checkSize(data) }
        if let freeForm { try checkFreeForm(freeForm) }
        if let freeFormEdit, !freeFormEdit.isEmpty {
            guard query.itemClass == .genericPassword else {
                throw KeychainError(.noSuchAttr, "\(query.itemClass.name) items have no free-form attributes")
            }
            // What the edit leaves must be storable; each match is checked again once edited.
            try checkFreeForm(try freeFormEdit.applied(to: FreeForm()))
            if freeForm != nil { throw KeychainError(.param, "free-form attributes are replaced or edited, not both") }
        }
        var changes = changes
        let newClass = try changes.removeValue(forKey: .accessible).map { try ProtectionClass(parsing: String(decoding: $0, as: UTF8.self)) }
        if let newClass { try checkPlacement(newClass) }
        if let value = changes[.synchronizable] { changes[.synchronizable] = value == [0x31] ? value : [] }
        var group = accessGroup
        if let named = changes.removeValue(forKey: .accessGroup) {
            let text = String(decoding: named, as: UTF8.self)
            if let group, group != text { throw KeychainError(.param, "two different access groups to move to") }
            group = text
        }
        for attribute in changes.keys where !query.itemClass.supports(attribute) {
            throw Query.foreign(attribute, query.itemClass)
        }
        for attribute in changes.keys where !query.itemClass.isUpdatable(attribute) {
            let why = attribute == .extractable ? "is set when the key is added" : "is derived from its value"
            throw KeychainError(.readOnlyAttr, "the \(attribute.longName) (\(attribute.code)) of a \(query.itemClass.name) \(why): it can't be changed")
        }
        if data != nil && query.itemClass.holdsKeyMaterial {
            throw KeychainError(.param, "the value of a \(query.itemClass.name) can't be replaced (delete it and import the new one)")
        }
        if let group { try authorize(group) }
        return try write {
            try modify(query, changes: changes, accessGroup: group, accessible: newClass, data: data, extra: extra, freeForm: freeForm,
                       freeFormEdit: freeFormEdit?.isEmpty == false ? freeFormEdit : nil, givenAsBytes: givenAsBytes).count
        }
    }

    /// The body of update, inside the caller's transaction.
    /// A new `data` replaces the secret and its metadata (`extra`) together;
    /// a `freeForm` replaces the items' free-form attributes and content type
    /// (an item's uniqueness stays what it was made with); `newClass`
    /// re-seals the items under another protection class.
    /// `filter`, when given, selects the rows instead of the query's own (`primaryKeyFilter`).
    func modify(_ query: Query, changes: [Attribute: [UInt8]], accessGroup newGroup: String?, accessible newClass: ProtectionClass? = nil,
                data: SecureBytes?, extra: SecureBytes?, freeForm: FreeForm? = nil, freeFormEdit: FreeFormEdit? = nil,
                givenAsBytes: Set<Attribute> = [], filter: ItemFilter? = nil) throws -> [Item] {
        // Re-sealing under a new group needs the old secret open as well.
        let scan = RowScan(query, filter: try filter ?? storeFilter(query), data: newGroup != nil || data == nil)
        // The secret of an item with access control is sealed under its own
        // key, not the group's: it is kept as it is unless replaced.
        scan.keepingAccessData = true
        var matches: [(Int64, Item, sealedData: [UInt8]?)] = []
        try self.scan(scan) { match in
            matches.append((match.id, match.item, data == nil ? match.sealedData : nil))
            return true
        }
        guard !matches.isEmpty else { throw KeychainError(.itemNotFound) }
        let updater = try storage.itemStore.makeUpdater()
        let now = environment.time.milliseconds()
        var updated: [Item] = []
        for (id, var item, sealedData) in matches {
            for (attribute, value) in changes { item[attribute] = value }
            if changes[.valueTypes] == nil {
                item[.valueTypes] = ValueTypes.updating(item[.valueTypes], changed: changes.keys, givenAsBytes: givenAsBytes)
            }
            if let newGroup { item.accessGroup = newGroup }
            if let newClass, newClass != item.accessible {
                // Its access control names its class and seals its secret under it (SPEC §14): it is set at add.
                guard item.accessControl == nil else {
                    throw KeychainError(.param, "the protection class of an item with access control is its access control's: it can't be changed")
                }
                item.accessible = newClass
            }
            if let freeForm {
                let unique = item.freeForm.uniqueByReference
                item.freeForm = freeForm
                item.freeForm.uniqueByReference = unique
            }
            if let freeFormEdit { item.freeForm = try freeFormEdit.applied(to: item.freeForm) }
            item.modificationDate = now
            let row = Sealing.RowIdentity(itemClass: item.itemClass, accessible: item.accessible, accessGroup: item.accessGroup,
                                          ref: item.persistentRef)
            var access = item.access
            var sealed = sealedData
            if sealed == nil {
                guard let secret = data ?? item.data else { throw KeychainError(.decode, "an item's secret could not be opened") }
                let dataRecord = try DataRecord.encode(secret: secret, extra: data != nil ? extra : item.extra)
                var dataKey = try fieldKey(row, .data)
                if let control = item.accessControl {
                    (access, dataKey) = try sealAccess(control, row, label: Keychain.label(item.attributes),
                                                       publicHalf: Keychain.publicHalf(item.itemClass, item.attributes, secret))
                }
                sealed = SecretBox.seal(dataRecord, key: dataKey)
            }
            var record = ItemRecord.encode(item.attributes, created: item.creationDate, modified: now, access: access?.encoded,
                                           freeForm: item.freeForm)
            defer { wipe(&record) }
            try updater.update(id: id, group: item.accessGroup, accessible: item.accessible,
                               digests: Sealing.digests(try indexKey(), item.itemClass, item.attributes, item.freeForm, ref: item.persistentRef),
                               attributes: SecretBox.seal(record, key: try fieldKey(row, .attributes)),
                               data: sealed!)
            item.data = nil
            item.extra = nil
            updated.append(item)
        }
        return updated
    }

    /// Deletes every match (SecItemDelete). Works while locked: it needs only
    /// digests, never an open value, so a read failure can never cause it.
    @discardableResult
    public func delete(_ query: Query) throws -> Int {
        try write {
            let n = try storage.itemStore.delete(try storeFilter(query))
            if n == 0 { throw KeychainError(.itemNotFound) }
            return n
        }
    }
}
