// `export` without the storage: certificates as PEM or DER, private keys as
// PKCS#8 PEM (optionally encrypted) or OpenSSH, public keys as SPKI PEM or an
// OpenSSH line, identities as PKCS#12. What holds a private key comes back in
// guarded memory.

/// A private key and its certificate (Apple's SecIdentity), with the chain to export alongside.
public struct Identity: Sendable {
    /// The private key.
    public let key: AsymmetricKey
    /// The certificate whose public key hash equals the key's application label.
    public let certificate: Certificate
    /// Issuer certificates, leaf's issuer first.
    public let chain: [Certificate]

    /// Pairs `key` with `certificate`; errSecParam unless `key` is private
    /// and the certificate is for it.
    public init(key: AsymmetricKey, certificate: Certificate, chain: [Certificate] = []) throws {
        guard key.keyClass == .private else { throw KeychainError(.param, "an identity needs a private key") }
        guard certificate.matches(key) else { throw KeychainError(.param, "the certificate is not for this key (its public key hash differs from the key's application label)") }
        self.key = key
        self.certificate = certificate
        self.chain = chain
    }

    /// PKCS#12 DER under `passphrase`: PBES2 (PBKDF2-HMAC-SHA256, 600,000
    /// iterations, AES-256-CBC) for the key and the certificates, an
    /// HMAC-SHA256 MAC; `openssl pkcs12` reads it without `-legacy`.
    public func pkcs12(passphrase: SecureBytes, friendlyName: String? = nil) throws -> [UInt8] {
        try PKCS12File.write(self, passphrase: passphrase, friendlyName: friendlyName ?? certificate.defaultLabel)
    }

    /// The same with `iterations` of PBKDF2, for tests of the format.
    func pkcs12(passphrase: SecureBytes, iterations: Int32) throws -> [UInt8] {
        try PKCS12File.write(self, passphrase: passphrase, friendlyName: certificate.defaultLabel, iterations: iterations)
    }
}

extension AsymmetricKey {
    /// The private key as PKCS#8 PEM: `PRIVATE KEY`, or with a passphrase
    /// `ENCRYPTED PRIVATE KEY` (PBES2: PBKDF2-HMAC-SHA256 with 600,000
    /// iterations, AES-256-CBC; read by OpenSSL, Python, Java, Go).
    public func pkcs8PEM(passphrase: SecureBytes? = nil) throws -> SecureBytes {
        let der = try requirePrivate("a PKCS#8 export")
        guard let passphrase else { return try PEM.encodeSecret(label: "PRIVATE KEY", der) }
        return try PEM.encodeSecret(label: "ENCRYPTED PRIVATE KEY", try PKCS12File.encryptPKCS8(self, passphrase: passphrase))
    }

    /// The same with `iterations` of PBKDF2, for tests of the format.
    func pkcs8PEM(passphrase: SecureBytes, iterations: Int32) throws -> SecureBytes {
        _ = try requirePrivate("a PKCS#8 export")
        return try PEM.encodeSecret(label: "ENCRYPTED PRIVATE KEY", try PKCS12File.encryptPKCS8(self, passphrase: passphrase, iterations: iterations))
    }

    /// The private key in OpenSSH's format (`-----BEGIN OPENSSH PRIVATE
    /// KEY-----`), unencrypted or, with a passphrase, aes256-ctr with
    /// bcrypt_pbkdf at 16 rounds as ssh-keygen writes. errSecParam for X25519.
    public func openSSHPrivateKey(comment: String = "", passphrase: SecureBytes? = nil) throws -> SecureBytes {
        try OpenSSHKeyFile.write(self, comment: comment, passphrase: passphrase)
    }

    /// The same with `rounds` of bcrypt_pbkdf, for tests of the format.
    func openSSHPrivateKey(comment: String, passphrase: SecureBytes, rounds: Int) throws -> SecureBytes {
        try OpenSSHKeyFile.write(self, comment: comment, passphrase: passphrase, rounds: rounds)
    }

    /// The public key as SubjectPublicKeyInfo DER (`openssl pkey -pubin -inform DER`).
    public var publicKeyDER: [UInt8] { subjectPublicKeyInfo }
}
