import LocketSupport

/// Changing matched items in place: the body of `update`, `add -U`,
/// `import -U` and an HOTP code's counter, in the caller's write transaction.
extension KeychainEngine {
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
                    (access, dataKey) = try sealAccess(control, row, label: KeychainEngine.label(item.attributes),
                                                       publicHalf: KeychainEngine.publicHalf(item.itemClass, item.attributes, secret),
                                                       tpmAuthorization: KeychainEngine.isHeldByTPM(item.attributes))
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
}
