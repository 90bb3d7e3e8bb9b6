import Glibc
import LocketSupport

/// Sealing a new item: where it goes (class, access control, group), its
/// size, its digests and sealed values, and its insertion in the caller's
/// write transaction. What `add`, `import` and keys share.
extension KeychainEngine {
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

    func checkSize(_ data: SecureBytes) throws {
        guard data.count <= Keychain.maximumDataLength else {
            throw KeychainError(.dataTooLarge, "the secret is larger than \(ByteSize.text(Keychain.maximumDataLength))")
        }
    }

    /// Refuses what the command line refuses when it parses a value
    /// (`AttributeValue.parse`), whoever calls: the Secret Service stored a
    /// 60 MiB label, and one of 70,000 bytes made every backup fail. An
    /// access group is at most what a backup record carries.
    func checkSizes(_ attributes: [Attribute: [UInt8]], group: String?) throws {
        for (attribute, value) in attributes where value.count > Attribute.maximumValueLength {
            throw KeychainError(.dataTooLarge, "the \(attribute.longName) is longer than \(Attribute.maximumValueLength) bytes")
        }
        if let group, group.utf8.count > Keychain.maximumGroupLength {
            throw KeychainError(.dataTooLarge, "the access group is longer than \(Keychain.maximumGroupLength) bytes")
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
            (access, dataKey) = try sealAccess(control, row, label: KeychainEngine.label(attributes),
                                               publicHalf: KeychainEngine.publicHalf(itemClass, attributes, data),
                                               tpmAuthorization: KeychainEngine.isHeldByTPM(attributes))
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

    /// Refuses a free-form set that can't be stored: too large, or in a
    /// keychain whose storage lacks `.freeFormAttributes`.
    func checkFreeForm(_ freeForm: FreeForm) throws {
        guard !freeForm.isEmpty else { return }
        try freeForm.validate()
        try require(.freeFormAttributes)
    }

    /// Inside `write`: records in the header that the keychain holds an item
    /// unique by reference, so that no lookup takes the primary-key digest
    /// for the only item it can match (`storeFilter`). Never cleared: a
    /// lookup through the blind rows is as right, only a little slower.
    func markUniqueByReference() throws {
        guard meta[.uniqueByReference] == nil, try storage.readMeta(.uniqueByReference) == nil else { return }
        try storage.writeMeta([(.uniqueByReference, [1])])
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
