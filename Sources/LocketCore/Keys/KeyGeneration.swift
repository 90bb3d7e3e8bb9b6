import CCrypto

// New key pairs (`key generate --type`), from libcrypto's generators on its
// default DRBG; the private key leaves libcrypto only as PKCS#8 in guarded memory.

extension AsymmetricKey {
    /// A new private key of `type`.
    public static func generate(_ type: KeyGenerationType) throws -> AsymmetricKey {
        let evp: EVPKey
        switch type {
        case .ed25519: evp = try KeyGeneration.generate("ED25519") { _ in }
        case .x25519: evp = try KeyGeneration.generate("X25519") { _ in }
        case .p256: evp = try KeyGeneration.ec(.p256)
        case .p384: evp = try KeyGeneration.ec(.p384)
        case .p521: evp = try KeyGeneration.ec(.p521)
        case .rsa1024, .rsa2048, .rsa3072, .rsa4096:
            evp = try KeyGeneration.generate("RSA") { ctx in
                try OpenSSL.check(EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(type.sizeInBits)), .param, "RSA key size")
            }
        }
        return try AsymmetricKey(evp: evp, isPrivate: true)
    }
}

enum KeyGeneration {
    static func generate(_ name: StaticString, configure: (OpaquePointer) throws -> Void) throws -> EVPKey {
        try OpenSSL.ready()
        let ctx = try OpenSSL.check(EVP_PKEY_CTX_new_from_name(nil, OpenSSL.cString(name), nil), .param, "\(name) keys are unavailable")
        defer { EVP_PKEY_CTX_free(ctx) }
        try OpenSSL.check(EVP_PKEY_keygen_init(ctx), .param, "\(name) keys are unavailable")
        try configure(ctx)
        var key: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_generate(ctx, &key), .io, "\(name) key generation failed")
        return EVPKey(taking: try OpenSSL.check(key, .io, "\(name) key generation failed"))
    }

    /// A key pair on a NIST curve (also ECIES's ephemeral keys).
    static func ec(_ curve: EllipticCurve) throws -> EVPKey {
        try generate("EC") { ctx in
            try OpenSSL.check(EVP_PKEY_CTX_set_group_name(ctx, OpenSSL.cString(curve.groupName)), .param, "curve \(curve.groupName)")
        }
    }
}
