import LocketSupport

/// A private key's public half beside its access control (issue 31): Apple
/// gives a key's public key out freely (SecKeyCopyPublicKey asks for no
/// authentication), so the proof guards only the private key. The public
/// half is kept in the item's access record, sealed with its attributes
/// under the class key: a locked class still hides it.
extension Keychain {
    /// What to keep for an item being sealed with access control: the
    /// SubjectPublicKeyInfo of a private key's value; nil for anything else.
    static func publicHalf(_ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]], _ data: SecureBytes) throws -> [UInt8]? {
        guard itemClass == .key, attributes[.keyClass] == Array(KeyClass.private.rawValue.utf8) else { return nil }
        return try AsymmetricKey(pkcs8: data).subjectPublicKeyInfo
    }

    /// The first key `query` matches and its public key, read from the
    /// attributes alone when the key keeps its public half beside its
    /// access control; nil otherwise (no match, no access control, or a key
    /// added before the public half was kept), for the caller to open the value.
    func keptPublicHalf(_ query: Query) throws -> (item: Item, key: AsymmetricKey)? {
        guard query.itemClass == .key else { return nil }
        let found = try transaction(write: false) { try rows(query, limit: .one, data: false) }
        guard let item = found.first, let spki = item.access?.publicHalf else { return nil }
        return (item, try AsymmetricKey(subjectPublicKeyInfo: spki))
    }
}
