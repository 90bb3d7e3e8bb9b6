import LocketSupport

/// A private key's public half beside its access control (issue 31): Apple
/// gives a key's public key out freely (SecKeyCopyPublicKey asks for no
/// authentication), so the proof guards only the private key. The public
/// half is kept in the item's access record, sealed with its attributes
/// under the class key: a locked class still hides it.
extension KeychainEngine {
    /// What to keep for an item being sealed with access control: the
    /// SubjectPublicKeyInfo of a private key's value; nil for anything else.
    static func publicHalf(_ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]], _ data: SecureBytes) throws -> [UInt8]? {
        guard itemClass == .key, attributes[.keyClass] == Array(KeyClass.private.rawValue.utf8) else { return nil }
        if isHeldByTPM(attributes) { return try TPMKey(TSS2KeyFile(der: data.bytes)).publicKey.subjectPublicKeyInfo }
        return try AsymmetricKey(pkcs8: data).subjectPublicKeyInfo
    }
}

extension KeychainEngine {
    /// Whether a key's attributes say it is a Secure Enclave key: its value
    /// is the TPM's key file, and an application password is the TPM's to check.
    static func isHeldByTPM(_ attributes: [Attribute: [UInt8]]) -> Bool {
        attributes[.tokenID] == KeyToken.secureEnclaveID
    }
}
