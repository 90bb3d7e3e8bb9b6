import CCrypto

// Apple's ECIES with SHA-256 (kSecKeyAlgorithmECIESEncryption{Standard,
// Cofactor}{,VariableIV}X963SHA256AESGCM), as Security's SecKeyAdaptors
// builds it, so that what locket encrypts SecKeyCreateDecryptedData opens
// and the other way round:
//   ephemeral key pair on the recipient's curve;
//   Z = ECDH(ephemeral private, recipient public), the x coordinate (the
//     cofactor variants ask for cofactor ECDH: the same on the NIST curves);
//   K || IV = ANSI X9.63 KDF, SHA-256, over Z with the ephemeral public key
//     (04||X||Y) as shared info: a 16-byte AES key on P-256, 32 bytes on
//     larger curves, then a 16-byte IV (the "variable IV" variant; the other
//     variant uses an all-zero IV);
//   AES-GCM with that 16-byte IV, no associated data, a 16-byte tag;
//   output: ephemeral public key || ciphertext || tag.

enum ECIES {
    static let tagLength = 16
    static let ivLength = 16

    /// The AES key length Apple picks from the recipient's point length.
    static func aesKeyLength(_ curve: EllipticCurve) -> Int {
        let fieldBits = curve.byteCount * 8
        return fieldBits > 256 ? 32 : 16
    }

    /// Which of Apple's variants: the IV derived with the key, or all zeros;
    /// cofactor ECDH or plain.
    struct Variant {
        var variableIV: Bool
        var cofactor: Bool
    }

    static func encrypt(_ plaintext: UnsafeRawBufferPointer, publicKey: EVPKey, curve: EllipticCurve, recipient: [UInt8],
                        variant: Variant) throws -> [UInt8] {
        let ephemeral = try KeyGeneration.ec(curve)
        _ = EVP_PKEY_set_utf8_string_param(ephemeral.pointer, "point-format", "uncompressed")
        let ephemeralPublic = try ephemeral.octetParam("encoded-pub-key")
        let secret = try sharedSecret(ephemeral, publicKey, cofactor: variant.cofactor)
        let keyAndIV = try derive(secret, sharedInfo: ephemeralPublic, curve: curve, variant: variant)
        var out = ephemeralPublic
        out += try gcmEncrypt(keyAndIV, curve, plaintext)
        return out
    }

    /// The AES key and the 16-byte IV: both from the KDF (the variable-IV
    /// variants), or the key from it and zeros after it.
    private static func derive(_ secret: SecureBytes, sharedInfo: [UInt8], curve: EllipticCurve, variant: Variant) throws -> SecureBytes {
        guard !variant.variableIV else { return try kdf(secret, sharedInfo: sharedInfo, length: aesKeyLength(curve) + ivLength) }
        let key = try kdf(secret, sharedInfo: sharedInfo, length: aesKeyLength(curve))
        let keyAndIV = try SecureBytes(count: aesKeyLength(curve) + ivLength)
        keyAndIV.withUnsafeMutableBytes { out in
            out.initializeMemory(as: UInt8.self, repeating: 0)
            key.withUnsafeBytes { out.copyMemory(from: $0) }
        }
        return keyAndIV
    }

    static func decrypt(_ input: UnsafeRawBufferPointer, privateKey: EVPKey, curve: EllipticCurve, variant: Variant) throws -> SecureBytes {
        try decrypt(input, curve: curve, variant: variant) { _, ephemeral in try sharedSecret(privateKey, ephemeral, cofactor: variant.cofactor) }
    }

    /// Decryption where `agree` does the ECDH with the ephemeral public key
    /// (04||X||Y, and as a libcrypto key: on the curve): a private key held
    /// elsewhere (a TPM) does only that step, as Apple's Secure Enclave does
    /// (by default in the variant its keys use: cofactor, variable IV).
    static func decrypt(_ input: UnsafeRawBufferPointer, curve: EllipticCurve, variant: Variant = Variant(variableIV: true, cofactor: true),
                        agree: ([UInt8], EVPKey) throws -> SecureBytes) throws -> SecureBytes {
        let pointLength = 1 + 2 * curve.byteCount
        guard input.count >= pointLength + tagLength else {
            throw KeychainError(.decode, "the ECIES ciphertext is shorter than a \(curve.sshName) point and a tag")
        }
        let ephemeralPublic = Array(input[0..<pointLength])
        guard ephemeralPublic[0] == 4 else { throw KeychainError(.decode, "the ECIES ciphertext does not start with an uncompressed point") }
        // A point off the curve is the ciphertext's fault, whoever holds the key.
        let ephemeral = try KeyParameters.ecPublic(curve: curve, point: ephemeralPublic)
        let secret = try agree(ephemeralPublic, ephemeral)
        let keyAndIV = try derive(secret, sharedInfo: ephemeralPublic, curve: curve, variant: variant)
        let body = UnsafeRawBufferPointer(rebasing: input[pointLength..<(input.count - tagLength)])
        let tag = UnsafeRawBufferPointer(rebasing: input[(input.count - tagLength)...])
        return try gcmDecrypt(keyAndIV, curve, body, tag: tag)
    }

    /// ECDH, cofactor ECDH when asked; the NIST curves' cofactor is 1, so
    /// both give the same secret, as Apple's comment says too.
    static func sharedSecret(_ privateKey: EVPKey, _ peer: EVPKey, cofactor: Bool) throws -> SecureBytes {
        let ctx = try OpenSSL.check(EVP_PKEY_CTX_new_from_pkey(nil, privateKey.pointer, nil), .io, "out of memory")
        defer { EVP_PKEY_CTX_free(ctx) }
        try OpenSSL.check(EVP_PKEY_derive_init(ctx), .param, "ECDH is unavailable")
        if cofactor { try OpenSSL.check(EVP_PKEY_CTX_set_ecdh_cofactor_mode(ctx, 1), .param, "cofactor ECDH is unavailable") }
        try OpenSSL.check(EVP_PKEY_derive_set_peer(ctx, peer.pointer), .decode, "the ephemeral public key is not on the curve")
        var length = 0
        try OpenSSL.check(EVP_PKEY_derive(ctx, nil, &length), .param, "ECDH failed")
        let out = try SecureBytes(count: length)
        try out.withUnsafeMutableBytes { buffer in
            try OpenSSL.check(EVP_PKEY_derive(ctx, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), &length), .param, "ECDH failed")
        }
        return out
    }

    /// ANSI X9.63 KDF with SHA-256, or `digest` (libcrypto's X963KDF).
    static func kdf(_ secret: SecureBytes, sharedInfo: [UInt8], length: Int, digest name: String = "SHA256") throws -> SecureBytes {
        let kdf = try OpenSSL.check(EVP_KDF_fetch(nil, "X963KDF", nil), .param, "the X9.63 KDF is unavailable")
        defer { EVP_KDF_free(kdf) }
        let ctx = try OpenSSL.check(EVP_KDF_CTX_new(kdf), .io, "out of memory")
        defer { EVP_KDF_CTX_free(ctx) }
        let out = try SecureBytes(count: length)
        var info = sharedInfo
        try secret.withUnsafeBytes { z in
            try info.withUnsafeMutableBytes { info in
                var digest = Array(name.utf8CString)
                try digest.withUnsafeMutableBufferPointer { digest in
                    let params = [
                        OSSL_PARAM_construct_utf8_string(OpenSSL.cString("digest"), digest.baseAddress, 0),
                        OSSL_PARAM_construct_octet_string(OpenSSL.cString("key"), UnsafeMutableRawPointer(mutating: z.baseAddress), z.count),
                        OSSL_PARAM_construct_octet_string(OpenSSL.cString("info"), info.baseAddress, info.count),
                        OSSL_PARAM_construct_end(),
                    ]
                    try out.withUnsafeMutableBytes { buffer in
                        try OpenSSL.check(EVP_KDF_derive(ctx, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), length, params), .param, "the X9.63 KDF failed")
                    }
                }
            }
        }
        return out
    }

    private static func cipher(_ curve: EllipticCurve) -> OpaquePointer? {
        aesKeyLength(curve) == 32 ? EVP_aes_256_gcm() : EVP_aes_128_gcm()
    }

    /// AES-GCM encryption with the derived key and 16-byte IV; ciphertext || tag.
    private static func gcmEncrypt(_ keyAndIV: SecureBytes, _ curve: EllipticCurve, _ plaintext: UnsafeRawBufferPointer) throws -> [UInt8] {
        let ctx = try OpenSSL.check(EVP_CIPHER_CTX_new(), .io, "out of memory")
        defer { EVP_CIPHER_CTX_free(ctx) }
        try start(ctx, keyAndIV, curve, encrypt: true)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var n: Int32 = 0
        if plaintext.count > 0 {
            try OpenSSL.check(EVP_EncryptUpdate(ctx, &out, &n, Signer.base(plaintext), Int32(plaintext.count)), .param, "AES-GCM failed")
        }
        var final: Int32 = 0
        try out.withUnsafeMutableBufferPointer { buffer in
            try OpenSSL.check(EVP_EncryptFinal_ex(ctx, buffer.baseAddress! + Int(n), &final), .param, "AES-GCM failed")
            try OpenSSL.check(EVP_CIPHER_CTX_ctrl(ctx, locket_evp_ctrl_gcm_get_tag(), Int32(tagLength), buffer.baseAddress! + plaintext.count), .param, "AES-GCM failed")
        }
        return out
    }

    private static func gcmDecrypt(_ keyAndIV: SecureBytes, _ curve: EllipticCurve, _ body: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer) throws -> SecureBytes {
        let ctx = try OpenSSL.check(EVP_CIPHER_CTX_new(), .io, "out of memory")
        defer { EVP_CIPHER_CTX_free(ctx) }
        try start(ctx, keyAndIV, curve, encrypt: false)
        let out = try SecureBytes(count: body.count + 1)
        let ok: Bool = out.withUnsafeMutableBytes { buffer in
            let p = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var n: Int32 = 0
            if body.count > 0, EVP_DecryptUpdate(ctx, p, &n, Signer.base(body), Int32(body.count)) != 1 { return false }
            var expected = Array(tag)
            guard EVP_CIPHER_CTX_ctrl(ctx, locket_evp_ctrl_gcm_set_tag(), Int32(tagLength), &expected) == 1 else { return false }
            var final: Int32 = 0
            return EVP_DecryptFinal_ex(ctx, p + Int(n), &final) == 1
        }
        guard ok else {
            // Release nothing of an unauthenticated plaintext.
            ERR_clear_error()
            throw KeychainError(.decode, "the ECIES ciphertext could not be decrypted with this key (tampered, or encrypted to another key)")
        }
        return try out.prefix(body.count)
    }

    private static func start(_ ctx: OpaquePointer, _ keyAndIV: SecureBytes, _ curve: EllipticCurve, encrypt: Bool) throws {
        let keyLength = aesKeyLength(curve)
        let initCipher = encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
        try OpenSSL.check(initCipher(ctx, cipher(curve), nil, nil, nil), .param, "AES-GCM is unavailable")
        try OpenSSL.check(EVP_CIPHER_CTX_ctrl(ctx, locket_evp_ctrl_gcm_set_ivlen(), Int32(ivLength), nil), .param, "AES-GCM with a 16-byte IV is unavailable")
        try keyAndIV.withUnsafeBytes { k in
            let base = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
            try OpenSSL.check(initCipher(ctx, nil, nil, base, base + keyLength), .param, "AES-GCM failed")
        }
    }
}
