import LocketSupport

/// One pass over the rows a filter selects, the one loop every reader runs
/// (find, find-all, update, dump, keys, the agent): each row opened, its
/// values compared byte for byte with the query's (the digests matched; a
/// 64-bit collision must not return a wrong item), the reads of secrets
/// recorded where the storage records them, and a miss checked against a
/// rotation committed since open.
///
/// A class: made and configured once by its reader, then handed down the
/// storage's `scan` by reference. As a struct, every hand-over copied it
/// through its value witnesses, which built the metadata of its arrays at
/// run time: about 4 k instructions of a `find` (callgrind).
package final class RowScan {
    /// Which rows.
    var filter: ItemFilter
    /// The values an opened item must hold exactly.
    var equalities: [(Attribute, [UInt8])] = []
    /// The synchronizable value it must hold ("1" or none), nil for either
    /// (kSecAttrSynchronizableAny, and a scan of every row).
    var synchronizable: [UInt8]?
    /// The free-form pairs it must hold exactly (SPEC §18), as the query
    /// keeps them: names and values apart.
    var freeFormNames: [String] = []
    var freeFormValues: [String] = []
    /// The class rows are opened as; nil: each row's own (a dump).
    var itemClass: ItemClass?
    /// Open the sealed secret too.
    var data: Bool
    /// Open the attributes. Without, every row is handed on unopened, with
    /// its reference, class, group and availability only (a listing that
    /// names no attribute holds no attribute sets).
    var opening = true
    /// An unavailable key or a damaged value throws. Otherwise the item is
    /// handed on with its availability set, its attributes empty, uncompared.
    var strict: Bool
    /// The secret of an item with access control stays sealed, and its
    /// sealed bytes are handed on (an update re-seals around it without a proof).
    var keepingAccessData = false
    /// Rows of groups this machine can't open are left out (a listing).
    var listing = false
    /// A non-extractable key's value is left out (SPEC §12: a dump lists it without).
    var withholdingNonExtractable = false
    /// A further test of an opened item, before its read is recorded (the agent's key types).
    var admits: ((Item) -> Bool)?
    /// Each secret handed on is recorded first (`KeychainStorage.recordRead`).
    var recordingReads = false
    /// A miss, or a row that does not open, is checked against a rotation
    /// committed since open (`keysReplaced`): never reported as missing or damaged.
    var reportingRotation = false
    /// Every selected row is copied here before it is opened, for the
    /// caller to scan again later (`Keychain.searchHolding`).
    var holding: HeldRows?

    /// The rows of `query` (its class, its equalities), after `filter`.
    init(_ query: Query, filter: ItemFilter, data: Bool, strict: Bool = true) {
        self.filter = filter
        self.equalities = query.attributes
        self.synchronizable = query.matching.storedValue
        self.freeFormNames = query.freeFormNames
        self.freeFormValues = query.freeFormValues
        self.itemClass = query.itemClass
        self.data = data
        self.strict = strict
    }

    /// Every row `filter` selects, each of its own class.
    init(every filter: ItemFilter, data: Bool, strict: Bool) {
        self.filter = filter
        self.data = data
        self.strict = strict
    }
}

extension RowScan {
    /// Whether `item` holds every free-form pair the scan names.
    func holdsFreeForm(_ item: Item) -> Bool {
        for k in freeFormNames.indices where item.freeForm.attributes[freeFormNames[k]] != freeFormValues[k] { return false }
        return true
    }
}

/// A row the scan hands on.
package struct ScannedItem {
    var item: Item
    var id: Int64
    /// With `keepingAccessData`: the sealed secret of an item with access control.
    var sealedData: [UInt8]?
}

extension KeychainEngine {
    /// Runs `scan` in the open transaction, handing each match to `visit`
    /// until it returns false. Returns how many were handed on.
    @discardableResult
    func scan(_ scan: RowScan, _ visit: (ScannedItem) throws -> Bool) throws -> Int {
        var handed = 0
        do {
            try storage.scan(scan, for: self) { match in
                handed += 1
                return try visit(match)
            }
        } catch let error as KeychainError where error.code == .decode && scan.reportingRotation {
            try checkKeysCurrent()
            throw error
        }
        if handed == 0 && scan.reportingRotation { try checkKeysCurrent() }
        return handed
    }

    /// The loop itself, over one storage's rows (`KeychainStorage.scan`: specialized per row type).
    func run<Store: ItemStoring>(_ scan: RowScan, over store: Store, _ visit: (ScannedItem) throws -> Bool) throws {
        try run(scan, rows: try store.select(scan.filter, data: scan.data), visit)
    }

    /// The loop over rows already selected: a store's cursor, or the rows a
    /// search held (`searchAgain`).
    func run<Rows: ItemCursor>(_ scan: RowScan, rows cursor: Rows, _ visit: (ScannedItem) throws -> Bool) throws {
        while let row = try cursor.next() {
            scan.holding?.hold(row)
            guard let itemClass = scan.itemClass ?? row.itemClass else { continue }
            if scan.listing, let groups = storage.deviceGroups, try !groups.canOpen(group: row.accessGroup) { continue }
            var item = try open(row, itemClass: itemClass, data: scan.data, strict: scan.strict, keepingAccessData: scan.keepingAccessData,
                                opening: scan.opening)
            // The digests matched; confirm byte for byte now that the values are open.
            if item.availability == .available && scan.opening {
                guard scan.equalities.allSatisfy({ item[$0.0] == $0.1 }), scan.synchronizable.map({ item[.synchronizable] == $0 }) ?? true,
                      scan.holdsFreeForm(item), scan.admits?(item) ?? true else { continue }
            }
            if scan.withholdingNonExtractable && !item.isExtractable { item.data = nil }
            if scan.recordingReads && item.data != nil { try storage.readAudit?.recordRead(item.persistentRef) }
            let sealed = scan.keepingAccessData && item.access != nil && item.data == nil && scan.data ? row.withData { Array($0) } : nil
            guard try visit(ScannedItem(item: item, id: row.id, sealedData: sealed)) else { return }
        }
    }

    /// Opens a selected row. With `strict`, an unavailable key or damaged
    /// value throws; otherwise the item comes back with its availability set
    /// and no attributes.
    /// With `keepingAccessData`, the secret of an item with access control is
    /// left closed (an update re-seals around it without a proof). Without
    /// `opening`, nothing is opened: the item has its availability only.
    func open(_ stored: some StoredItemRow, itemClass: ItemClass, data: Bool, strict: Bool, keepingAccessData: Bool = false,
              opening: Bool = true) throws -> Item {
        let id = stored.id
        let ref = stored.ref
        let group = stored.accessGroup
        guard let pclass = ProtectionClass(rawValue: stored.protectionClassCode) else {
            if strict { throw KeychainError(.decode, "an item has an unknown protection class") }
            return Item(itemClass: itemClass, attributes: [:], accessGroup: group, accessible: .whenUnlocked,
                        persistentRef: ref, creationDate: 0, modificationDate: 0, data: nil, availability: .damaged)
        }
        // A class key left wrapped at open (KeyCache.wrapped) is opened
        // first, outside the catch below: one that does not open is the
        // keybag's damage (errSecDecode for the command), not this item's;
        // and the item's availability is then what it was when every key
        // was opened at open (also where the scan opens nothing).
        if cache.wrapped != nil { try cache.unwrap(pclass) }
        let row = Sealing.RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: group, ref: ref)
        var item = Item(itemClass: itemClass, attributes: [:], accessGroup: group, accessible: pclass,
                        persistentRef: ref, creationDate: 0, modificationDate: 0, data: nil,
                        availability: availability(of: pclass, group: group, id: id))
        guard item.availability == .available else {
            if strict { throw unavailable(pclass, group, id: id) }
            return item
        }
        guard opening else { return item }
        do {
            let opened = try stored.withAttributes { try SecretBox.open($0, key: try fieldKey(row, .attributes), what: "an item's attributes") }
            let record = try ItemRecord.decode(opened)
            item.attributes = record.attributes
            item.creationDate = record.created
            item.modificationDate = record.modified
            item.freeForm = try ItemRecord.freeForm(opened)
            let access = try record.access.map { try ItemAccess(encoded: $0, protection: pclass) }
            item.accessControl = access?.control
            item.access = access
            if let access, isInvalidated(access) { item.availability = .invalidated }
            // A dump never asks for proofs: the secrets of items with access control stay out of it.
            if data && (access == nil || (strict && !keepingAccessData)) {
                let key = try access.map { try openAccess($0, row, label: KeychainEngine.label(item.attributes)) } ?? fieldKey(row, .data)
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

    /// The key that seals `field` of `row`, or why it is not available: the
    /// class key's key for the row's group, as the storage takes it.
    func fieldKey(_ row: Sealing.RowIdentity, _ field: Sealing.Field) throws -> SecureBytes {
        try Sealing.fieldKey(try sealingKey(try cache.groupKey(row.accessible, row.accessGroup), group: row.accessGroup), row, field)
    }

    /// The key field keys derive from, given a class key's key for `group`:
    /// as it is, or as a storage shared by devices mixes it (`DeviceGroups`).
    func sealingKey(_ classGroupKey: SecureBytes, group: String) throws -> SecureBytes {
        guard let groups = storage.deviceGroups else { return classGroupKey }
        return try groups.sealingKey(classGroupKey, group: group)
    }
}
