import LocketSupport

/// What happened to one item of a key file.
public struct KeyFileOutcome: Sendable {
    /// The item as added (or as it would have been, when it was there already).
    public let item: Item
    /// False: an item with the same primary key was already in the keychain and was left as it is.
    public let added: Bool
}

/// A keychain's keys and certificates as items (SPEC §12; `Keychain.keys`):
/// adding a key file or a generated key, reading stored keys back, using a
/// key without handing it out (KeychainKeys+Use), identities as a view
/// (+Identity), the ssh-agent's keys (Agent/KeychainKeySource). New kinds of
/// key (held by a TPM, say) are new members here, over the same items.
public struct KeychainKeys {
    let engine: KeychainEngine

    init(_ engine: KeychainEngine) { self.engine = engine }

    /// Adds the keys and certificates of one parsed key file in ONE write
    /// transaction, all or nothing: an error on any item (or from `outcome`)
    /// adds none. An item already in the keychain (same primary key and group)
    /// is left as it is, so a renewed certificate joins the key it shares;
    /// when every item is there already, errSecDuplicateItem.
    public func addKeyFile(_ file: ImportedItems, options: KeyItemOptions = KeyItemOptions(),
                           outcome: (KeyFileOutcome) throws -> Void = { _ in }) throws {
        let entries = try KeyAttributes.items(of: file, options)
        guard !entries.isEmpty else { throw KeychainError(.param, "the file holds no key or certificate") }
        try addKeyItems(entries, options, outcome)
    }

    /// Makes a new private key of `type` inside the keychain (`key generate`);
    /// returns the item and the public key.
    /// With `options.token` `.secureEnclave` the key is made in the TPM
    /// (KeychainKeys+Enclave); `.softwareEnclave` is a non-extractable P-256 key here.
    public func generateKey(_ type: KeyGenerationType, options: KeyItemOptions = KeyItemOptions()) throws -> (item: Item, publicKey: AsymmetricKey) {
        var options = options
        switch options.token {
        case .secureEnclave:
            return try generateInTPM(type, options)
        case .softwareEnclave:
            guard type == .p256 else { throw KeychainError(.param, "software-enclave keys are P-256 (--type p256), as Apple's Secure Enclave keys") }
            options.extractable = false
        case .software:
            break
        }
        let key = try AsymmetricKey.generate(type)
        let attributes = KeyAttributes.of(key, label: options.label, tag: options.tag, extractable: options.extractable)
        var added: Item?
        try addKeyItems([(.key, attributes, key.pkcs8!)], options) { added = $0.item }
        return (added!, key.publicKey)
    }

    func addKeyItems(_ entries: [(ItemClass, [Attribute: [UInt8]], SecureBytes)], _ options: KeyItemOptions,
                             _ outcome: (KeyFileOutcome) throws -> Void) throws {
        let (pclass, control, group) = try engine.placement(accessible: options.accessible, accessControl: options.accessControl,
                                                     accessGroup: options.accessGroup)
        for (_, _, data) in entries { try engine.checkSize(data) }
        try engine.write {
            let inserter = try engine.storage.itemStore.makeInserter()
            var added = 0
            for (itemClass, given, data) in entries {
                var attributes = given
                if options.synchronizable { attributes[.synchronizable] = [0x31] }
                do {
                    // The proof guards private keys; certificates and public keys are public.
                    let isPrivate = itemClass == .key && attributes[.keyClass] == Array("private".utf8)
                    let item = try engine.insert(itemClass, attributes, group: group, pclass: pclass, data: data, extra: nil, using: inserter,
                                          control: isPrivate ? control : nil)
                    added += 1
                    try outcome(KeyFileOutcome(item: item, added: true))
                } catch let error as KeychainError where error.code == .duplicateItem {
                    let item = Item(itemClass: itemClass, attributes: attributes, accessGroup: group, accessible: pclass,
                                    persistentRef: [], creationDate: 0, modificationDate: 0, data: nil, availability: .available)
                    try outcome(KeyFileOutcome(item: item, added: false))
                }
            }
            if added == 0 {
                throw KeychainError(.duplicateItem, entries.count == 1 ? "the \(entries[0].0.name) is already in the keychain"
                                                                      : "every key and certificate of the file is already in the keychain")
            }
        }
    }

    // MARK: - Reading keys back

    /// The first key `query` matches, opened inside the engine whether or
    /// not it is extractable: for the key-use commands (SPEC §13), which
    /// use it and never hand its private part out. A Secure Enclave key's
    /// value is the TPM's key file (`tkid`), read without the TPM.
    func storedKey(_ query: Query, exportable: Bool = false) throws -> (item: Item, key: StoredKey) {
        let item = try openOne(query, .key, exportable: exportable)
        guard let data = item.data else { throw KeychainError(.decode, "a key's value could not be opened") }
        if item.isHeldByTPM { return (item, .tpm(try TPMKey(TSS2KeyFile(der: data.bytes)))) }
        let key = item[.keyClass] == Array("private".utf8)
            ? try AsymmetricKey(pkcs8: data)
            : try AsymmetricKey(subjectPublicKeyInfo: data.bytes)
        return (item, .software(key))
    }

    /// The public key of the first key `query` matches (`key public`): never
    /// refused, a non-extractable private key's public half is public, and
    /// one behind access control needs no proof for it (`keptPublicHalf`).
    public func publicKey(_ query: Query) throws -> (item: Item, key: AsymmetricKey) {
        if let kept = try keptPublicHalf(query) { return kept }
        let (item, key) = try storedKey(query)
        var shown = item
        shown.data = nil
        return (shown, key.publicKey)
    }

    /// The first key `query` matches, to export: errSecDataNotAvailable for a
    /// key added non-extractable.
    public func exportableKey(_ query: Query) throws -> (item: Item, key: AsymmetricKey) {
        let (item, stored) = try storedKey(query, exportable: true)
        var shown = item
        shown.data = nil
        // Never extractable (its `extr` is 0): refused above, and here whatever its attributes say.
        guard case .software(let key) = stored else { try KeychainKeys.requireExtractable(shown); throw KeychainError(.dataNotAvailable) }
        return (shown, key)
    }

    /// The first certificate `query` matches.
    public func certificate(_ query: Query) throws -> (item: Item, certificate: Certificate) {
        let item = try openOne(query, .certificate)
        guard let data = item.data else { throw KeychainError(.decode, "a certificate's value could not be opened") }
        var shown = item
        shown.data = nil
        return (shown, try Certificate(der: data.bytes))
    }

    /// The first key `query` matches and its public key, read from the
    /// attributes alone when the key keeps its public half beside its
    /// access control; nil otherwise (no match, no access control, or a key
    /// added before the public half was kept), for the caller to open the value.
    func keptPublicHalf(_ query: Query) throws -> (item: Item, key: AsymmetricKey)? {
        guard query.itemClass == .key else { return nil }
        let found = try engine.transaction(write: false) { try engine.rows(query, limit: .one, data: false) }
        guard let item = found.first, let spki = item.access?.publicHalf else { return nil }
        return (item, try AsymmetricKey(subjectPublicKeyInfo: spki))
    }

    /// errSecDataNotAvailable for a key whose value never leaves the keychain.
    public static func requireExtractable(_ item: Item) throws {
        if item.isHeldByTPM {
            throw KeychainError(.dataNotAvailable, "the key '\(Printable.clip(String(decoding: item[.label], as: UTF8.self)))' is a Secure Enclave key: it was made in the TPM and never leaves it (export --format tss2 writes its TPM key file)")
        }
        guard item.isExtractable else {
            throw KeychainError(.dataNotAvailable, "the key '\(Printable.clip(String(decoding: item[.label], as: UTF8.self)))' was added non-extractable: it can be used but never leaves the keychain")
        }
    }

    /// The first item of `itemClass` that `query` matches, its value opened;
    /// with `exportable`, errSecDataNotAvailable first for a non-extractable key.
    private func openOne(_ query: Query, _ itemClass: ItemClass, exportable: Bool = false) throws -> Item {
        guard query.itemClass == itemClass else { throw KeychainError(.param, "the query is not for \(itemClass.name) items") }
        let found = try engine.transaction(write: false) { () throws -> [Item] in
            if exportable { try engine.refuseNonExtractable(query, limit: .one) }
            // A key opened to use it is a read of its secret (SPEC §17 audit), even if it never leaves the engine.
            return try engine.rows(query, limit: .one, data: true, reads: true)
        }
        guard let item = found.first else { throw KeychainError(.itemNotFound) }
        return item
    }
}

extension KeyImport {
    /// The format a key file in guarded memory looks like, or nil (`import` tells key files from other input by it).
    public static func detectFormat(_ data: SecureBytes) -> KeyFileFormat? {
        data.withUnsafeBytes { detect($0) }
    }
}
