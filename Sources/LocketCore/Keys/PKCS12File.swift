import CCrypto

// PKCS#12 (RFC 7292) in and out, through libcrypto; and the encrypted
// PKCS#8 both share. What the static libcrypto can't decrypt (RC2, RC4,
// single DES: the legacy provider is a shared module) is recognized by its
// algorithm identifiers and refused with a conversion that works.

enum PKCS12File {
    /// PBKDF2-HMAC-SHA256 iterations for what locket encrypts (OWASP's
    /// 2023 figure); the PKCS#12 MAC uses as many, so that the MAC is no
    /// cheaper a way to test passphrases than the encryption.
    static let iterations: Int32 = 600_000

    /// What a PKCS#12 file holds.
    struct Contents {
        var key: AsymmetricKey?
        var certificate: Certificate?
        var chain: [Certificate] = []
        var label: String?
    }

    /// Reads DER PKCS#12. The passphrase is asked only when the empty one
    /// does not open the file; a wrong one is errSecAuthFailed.
    static func read(_ bytes: UnsafeRawBufferPointer, passphrase: () throws -> SecureBytes) throws -> Contents {
        let p12 = try OpenSSL.read(bytes, "PKCS#12 file", free: PKCS12_free) { d2i_PKCS12(nil, $0, $1) }
        defer { PKCS12_free(p12) }
        try checkMACWork(p12)

        // An empty passphrase is written either as no password or as "": try both before asking.
        var password: SecureBytes? = nil
        var opened = false
        if PKCS12_mac_present(p12) == 1 {
            if PKCS12_verify_mac(p12, nil, 0) == 1 {
                opened = true
            } else if PKCS12_verify_mac(p12, "", 0) == 1 {
                password = try SecureBytes(count: 1)
                opened = true
            }
            ERR_clear_error()
            if !opened {
                let given = try cString(try passphrase())
                let ok = given.withUnsafeBytes { PKCS12_verify_mac(p12, $0.baseAddress!.assumingMemoryBound(to: CChar.self), -1) }
                ERR_clear_error()
                guard ok == 1 else { throw KeychainError(.authFailed, "the passphrase is not correct for this PKCS#12 file") }
                password = given
            }
        } else {
            password = try cString(try passphrase())
        }

        try checkEncryptionWork(p12, password: password)
        var pkey: OpaquePointer?, cert: OpaquePointer?, ca: OpaquePointer?
        let parsed: Int32
        if let password {
            parsed = password.withUnsafeBytes { PKCS12_parse(p12, $0.baseAddress!.assumingMemoryBound(to: CChar.self), &pkey, &cert, &ca) }
        } else {
            parsed = PKCS12_parse(p12, nil, &pkey, &cert, &ca)
        }
        let evp = pkey.map { EVPKey(taking: $0) }
        defer {
            X509_free(cert)
            if let ca {
                for i in 0..<OPENSSL_sk_num(ca) { X509_free(OpaquePointer(OPENSSL_sk_value(ca, i))) }
                OPENSSL_sk_free(ca)
            }
        }
        guard parsed == 1 else {
            if let legacy = LegacyAlgorithms.found(in: bytes) { throw LegacyAlgorithms.error(legacy, what: "PKCS#12 file") }
            if PKCS12_mac_present(p12) == 1 { throw OpenSSL.failure(.decode, "the PKCS#12 file could not be read") }
            throw OpenSSL.failure(.authFailed, "the PKCS#12 file could not be decrypted (wrong passphrase?)")
        }
        var contents = Contents()
        if let evp { contents.key = try AsymmetricKey(evp: evp, isPrivate: true) }
        if let cert {
            contents.certificate = try certificate(cert)
            var length: Int32 = 0
            if let alias = X509_alias_get0(cert, &length), length > 0 {
                contents.label = String(decoding: UnsafeBufferPointer(start: alias, count: Int(length)), as: UTF8.self)
            }
        }
        if let ca {
            for i in 0..<OPENSSL_sk_num(ca) {
                contents.chain.append(try certificate(OpaquePointer(OPENSSL_sk_value(ca, i))!))
            }
        }
        return contents
    }

    private static func certificate(_ x509: OpaquePointer) throws -> Certificate {
        try Certificate(der: try OpenSSL.der("a certificate in the PKCS#12 file", .decode) { i2d_X509(x509, $0) })
    }

    /// `secret` with a NUL after it, as libcrypto's password arguments need.
    static func cString(_ secret: SecureBytes) throws -> SecureBytes {
        let out = try SecureBytes(count: secret.count + 1)
        try secret.withUnsafeBytes { src in
            guard !src.contains(0) else { throw KeychainError(.param, "a passphrase can't contain a NUL byte") }
            out.withUnsafeMutableBytes { dst in
                if src.count > 0 { dst.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: src.count) }
            }
        }
        return out
    }

    /// A PKCS#12 of `identity` under `passphrase`: key and certificates in
    /// PBES2 (PBKDF2-HMAC-SHA256, AES-256-CBC), HMAC-SHA256 MAC.
    static func write(_ identity: Identity, passphrase: SecureBytes, friendlyName: String?, iterations: Int32 = iterations) throws -> [UInt8] {
        guard passphrase.count > 0 else { throw KeychainError(.param, "a PKCS#12 export needs a passphrase") }
        try OpenSSL.ready()
        let pass = try cString(passphrase)
        let pkcs8 = try identity.key.requirePrivate("a PKCS#12 identity")
        let evp = try pkcs8.withUnsafeBytes { try EVPKey(pkcs8: $0) }
        var x509s: [OpaquePointer] = []
        defer { for x in x509s { X509_free(x) } }
        for certificate in [identity.certificate] + identity.chain {
            let x = try certificate.der.withUnsafeBytes { raw in
                var p: UnsafePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
                return try OpenSSL.check(d2i_X509(nil, &p, raw.count), .decode, "invalid certificate")
            }
            x509s.append(x)
        }
        let ca = try OpenSSL.check(OPENSSL_sk_new_null(), .io, "out of memory")
        defer { OPENSSL_sk_free(ca) }
        for x in x509s.dropFirst() { guard OPENSSL_sk_push(ca, UnsafeRawPointer(x)) > 0 else { throw OpenSSL.failure(.io, "out of memory") } }
        let p12 = try pass.withUnsafeBytes { pw in
            let password = pw.baseAddress!.assumingMemoryBound(to: CChar.self)
            // mac_iter -1: no MAC here; it is set below with SHA-256.
            let p12 = try OpenSSL.check(PKCS12_create_ex(password, friendlyName, evp.pointer, x509s[0], ca, NID_aes_256_cbc, NID_aes_256_cbc,
                                                         iterations, -1, 0, nil, nil), .param, "the PKCS#12 file could not be made")
            do {
                try OpenSSL.check(PKCS12_set_mac(p12, password, -1, nil, 0, iterations, EVP_sha256()), .param, "the PKCS#12 MAC could not be made")
            } catch {
                PKCS12_free(p12)
                throw error
            }
            return p12
        }
        defer { PKCS12_free(p12) }
        return try OpenSSL.der("the PKCS#12 file") { i2d_PKCS12(p12, $0) }
    }

    /// Encrypted PKCS#8 (EncryptedPrivateKeyInfo DER) to a private key.
    static func decryptPKCS8(_ der: UnsafeRawBufferPointer, passphrase: SecureBytes) throws -> EVPKey {
        let sig = try OpenSSL.read(der, "encrypted PKCS#8 private key", free: X509_SIG_free) { d2i_X509_SIG(nil, $0, $1) }
        defer { X509_SIG_free(sig) }
        try checkPKCS8Work(sig, what: "encrypted private key")
        let pass = try cString(passphrase)
        let info = pass.withUnsafeBytes { PKCS8_decrypt_ex(sig, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(passphrase.count), nil, nil) }
        guard let info else {
            if let legacy = LegacyAlgorithms.found(in: der) { throw LegacyAlgorithms.error(legacy, what: "private key") }
            ERR_clear_error()
            throw KeychainError(.authFailed, "the passphrase is not correct for this encrypted private key")
        }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        return EVPKey(taking: try OpenSSL.check(EVP_PKCS82PKEY(info), .decode, "unusable PKCS#8 private key"))
    }

    /// `key` as EncryptedPrivateKeyInfo DER: PBES2 with PBKDF2-HMAC-SHA256
    /// and AES-256-CBC, in guarded memory (then PEM-armoured by the caller).
    static func encryptPKCS8(_ key: AsymmetricKey, passphrase: SecureBytes, iterations: Int32 = iterations) throws -> SecureBytes {
        guard passphrase.count > 0 else { throw KeychainError(.param, "an empty passphrase does not encrypt") }
        let pkcs8 = try key.requirePrivate("an encrypted private key")
        let evp = try pkcs8.withUnsafeBytes { try EVPKey(pkcs8: $0) }
        let info = try OpenSSL.check(EVP_PKEY2PKCS8(evp.pointer), .param, "the private key could not be encoded")
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        let pass = try cString(passphrase)
        let sig = try pass.withUnsafeBytes { pw in
            try OpenSSL.check(PKCS8_encrypt_ex(-1, EVP_aes_256_cbc(), pw.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(passphrase.count),
                                               nil, 0, iterations, info, nil, nil), .param, "the private key could not be encrypted")
        }
        defer { X509_SIG_free(sig) }
        return try OpenSSL.secureDER("the private key") { i2d_X509_SIG(sig, $0) }
    }
}

/// Encryption algorithms of old PKCS#12 and PKCS#8 files that live in
/// libcrypto's legacy provider, a shared module a static executable can't load.
enum LegacyAlgorithms {
    private static let rsadsi: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D]
    /// DER OBJECT IDENTIFIERs, tag and length included, and their names.
    private static let identifiers: [([UInt8], String)] = [
        ([0x06, 0x0A] + rsadsi + [0x01, 0x0C, 0x01, 0x01], "RC4-128"),
        ([0x06, 0x0A] + rsadsi + [0x01, 0x0C, 0x01, 0x02], "RC4-40"),
        ([0x06, 0x0A] + rsadsi + [0x01, 0x0C, 0x01, 0x05], "RC2-128"),
        ([0x06, 0x0A] + rsadsi + [0x01, 0x0C, 0x01, 0x06], "RC2-40"),
        ([0x06, 0x09] + rsadsi + [0x01, 0x05, 0x03], "DES (PBES1 MD5)"),
        ([0x06, 0x09] + rsadsi + [0x01, 0x05, 0x06], "RC2 (PBES1 MD5)"),
        ([0x06, 0x09] + rsadsi + [0x01, 0x05, 0x0A], "DES (PBES1 SHA-1)"),
        ([0x06, 0x09] + rsadsi + [0x01, 0x05, 0x0B], "RC2 (PBES1 SHA-1)"),
        ([0x06, 0x08] + rsadsi + [0x03, 0x02], "RC2-CBC"),
        ([0x06, 0x05, 0x2B, 0x0E, 0x03, 0x02, 0x07], "DES-CBC"),
    ]

    /// The name of the first legacy algorithm the DER names, if any. The
    /// identifiers sit in the clear (algorithm parameters are not encrypted).
    static func found(in der: UnsafeRawBufferPointer) -> String? {
        for (oid, name) in identifiers where PEM.find(oid, in: der, from: 0) != nil { return name }
        return nil
    }

    /// errSecParam naming the algorithm (reason `.legacyEncryption`: the command line words the conversion).
    static func error(_ name: String, what: String) -> KeychainError {
        ERR_clear_error()
        return KeychainError(.param, "the \(what) is encrypted with \(name), a legacy algorithm locket can't read",
                             reason: .legacyEncryption(pkcs12: what == "PKCS#12 file"))
    }
}
