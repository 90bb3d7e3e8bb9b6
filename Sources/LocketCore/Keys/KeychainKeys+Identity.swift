import LocketSupport

/// A query for identities (kSecClassIdentity): terms on the certificate
/// (label, hash, subject, ...) and on the private key (tag, ...).
public struct IdentityQuery: Sendable {
    public var certificate = Query(itemClass: .certificate)
    public var key = Query(itemClass: .key)

    public init() {}

    /// Adds an equality to the certificate's terms when certificates have
    /// `attribute` (the label is the certificate's, as Apple's identity
    /// label), else to the key's; errSecNoSuchAttr when neither has it.
    public mutating func match(_ attribute: Attribute, _ value: [UInt8]) throws {
        if attribute == .accessGroup {
            try certificate.match(attribute, value)
            try key.match(attribute, value)
        } else if ItemClass.certificate.supports(attribute) {
            try certificate.match(attribute, value)
        } else if ItemClass.key.supports(attribute) {
            try key.match(attribute, value)
        } else {
            throw KeychainError(.noSuchAttr, "identities have no \(attribute.longName) attribute (\(attribute.code))")
        }
    }
}

/// A private key and its certificate, as the keychain pairs them.
public struct IdentityItem: Sendable {
    public let key: Item
    public let certificate: Item
}

/// Identities as a view (SPEC §12, reference 000 "Digital Identities Aren't
/// Real"): never stored; a certificate and the private key whose
/// application label equals its public key hash.
extension KeychainKeys {
    /// Every (private key, certificate) pair `query` matches, oldest
    /// certificate first; errSecItemNotFound when none.
    public func identities(_ query: IdentityQuery, limit: MatchLimit = .one) throws -> [IdentityItem] {
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let found = try engine.transaction(write: false) { () throws -> [IdentityItem] in
            let found = try pairs(query, limit: limit)
            if found.isEmpty { try engine.checkKeysCurrent() }
            return found
        }
        if found.isEmpty { throw KeychainError(.itemNotFound) }
        return found
    }

    /// Deletes the certificate of every identity `query` matches, and its
    /// private key unless another certificate (in any group) still has the
    /// key's application label: one write transaction. Returns how many
    /// certificates and keys went. Opens the certificates, so it needs them unlocked.
    @discardableResult
    public func deleteIdentities(_ query: IdentityQuery) throws -> (certificates: Int, keys: Int) {
        try engine.write {
            let found = try pairs(query, limit: .all)
            guard !found.isEmpty else { throw KeychainError(.itemNotFound) }
            for pair in found { _ = try engine.storage.itemStore.delete(ItemFilter(ref: pair.certificate.persistentRef)) }
            var keys = 0
            var seen: Set<[UInt8]> = []
            for pair in found where seen.insert(pair.key.persistentRef).inserted {
                var others = Query(itemClass: .certificate)
                try others.match(.publicKeyHash, pair.key[.applicationLabel])
                // Any group, the caller's or not: a key another app's certificate still pairs with stays.
                var filter = try engine.storeFilter(others)
                filter.visibleGroups = nil
                if try engine.storage.itemStore.select(filter, data: false).next() == nil {
                    keys += try engine.storage.itemStore.delete(ItemFilter(ref: pair.key.persistentRef))
                }
            }
            return (found.count, keys)
        }
    }

    /// The identity `query` matches, to export as PKCS#12 with the chain of
    /// its issuers found in the keychain: errSecDataNotAvailable when its key
    /// is non-extractable.
    public func exportableIdentity(_ query: IdentityQuery) throws -> (item: IdentityItem, identity: Identity) {
        let pair = try identities(query)[0]
        var keyQuery = Query(itemClass: .key)
        keyQuery.persistentRef = pair.key.persistentRef
        let (_, key) = try exportableKey(keyQuery)
        var certificateQuery = Query(itemClass: .certificate)
        certificateQuery.persistentRef = pair.certificate.persistentRef
        let (_, certificate) = try self.certificate(certificateQuery)
        var chain: [Certificate] = []
        var current = certificate
        // Up the issuers by subject, as far as the keychain holds them (a bounded walk: no loops).
        while !current.isSelfIssued && chain.count < 8 {
            var issuerQuery = Query(itemClass: .certificate)
            try issuerQuery.match(.subject, current.issuer)
            guard let issuer = try? self.certificate(issuerQuery).certificate else { break }
            chain.append(issuer)
            current = issuer
        }
        return (pair, try Identity(key: key, certificate: certificate, chain: chain))
    }

    /// The pairs, inside the caller's transaction: the certificates first,
    /// then for each one blind probe for a private key with its application
    /// label. A query with key terms only (`--tag`) starts from the keys
    /// instead, so that certificates it does not name are never opened (one
    /// of them locked would fail the search).
    private func pairs(_ query: IdentityQuery, limit: MatchLimit) throws -> [IdentityItem] {
        var found: [IdentityItem] = []
        let wanted = limit.sqlLimit
        if query.certificate.attributes.isEmpty && !query.key.attributes.isEmpty {
            var keyQuery = query.key
            try keyQuery.match(.keyClass, Array(KeyClass.private.rawValue.utf8))
            for key in try engine.rows(keyQuery, limit: .all, data: false) {
                var certificateQuery = query.certificate
                try certificateQuery.match(.publicKeyHash, key[.applicationLabel])
                for certificate in try engine.rows(certificateQuery, limit: .all, data: false) {
                    found.append(IdentityItem(key: key, certificate: certificate))
                    if wanted >= 0 && found.count >= wanted { return found }
                }
            }
            return found
        }
        for certificate in try engine.rows(query.certificate, limit: .all, data: false) {
            var keyQuery = query.key
            try keyQuery.match(.keyClass, Array(KeyClass.private.rawValue.utf8))
            try keyQuery.match(.applicationLabel, certificate[.publicKeyHash])
            guard let key = try engine.rows(keyQuery, limit: .one, data: false).first else { continue }
            found.append(IdentityItem(key: key, certificate: certificate))
            if wanted >= 0 && found.count >= wanted { break }
        }
        return found
    }
}
