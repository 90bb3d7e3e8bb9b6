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
        if let data { try engine.checkSize(data) }
        if let freeForm { try engine.checkFreeForm(freeForm) }
        if let freeFormEdit, !freeFormEdit.isEmpty {
            guard query.itemClass == .genericPassword else {
                throw KeychainError(.noSuchAttr, "\(query.itemClass.name) items have no free-form attributes")
            }
            // What the edit leaves must be storable; each match is checked again once edited.
            try engine.checkFreeForm(try freeFormEdit.applied(to: FreeForm()))
            if freeForm != nil { throw KeychainError(.param, "free-form attributes are replaced or edited, not both") }
        }
        var changes = changes
        let newClass = try changes.removeValue(forKey: .accessible).map { try ProtectionClass(parsing: String(decoding: $0, as: UTF8.self)) }
        if let newClass { try engine.checkPlacement(newClass) }
        if let value = changes[.synchronizable] { changes[.synchronizable] = value == [0x31] ? value : [] }
        var group = accessGroup
        if let named = changes.removeValue(forKey: .accessGroup) {
            let text = String(decoding: named, as: UTF8.self)
            if let group, group != text { throw KeychainError(.param, "two different access groups to move to") }
            group = text
        }
        try engine.checkSizes(changes, group: group)
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
        if let group { try engine.authorize(group) }
        return try engine.write {
            try engine.modify(query, changes: changes, accessGroup: group, accessible: newClass, data: data, extra: extra, freeForm: freeForm,
                       freeFormEdit: freeFormEdit?.isEmpty == false ? freeFormEdit : nil, givenAsBytes: givenAsBytes).count
        }
    }

    /// Deletes every match (SecItemDelete). Works while locked: it needs only
    /// digests, never an open value, so a read failure can never cause it.
    @discardableResult
    public func delete(_ query: Query) throws -> Int {
        try engine.write {
            let n = try engine.storage.itemStore.delete(try engine.storeFilter(query))
            if n == 0 { throw KeychainError(.itemNotFound) }
            return n
        }
    }
}
