import CCrypto
import CSodium
import LocketSupport

// Using a key without handing it out (SPEC 13): sign, verify, encrypt and
// decrypt with the algorithms of KeyAlgorithm. Each call opens the key for
// itself and frees it before returning; decrypted data comes back in guarded
// memory.

extension AsymmetricKey {
    /// The algorithms this key can use for `operation`.
    public func algorithms(for operation: KeyAlgorithm.Operation) -> [KeyAlgorithm] {
        KeyAlgorithm.supported(by: keyType, for: operation)
    }

    /// Signs `data` (the message, or for `ecdsa-digest-*` its digest) with
    /// this private key. ECDSA signatures are X9.62 DER, as Apple's.
    /// errSecParam for a public key or an algorithm the key can't use.
    public func sign(_ data: [UInt8], algorithm: KeyAlgorithm) throws -> [UInt8] {
        try data.withUnsafeBytes { try sign(raw: $0, algorithm: algorithm) }
    }

    /// Signs data held in guarded memory.
    public func sign(_ data: SecureBytes, algorithm: KeyAlgorithm) throws -> [UInt8] {
        try data.withUnsafeBytes { try sign(raw: $0, algorithm: algorithm) }
    }

    /// True when `signature` is this key's signature of `data` with
    /// `algorithm` (a private key verifies with its public half); false for
    /// any signature that does not verify, malformed ones included.
    public func verify(signature: [UInt8], for data: [UInt8], algorithm: KeyAlgorithm) throws -> Bool {
        try check(algorithm, .sign)
        if algorithm.signsDigest { try checkDigestLength(data.count, algorithm) }
        return try withPublicEVP { evp in
            try data.withUnsafeBytes { message in
                try signature.withUnsafeBytes { sig in try Signer.verify(evp, algorithm, sig, message) }
            }
        }
    }

    /// Encrypts `plaintext` to this key (a private key encrypts to its public half).
    public func encrypt(_ plaintext: [UInt8], algorithm: KeyAlgorithm) throws -> [UInt8] {
        try plaintext.withUnsafeBytes { try encrypt(raw: $0, algorithm: algorithm) }
    }

    /// Encrypts a plaintext held in guarded memory.
    public func encrypt(_ plaintext: SecureBytes, algorithm: KeyAlgorithm) throws -> [UInt8] {
        try plaintext.withUnsafeBytes { try encrypt(raw: $0, algorithm: algorithm) }
    }

    /// Decrypts `ciphertext` with this private key, into guarded memory.
    /// errSecDecode when it does not decrypt (tampered, truncated, or for another key).
    public func decrypt(_ ciphertext: [UInt8], algorithm: KeyAlgorithm) throws -> SecureBytes {
        try check(algorithm, .encrypt)
        let pkcs8 = try requirePrivate("decrypting")
        return try ciphertext.withUnsafeBytes { input in
            switch algorithm {
            case .x25519SealedBox:
                return try SealedBox.open(input, key: self, pkcs8: pkcs8)
            case _ where algorithm.ecies != nil:
                let variant = ECIES.Variant(variableIV: algorithm.ecies!.variableIV, cofactor: algorithm.ecies!.cofactor)
                return try withEVP { try ECIES.decrypt(input, privateKey: $0, curve: curve!, variant: variant) }
            default:
                return try withEVP { try RSACipher.decrypt(input, evp: $0, algorithm: algorithm, keyBytes: (sizeInBits + 7) / 8) }
            }
        }
    }

    func sign(raw data: UnsafeRawBufferPointer, algorithm: KeyAlgorithm) throws -> [UInt8] {
        try check(algorithm, .sign)
        _ = try requirePrivate("signing")
        if algorithm.signsDigest { try checkDigestLength(data.count, algorithm) }
        return try withEVP { try Signer.sign($0, algorithm, data) }
    }

    func encrypt(raw plaintext: UnsafeRawBufferPointer, algorithm: KeyAlgorithm) throws -> [UInt8] {
        try check(algorithm, .encrypt)
        switch algorithm {
        case .x25519SealedBox:
            return try SealedBox.seal(plaintext, to: publicKeyExternalRepresentation)
        case _ where algorithm.ecies != nil:
            let variant = ECIES.Variant(variableIV: algorithm.ecies!.variableIV, cofactor: algorithm.ecies!.cofactor)
            return try withPublicEVP {
                try ECIES.encrypt(plaintext, publicKey: $0, curve: curve!, recipient: publicKeyExternalRepresentation, variant: variant)
            }
        default:
            return try withPublicEVP { try RSACipher.encrypt(plaintext, evp: $0, algorithm: algorithm, keyBytes: (sizeInBits + 7) / 8) }
        }
    }

    /// errSecParam unless `algorithm` does `operation` on this key's type.
    private func check(_ algorithm: KeyAlgorithm, _ operation: KeyAlgorithm.Operation) throws {
        _ = try KeyAlgorithm.named(algorithm.rawValue, for: self, operation: operation)
    }

    private func checkDigestLength(_ count: Int, _ algorithm: KeyAlgorithm) throws {
        guard count == algorithm.digestLength else {
            throw KeychainError(.param, "\(algorithm.rawValue) signs a \(algorithm.digestLength)-byte digest, not \(count) bytes")
        }
    }
}

/// Signatures through libcrypto's EVP_DigestSign (messages) and EVP_PKEY_sign (digests).
enum Signer {
    static func sign(_ evp: EVPKey, _ algorithm: KeyAlgorithm, _ data: UnsafeRawBufferPointer) throws -> [UInt8] {
        if algorithm.signsDigest {
            let ctx = try OpenSSL.check(EVP_PKEY_CTX_new_from_pkey(nil, evp.pointer, nil), .io, "out of memory")
            defer { EVP_PKEY_CTX_free(ctx) }
            try OpenSSL.check(EVP_PKEY_sign_init(ctx), .param, "the key can't sign")
            var length = 0
            try OpenSSL.check(EVP_PKEY_sign(ctx, nil, &length, base(data), data.count), .param, "signing failed")
            var out = [UInt8](repeating: 0, count: length)
            try OpenSSL.check(EVP_PKEY_sign(ctx, &out, &length, base(data), data.count), .param, "signing failed")
            return Array(out.prefix(length))
        }
        let md = try OpenSSL.check(EVP_MD_CTX_new(), .io, "out of memory")
        defer { EVP_MD_CTX_free(md) }
        var pctx: OpaquePointer?
        try OpenSSL.check(EVP_DigestSignInit_ex(md, &pctx, algorithm.digestName, nil, nil, evp.pointer, nil), .param, "the key can't sign with \(algorithm.rawValue)")
        try configure(pctx, algorithm)
        var length = 0
        try OpenSSL.check(EVP_DigestSign(md, nil, &length, base(data), data.count), .param, "signing failed")
        var out = [UInt8](repeating: 0, count: length)
        try OpenSSL.check(EVP_DigestSign(md, &out, &length, base(data), data.count), .param, "signing failed")
        return Array(out.prefix(length))
    }

    static func verify(_ evp: EVPKey, _ algorithm: KeyAlgorithm, _ signature: UnsafeRawBufferPointer, _ data: UnsafeRawBufferPointer) throws -> Bool {
        defer { ERR_clear_error() }
        if algorithm.signsDigest {
            let ctx = try OpenSSL.check(EVP_PKEY_CTX_new_from_pkey(nil, evp.pointer, nil), .io, "out of memory")
            defer { EVP_PKEY_CTX_free(ctx) }
            try OpenSSL.check(EVP_PKEY_verify_init(ctx), .param, "the key can't verify")
            return EVP_PKEY_verify(ctx, base(signature), signature.count, base(data), data.count) == 1
        }
        let md = try OpenSSL.check(EVP_MD_CTX_new(), .io, "out of memory")
        defer { EVP_MD_CTX_free(md) }
        var pctx: OpaquePointer?
        try OpenSSL.check(EVP_DigestVerifyInit_ex(md, &pctx, algorithm.digestName, nil, nil, evp.pointer, nil), .param, "the key can't verify with \(algorithm.rawValue)")
        try configure(pctx, algorithm)
        return EVP_DigestVerify(md, base(signature), signature.count, base(data), data.count) == 1
    }

    /// RSA padding: PSS with MGF1 on the same digest and a digest-long salt
    /// (Apple's choice), or PKCS #1 v1.5.
    private static func configure(_ pctx: OpaquePointer?, _ algorithm: KeyAlgorithm) throws {
        switch algorithm {
        case .rsaSignatureMessagePSSSHA256, .rsaSignatureMessagePSSSHA384, .rsaSignatureMessagePSSSHA512:
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING), .param, "RSA-PSS is unavailable")
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST), .param, "RSA-PSS is unavailable")
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_mgf1_md_name(pctx, algorithm.digestName, nil), .param, "RSA-PSS is unavailable")
        case .rsaSignatureMessagePKCS1v15SHA256, .rsaSignatureMessagePKCS1v15SHA384, .rsaSignatureMessagePKCS1v15SHA512:
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING), .param, "RSA PKCS #1 v1.5 is unavailable")
        default:
            break
        }
    }

    /// A pointer libcrypto accepts for an empty buffer too.
    static func base(_ data: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
        data.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? Signer.empty
    }

    nonisolated(unsafe) private static let empty: UnsafePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        p.initialize(to: 0)
        return UnsafePointer(p)
    }()
}

/// RSAES-OAEP with the same digest for OAEP and MGF1 and an empty label, as
/// Apple's; and raw RSA (kSecKeyAlgorithmRSAEncryptionRaw): a block of the
/// modulus's length in and out, no padding.
enum RSACipher {
    private static func context(_ evp: EVPKey, _ algorithm: KeyAlgorithm, decrypt: Bool) throws -> OpaquePointer {
        let ctx = try OpenSSL.check(EVP_PKEY_CTX_new_from_pkey(nil, evp.pointer, nil), .io, "out of memory")
        do {
            try OpenSSL.check(decrypt ? EVP_PKEY_decrypt_init(ctx) : EVP_PKEY_encrypt_init(ctx), .param, "the key can't \(decrypt ? "decrypt" : "encrypt")")
            if algorithm == .rsaEncryptionRaw {
                try OpenSSL.check(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_NO_PADDING), .param, "raw RSA is unavailable")
                return ctx
            }
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING), .param, "RSA-OAEP is unavailable")
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_oaep_md_name(ctx, algorithm.digestName, nil), .param, "RSA-OAEP is unavailable")
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_mgf1_md_name(ctx, algorithm.digestName, nil), .param, "RSA-OAEP is unavailable")
        } catch {
            EVP_PKEY_CTX_free(ctx)
            throw error
        }
        return ctx
    }

    static func encrypt(_ plaintext: UnsafeRawBufferPointer, evp: EVPKey, algorithm: KeyAlgorithm, keyBytes: Int) throws -> [UInt8] {
        let limit = algorithm == .rsaEncryptionRaw ? keyBytes : keyBytes - 2 * algorithm.digestLength - 2
        guard plaintext.count <= limit else {
            throw KeychainError(.param, "\(algorithm.rawValue) with a \(keyBytes * 8)-bit key encrypts at most \(ByteSize.text(limit)), not \(ByteSize.text(plaintext.count))")
        }
        if algorithm == .rsaEncryptionRaw {
            // A number below the modulus, as a block of the modulus's length (Apple's input is a big-endian integer).
            var block = [UInt8](repeating: 0, count: keyBytes - plaintext.count) + Array(plaintext)
            defer { LocketSupport.wipe(&block) }
            return try block.withUnsafeBytes { try raw($0, evp: evp, algorithm: algorithm) }
        }
        return try raw(plaintext, evp: evp, algorithm: algorithm)
    }

    private static func raw(_ plaintext: UnsafeRawBufferPointer, evp: EVPKey, algorithm: KeyAlgorithm) throws -> [UInt8] {
        let ctx = try context(evp, algorithm, decrypt: false)
        defer { EVP_PKEY_CTX_free(ctx) }
        var length = 0
        try OpenSSL.check(EVP_PKEY_encrypt(ctx, nil, &length, Signer.base(plaintext), plaintext.count), .param, "encryption failed")
        var out = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_encrypt(ctx, &out, &length, Signer.base(plaintext), plaintext.count) == 1 else {
            ERR_clear_error()
            throw KeychainError(.param, algorithm == .rsaEncryptionRaw ? "the block is not smaller than the key's modulus" : "encryption failed")
        }
        return Array(out.prefix(length))
    }

    static func decrypt(_ ciphertext: UnsafeRawBufferPointer, evp: EVPKey, algorithm: KeyAlgorithm, keyBytes: Int) throws -> SecureBytes {
        if algorithm == .rsaEncryptionRaw && ciphertext.count < keyBytes {
            let block = [UInt8](repeating: 0, count: keyBytes - ciphertext.count) + Array(ciphertext)
            return try block.withUnsafeBytes { try decrypt($0, evp: evp, algorithm: algorithm, keyBytes: keyBytes) }
        }
        guard algorithm != .rsaEncryptionRaw || ciphertext.count == keyBytes else {
            throw KeychainError(.param, "rsa-encryption-raw with a \(keyBytes * 8)-bit key decrypts a block of \(keyBytes) bytes, not \(ciphertext.count)")
        }
        let ctx = try context(evp, algorithm, decrypt: true)
        defer { EVP_PKEY_CTX_free(ctx) }
        var length = 0
        try OpenSSL.check(EVP_PKEY_decrypt(ctx, nil, &length, Signer.base(ciphertext), ciphertext.count), .decode, "the data could not be decrypted")
        let out = try SecureBytes(count: length)
        try out.withUnsafeMutableBytes { buffer in
            // libcrypto's message names the padding check; the caller learns only that it failed.
            guard EVP_PKEY_decrypt(ctx, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), &length, Signer.base(ciphertext), ciphertext.count) == 1 else {
                ERR_clear_error()
                throw KeychainError(.decode, "the data could not be decrypted with this key and \(algorithm.rawValue)")
            }
        }
        return try out.prefix(length)
    }
}
