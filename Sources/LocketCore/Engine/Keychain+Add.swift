import Glibc
import LocketSupport

/// SecItemAdd: one item, or a batch in one transaction.
extension Keychain {
    /// Adds an item (SecItemAdd). With `updateExisting`, an item with the same
    /// primary key is updated in place instead (`security add-... -U`),
    /// keeping its persistent reference and creation date.
    @discardableResult
    public func add(_ new: NewItem, data: SecureBytes, extra: SecureBytes? = nil, updateExisting: Bool = false) throws -> Item {
        if new.itemClass.holdsKeyMaterial {
            throw KeychainError(.param, "\(new.itemClass.name) items are added from their value (import, key generate), not with attributes")
        }
        try checkSize(data)
        try checkFreeForm(new.freeForm)
        let (pclass, control, group) = try placement(accessible: new.accessible, accessControl: new.accessControl, accessGroup: new.accessGroup)
        let attributes = new.storedAttributes
        return try write {
            do {
                if new.freeForm.uniqueByReference { try markUniqueByReference() }
                return try insert(new.itemClass, attributes, group: group, pclass: pclass, data: data, extra: extra, control: control,
                                  freeForm: new.freeForm)
            } catch let error as KeychainError where error.code == .duplicateItem && updateExisting {
                var query = Query(itemClass: new.itemClass)
                try query.matchPrimaryKey(of: attributes)
                query.accessGroup = group
                // The item whose primary key conflicted, and only it: items made over
                // the Secret Service with the same service and account are others.
                let conflicting = try primaryKeyFilter(query)
                if let requested = new.accessible ?? control?.protection {
                    let existing = try rows(query, limit: .one, data: false, filter: conflicting).first
                    if let existing, existing.accessible != requested {
                        throw KeychainError(.param, "accessible can't be changed on an existing item (delete and add it again)")
                    }
                    if let existing, control != nil, existing.accessControl != control {
                        throw KeychainError(.param, "access control can't be changed on an existing item (delete and add it again)")
                    }
                }
                var changes = new.attributes.filter { $0.key.isSealed }
                changes[.label] = changes[.label] ?? attributes[.label]
                changes[.valueTypes] = attributes[.valueTypes] ?? []
                let updated = try modify(query, changes: changes, accessGroup: nil, data: data, extra: extra,
                                         freeForm: new.freeForm.isEmpty ? nil : new.freeForm, filter: conflicting)
                return updated[0]
            }
        }
    }

    /// Where a new item goes, refused as SecItemAdd refuses: its protection
    /// class (the access control's, else `accessible`, else when-unlocked),
    /// its access control, and its access group, which the caller must be
    /// entitled to write.
    func placement(accessible: ProtectionClass?, accessControl control: AccessControl?,
                   accessGroup: String?) throws -> (ProtectionClass, AccessControl?, String) {
        if accessible != nil && control != nil {
            // As SecItemAdd with both kSecAttrAccessible and kSecAttrAccessControl.
            throw KeychainError(.param, "give either accessible or access control, not both (the access control names the class)")
        }
        let pclass = control?.protection ?? accessible ?? .whenUnlocked
        try checkPlacement(pclass)
        if let control, control.needsPresence && !hasPassword {
            throw KeychainError(.notAvailable, "\(control.text) items need a keychain with a password")
        }
        let group = accessGroup ?? defaultGroup
        try authorize(group)
        return (pclass, control, group)
    }

    /// Refuses a protection class this keychain can't hold an item in:
    /// when-passcode-set without a password (errSecNotAvailable, as on a
    /// device without a passcode), a class the storage does not admit.
    func checkPlacement(_ pclass: ProtectionClass) throws {
        if pclass == .whenPasscodeSetThisDeviceOnly && !hasPassword {
            throw KeychainError(.notAvailable, "\(pclass.name) items need a keychain with a password")
        }
        try storage.deviceGroups?.admit(pclass)
    }

    /// Adds many items in one transaction (bulk loading for benchmarks and
    /// imports): all or nothing, as `add` of each would be without `-U`.
    public func addBatch<Items: Sequence>(_ items: Items) throws where Items.Element == (item: NewItem, data: SecureBytes) {
        try write {
            // One prepared INSERT for the batch; a lazy sequence keeps only the
            // secret being inserted in guarded memory, not the whole batch.
            let inserter = try storage.itemStore.makeInserter()
            for (new, data) in items {
                try checkSize(data)
                let group = new.accessGroup ?? defaultGroup
                try authorize(group)
                _ = try insert(new.itemClass, new.storedAttributes, group: group, pclass: new.accessible ?? .whenUnlocked,
                               data: data, extra: nil, using: inserter)
            }
        }
    }

    func checkSize(_ data: SecureBytes) throws {
        guard data.count <= Keychain.maximumDataLength else {
            throw KeychainError(.dataTooLarge, "the secret is larger than \(ByteSize.text(Keychain.maximumDataLength))")
        }
    }

    /// Seals and inserts one item, inside the caller's write transaction. A
    /// restore passes the item's own persistent reference and dates (kept as
    /// they were); otherwise the reference is new and both dates are now.
    func insert(_ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]], group: String,
                pclass: ProtectionClass, data: SecureBytes, extra: SecureBytes?,
                ref: [UInt8]? = nil, created: Int64? = nil, modified: Int64? = nil,
                using inserter: (any ItemInserting)? = nil, control: AccessControl? = nil, freeForm: FreeForm = FreeForm()) throws -> Item {
        let row = try seal(itemClass, attributes, group: group, pclass: pclass, data: data, extra: extra,
                           ref: ref, created: created, modified: modified, control: control, freeForm: freeForm)
        try (inserter ?? storage.itemStore.makeInserter()).insert(
            ref: row.ref, itemClass: itemClass, accessible: pclass, group: group,
            digests: row.digests, attributes: row.attributes, data: row.data)
        var item = Item(itemClass: itemClass, attributes: attributes, accessGroup: group, accessible: pclass,
                        persistentRef: row.ref, creationDate: row.created, modificationDate: row.modified, data: nil,
                        availability: .available, accessControl: control)
        item.freeForm = freeForm
        return item
    }

    /// One item's row as the store writes it: its digests and sealed values, no secret.
    func seal(_ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]], group: String,
              pclass: ProtectionClass, data: SecureBytes, extra: SecureBytes?,
              ref: [UInt8]? = nil, created: Int64? = nil, modified: Int64? = nil,
              control: AccessControl? = nil, freeForm: FreeForm = FreeForm()) throws -> SealedItemRow {
        try storage.deviceGroups?.admit(pclass)
        var attributes = attributes
        // Synchronizable is "1" or absent, whatever spelling of false was given.
        if let sync = attributes[.synchronizable], sync != [0x31] { attributes[.synchronizable] = nil }
        let ref = ref ?? Sodium.random(16)
        let row = Sealing.RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: group, ref: ref)
        let attrsKey = try fieldKey(row, .attributes)
        var dataKey = try fieldKey(row, .data)
        var access: ItemAccess?
        if let control {
            (access, dataKey) = try sealAccess(control, row, label: Keychain.label(attributes),
                                               publicHalf: Keychain.publicHalf(itemClass, attributes, data))
        }
        let now = environment.time.milliseconds()
        let (created, modified) = (created ?? now, modified ?? now)
        var record = ItemRecord.encode(attributes, created: created, modified: modified, access: access?.encoded, freeForm: freeForm)
        defer { wipe(&record) }
        return SealedItemRow(ref: ref, itemClass: itemClass, accessible: pclass, group: group,
                             digests: freeForm.isEmpty ? Sealing.digests(try indexKey(), itemClass, attributes)
                                                       : Sealing.digests(try indexKey(), itemClass, attributes, freeForm, ref: ref),
                             attributes: SecretBox.seal(record, key: attrsKey),
                             data: SecretBox.seal(try DataRecord.encode(secret: data, extra: extra), key: dataKey),
                             created: created, modified: modified)
    }

}

/// An item's row, sealed and digested, ready for the store: nothing in it is secret.
struct SealedItemRow {
    var ref: [UInt8]
    var itemClass: ItemClass
    var accessible: ProtectionClass
    var group: String
    var digests: ItemDigests
    var attributes: [UInt8]
    var data: [UInt8]
    var created: Int64
    var modified: Int64

    /// What it holds in memory, roughly (for bounding a queue of rows).
    var byteCount: Int { ref.count + group.utf8.count + attributes.count + data.count + 16 * digests.index.count + 64 }
}
