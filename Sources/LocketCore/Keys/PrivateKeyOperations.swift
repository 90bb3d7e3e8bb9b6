import LocketSupport

/// A private key opened for one use, wherever it is: in memory (a software
/// key, `AsymmetricKey`) or in a TPM (`TPMKeyUse`), so that `key sign` and
/// `decrypt`, the ssh-agent and the Security module never branch on where
/// a key lives (SPEC §13, §21).
public protocol PrivateKeyOperations {
    /// The public key: verifying, encrypting and exporting go through it.
    var publicKey: AsymmetricKey { get }
    var keyType: KeyType { get }
    /// Signs `data` (the message, or for `ecdsa-digest-*` its digest); ECDSA as X9.62 DER.
    func sign(_ data: [UInt8], algorithm: KeyAlgorithm) throws -> [UInt8]
    /// Decrypts `ciphertext` into guarded memory.
    func decrypt(_ ciphertext: [UInt8], algorithm: KeyAlgorithm) throws -> SecureBytes
    /// The ECDH shared secret with `peer` (kSecKeyAlgorithmECDHKeyExchangeStandard: Z's x coordinate).
    func sharedSecret(with peer: AsymmetricKey) throws -> SecureBytes
}

extension AsymmetricKey: PrivateKeyOperations {
    public func sharedSecret(with peer: AsymmetricKey) throws -> SecureBytes {
        guard keyType == .ec, peer.keyType == .ec, peer.curve == curve else {
            throw KeychainError(.param, "key agreement needs an EC private key and a public key on the same curve")
        }
        _ = try requirePrivate("key agreement")
        return try withEVP { own in try peer.withPublicEVP { try ECIES.sharedSecret(own, $0, cofactor: false) } }
    }
}

/// What SecKeyCopyKeyExchangeResult makes of an ECDH shared secret.
public enum KeyExchange {
    /// The digests the X9.63 KDF takes here.
    public static let digests: Set<String> = ["SHA1", "SHA224", "SHA256", "SHA384", "SHA512"]

    /// ANSI X9.63 KDF: `length` bytes from the shared secret and `sharedInfo`, with `digest`.
    public static func x963(_ secret: SecureBytes, digest: String, sharedInfo: [UInt8], length: Int) throws -> SecureBytes {
        guard digests.contains(digest) else { throw KeychainError(.param, "the X9.63 KDF takes SHA1, SHA224, SHA256, SHA384 or SHA512, not \(digest)") }
        guard (1...1 << 16).contains(length) else { throw KeychainError(.param, "the requested size must be 1 to 65536 bytes, not \(length)") }
        return try ECIES.kdf(secret, sharedInfo: sharedInfo, length: length, digest: digest)
    }
}
