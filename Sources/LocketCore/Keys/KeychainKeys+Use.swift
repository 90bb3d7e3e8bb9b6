import LocketSupport

/// Using a stored key without handing it out (SPEC §13): `key sign`,
/// `verify`, `encrypt` and `decrypt` open the key inside the engine, run
/// the operation and let the key's guarded memory be wiped, in one call.
extension KeychainKeys {
    /// Runs `body` with the first key `query` matches, opened whether or not
    /// it is extractable, and the item without its value. With
    /// `needsPrivate` (sign, decrypt) a private key is looked for first, so
    /// that a public key imported beside it under the same label is not
    /// taken; when the query matches only a public key, errSecParam names it.
    /// A Secure Enclave key is used through the TPM (`TPMKeyUse`), with the
    /// application password given as its authorization value.
    public func withKey<R>(_ query: Query, needsPrivate: Bool, _ body: (Item, any PrivateKeyOperations) throws -> R) throws -> R {
        var (item, key) = try find(query, needsPrivate: needsPrivate)
        item.data = nil
        return try body(item, try operations(key, item))
    }

    private func find(_ query: Query, needsPrivate: Bool) throws -> (item: Item, key: StoredKey) {
        guard needsPrivate, !query.attributes.contains(where: { $0.0 == .keyClass }) else { return try storedKey(query) }
        var privateOnly = query
        try privateOnly.match(.keyClass, Array(KeyClass.private.rawValue.utf8))
        do {
            return try storedKey(privateOnly)
        } catch let error as KeychainError where error.code == .itemNotFound {
            let (item, _) = try storedKey(query)
            let label = String(decoding: item[.label], as: UTF8.self)
            throw KeychainError(.param, "the key\(label.isEmpty ? "" : " '\(Printable.clip(label))'") is a public key: this needs its private key")
        }
    }
}
