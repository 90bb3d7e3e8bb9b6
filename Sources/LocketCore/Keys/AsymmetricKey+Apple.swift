import CCrypto

// What Apple's SecKey API shows of a key, for the Security module: the
// attributes a key item of it would have, and Apple's external
// representation of a private key (what SecKeyCopyExternalRepresentation
// returns and SecKeyCreateWithData takes, and what a key item's
// kSecValueData holds): PKCS#1 RSAPrivateKey DER for RSA, the X9.63 form
// 04||X||Y||K for EC, the raw 32 bytes for Ed25519 and X25519 (the public
// forms are `publicKeyExternalRepresentation`). The private key passes only
// through guarded memory and libcrypto's secure heap.

extension AsymmetricKey {
    /// The private key in Apple's external representation, in guarded
    /// memory; errSecParam for a public key.
    public func privateKeyExternalRepresentation() throws -> SecureBytes {
        let pkcs8 = try requirePrivate("a private key's external representation")
        let evp = try pkcs8.withUnsafeBytes { try EVPKey(pkcs8: $0) }
        switch keyType {
        case .ed25519, .x25519:
            return try evp.rawPrivateKey()
        case .ec:
            let scalar = try evp.secretNumber("priv", width: curve!.byteCount)
            let out = try SecureBytes(count: publicKeyExternalRepresentation.count + scalar.count)
            out.withUnsafeMutableBytes { o in
                publicKeyExternalRepresentation.withUnsafeBytes { o.copyMemory(from: $0) }
                scalar.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: o[publicKeyExternalRepresentation.count...]).copyMemory(from: $0) }
            }
            return out
        case .rsa:
            // i2d_PrivateKey writes an RSA key's "type-specific" form: PKCS#1 RSAPrivateKey.
            return try OpenSSL.secureDER("the RSA private key") { i2d_PrivateKey(evp.pointer, $0) }
        }
    }

    /// A private key from Apple's external representation of `keyType`:
    /// errSecDecode when the bytes are not one (an EC point off its curve, a
    /// scalar that does not match it, a malformed RSAPrivateKey).
    public init(privateKeyExternalRepresentation bytes: SecureBytes, keyType: KeyType) throws {
        try OpenSSL.ready()
        let evp: EVPKey = try bytes.withUnsafeBytes { raw in
            switch keyType {
            case .ed25519, .x25519:
                guard raw.count == 32 else { throw KeychainError(.decode, "a \(keyType.rawValue) private key is 32 bytes") }
                return EVPKey(taking: try Curve25519PKCS8.key(keyType, raw))
            case .ec:
                guard let curve = EllipticCurve.allCases.first(where: { 1 + 3 * $0.byteCount == raw.count }), raw.first == 4 else {
                    throw KeychainError(.decode, "not an X9.63 P-256, P-384 or P-521 private key (04 || X || Y || K)")
                }
                let point = UnsafeRawBufferPointer(rebasing: raw[..<(1 + 2 * curve.byteCount)])
                let scalar = UnsafeRawBufferPointer(rebasing: raw[(1 + 2 * curve.byteCount)...])
                let key = try KeyParameters.ecKeyPair(curve: curve, point: point, scalar: scalar)
                try key.checkPair()
                return key
            case .rsa:
                return EVPKey(taking: try OpenSSL.read(raw, "PKCS#1 RSA private key", free: EVP_PKEY_free) { d2i_PrivateKey(EVP_PKEY_RSA, nil, $0, $1) })
            }
        }
        try self.init(evp: evp, isPrivate: true)
        guard self.keyType == keyType else { throw KeychainError(.decode, "the key data is not a \(keyType.rawValue) key") }
    }

    /// The attributes a key item of this key has (SPEC §12: class, type,
    /// sizes, application label, usage flags, extractable), as `import`
    /// and `key generate` store them: for a key that is in no keychain.
    public func itemAttributes(extractable: Bool) -> [Attribute: [UInt8]] {
        KeyAttributes.of(self, label: nil, tag: nil, extractable: extractable)
    }
}

extension ImportedItems {
    /// Keys and certificates made in memory (the Security module's SecKey
    /// and SecCertificate objects), held as a parsed file would hold them,
    /// so that `Keychain.addKeyFile` adds them in one transaction.
    /// `keyIndex` pairs a certificate with its private key in `keys`.
    public init(keys: [(key: AsymmetricKey, label: String?)], certificates: [(certificate: Certificate, label: String?, keyIndex: Int?)]) {
        self.keys = keys.map { ImportedKey(key: $0.key, label: $0.label) }
        self.certificates = certificates.map { ImportedCertificate(certificate: $0.certificate, label: $0.label, keyIndex: $0.keyIndex) }
        format = .der
    }
}

extension KeyParameters {
    /// An EC key pair from its curve, uncompressed public point and private
    /// scalar (big-endian); the caller checks that they pair.
    static func ecKeyPair(curve: EllipticCurve, point: UnsafeRawBufferPointer, scalar: UnsafeRawBufferPointer) throws -> EVPKey {
        try build { bld, numbers in
            try push(OSSL_PARAM_BLD_push_utf8_string(bld, OpenSSL.cString("group"), OpenSSL.cString(curve.groupName), 0))
            try push(OSSL_PARAM_BLD_push_octet_string(bld, OpenSSL.cString("pub"), point.baseAddress, point.count))
            let bn = try secureNumber(scalar)
            numbers.append(bn)
            try push(OSSL_PARAM_BLD_push_BN(bld, OpenSSL.cString("priv"), bn))
        } make: { try EVPKey(name: "EC", selection: locket_evp_pkey_keypair(), params: $0) }
    }
}
