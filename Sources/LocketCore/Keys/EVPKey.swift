import CCrypto
import CSodium
import LocketSupport

// libcrypto's EVP_PKEY, held only for the length of one operation: made from
// the DER locket keeps (PKCS#8 in guarded memory, or SPKI), used, and freed
// (libcrypto wipes private key material when it frees it). Also the digests
// and base64 the key layer uses.

/// An EVP_PKEY owned by Swift; freed on deinit.
final class EVPKey {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    /// A private key from PKCS#8 PrivateKeyInfo DER.
    convenience init(pkcs8 der: UnsafeRawBufferPointer) throws {
        if let (type, privateKey) = Curve25519PKCS8.split(der) {
            self.init(taking: try Curve25519PKCS8.key(type, privateKey))
            return
        }
        if let parts = ECPrivateKeyPKCS8.split(der) {
            // One more reference for this object; `key` lets go of its own.
            let key = try ECPrivateKeyPKCS8.key(der, parts)
            try OpenSSL.check(EVP_PKEY_up_ref(key.pointer), .io, "cannot hold the key")
            self.init(taking: key.pointer)
            return
        }
        let info = try OpenSSL.read(der, "PKCS#8 private key", free: PKCS8_PRIV_KEY_INFO_free) { d2i_PKCS8_PRIV_KEY_INFO(nil, $0, $1) }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        self.init(taking: try OpenSSL.check(EVP_PKCS82PKEY(info), .decode, "unusable PKCS#8 private key"))
    }

    /// A public key from SubjectPublicKeyInfo DER.
    convenience init(spki der: UnsafeRawBufferPointer) throws {
        self.init(taking: try OpenSSL.read(der, "SubjectPublicKeyInfo public key", free: EVP_PKEY_free) { d2i_PUBKEY(nil, $0, $1) })
    }

    /// A key from libcrypto parameters (OpenSSH key files, raw public keys).
    /// `name` is static: libcrypto 3.0 keeps the pointer in the context.
    convenience init(name: StaticString, selection: Int32, params: UnsafeMutablePointer<OSSL_PARAM>) throws {
        try OpenSSL.ready()
        let ctx = try OpenSSL.check(EVP_PKEY_CTX_new_from_name(nil, OpenSSL.cString(name), nil), .param, "unsupported key type \(name)")
        defer { EVP_PKEY_CTX_free(ctx) }
        try OpenSSL.check(EVP_PKEY_fromdata_init(ctx), .decode, "invalid \(name) key")
        var key: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_fromdata(ctx, &key, selection, params), .decode, "invalid \(name) key")
        self.init(taking: try OpenSSL.check(key, .decode, "invalid \(name) key"))
    }

    /// What locket calls the key: type and size, or errSecParam for what it does not support.
    func describe() throws -> (type: KeyType, bits: Int) {
        switch EVP_PKEY_get_base_id(pointer) {
        case EVP_PKEY_RSA:
            let bits = Int(EVP_PKEY_get_bits(pointer))
            // Apple's bounds: it makes keys of 512 to 8192 bits and opens any up
            // to 8192 (a 1023-bit modulus among them). The ceiling keeps a
            // hostile key file from making every use of it slow; the floor is
            // libcrypto's smallest RSA key.
            guard (512...8192).contains(bits) else { throw KeychainError(.param, "RSA keys of \(bits) bits are not supported (512 to 8192)") }
            return (.rsa, bits)
        case EVP_PKEY_EC:
            guard let curve = curve else { throw KeychainError(.param, "elliptic curve '\(groupName ?? "explicit parameters")' is not supported (P-256, P-384, P-521)") }
            return (.ec, curve.rawValue)
        case EVP_PKEY_ED25519: return (.ed25519, 256)
        case EVP_PKEY_X25519: return (.x25519, 256)
        case EVP_PKEY_RSA_PSS: throw KeychainError(.param, "RSA-PSS-restricted keys are not supported; use an rsaEncryption key")
        default:
            let name = EVP_PKEY_get0_type_name(pointer).map { String(cString: $0) } ?? "unknown"
            throw KeychainError(.param, "\(name) keys are not supported (RSA, EC P-256/P-384/P-521, Ed25519, X25519)")
        }
    }

    var groupName: String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &buffer, buffer.count, &length) == 1 else { return nil }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    var curve: EllipticCurve? { groupName.flatMap(EllipticCurve.init(groupName:)) }

    /// PKCS#8 PrivateKeyInfo DER, written straight into guarded memory.
    func pkcs8() throws -> SecureBytes {
        let info = try OpenSSL.check(EVP_PKEY2PKCS8(pointer), .param, "the private key could not be encoded")
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        return try OpenSSL.secureDER("the private key") { i2d_PKCS8_PRIV_KEY_INFO(info, $0) }
    }

    /// SubjectPublicKeyInfo DER, EC points uncompressed.
    func spki() throws -> [UInt8] {
        if EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC {
            _ = EVP_PKEY_set_utf8_string_param(pointer, "point-format", "uncompressed")
        }
        return try OpenSSL.der("the public key") { i2d_PUBKEY(pointer, $0) }
    }

    /// Apple's external representation of the public key: PKCS#1
    /// RSAPublicKey DER for RSA, the X9.63 uncompressed point 04||X||Y for
    /// EC, the raw 32 bytes for Ed25519 and X25519.
    func publicExternalRepresentation() throws -> [UInt8] {
        switch EVP_PKEY_get_base_id(pointer) {
        case EVP_PKEY_ED25519, EVP_PKEY_X25519:
            var length = 32
            var out = [UInt8](repeating: 0, count: 32)
            try OpenSSL.check(EVP_PKEY_get_raw_public_key(pointer, &out, &length), .param, "the public key could not be read")
            return Array(out.prefix(length))
        case EVP_PKEY_EC:
            _ = EVP_PKEY_set_utf8_string_param(pointer, "point-format", "uncompressed")
            return try octetParam("encoded-pub-key")
        default:
            return try OpenSSL.der("the public key") { i2d_PublicKey(pointer, $0) }
        }
    }

    /// A public octet-string parameter.
    func octetParam(_ name: String) throws -> [UInt8] {
        var length = 0
        try OpenSSL.check(EVP_PKEY_get_octet_string_param(pointer, name, nil, 0, &length), .param, "the key has no \(name)")
        var out = [UInt8](repeating: 0, count: length)
        try OpenSSL.check(EVP_PKEY_get_octet_string_param(pointer, name, &out, length, &length), .param, "the key has no \(name)")
        return out
    }

    /// A big-number parameter, big-endian, `width` bytes (0: minimal), in
    /// guarded memory: private exponents and scalars pass through here.
    func secretNumber(_ name: String, width: Int = 0) throws -> SecureBytes {
        var bn: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_get_bn_param(pointer, name, &bn), .param, "the key has no \(name)")
        defer { BN_clear_free(bn) }
        let digits = Int((BN_num_bits(bn) + 7) / 8)
        let out = try SecureBytes(count: max(width, digits))
        try out.withUnsafeMutableBytes { buffer in
            guard BN_bn2binpad(bn, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == buffer.count else {
                throw OpenSSL.failure(.param, "the key's \(name) could not be encoded")
            }
        }
        return out
    }

    /// The raw private key of Ed25519/X25519 (32 bytes), in guarded memory.
    func rawPrivateKey() throws -> SecureBytes {
        let out = try SecureBytes(count: 32)
        try out.withUnsafeMutableBytes { buffer in
            var length = 32
            try OpenSSL.check(EVP_PKEY_get_raw_private_key(pointer, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), &length), .param, "the private key could not be read")
            guard length == 32 else { throw KeychainError(.param, "the private key could not be read") }
        }
        return out
    }

    /// Fails unless the public and private halves belong together
    /// (keys assembled from OpenSSH's components). RSA keys by locket's
    /// own check (RSAPairCheck.swift), others by libcrypto's (a scalar
    /// multiplication: 2 ms at most, for P-384).
    func checkPair() throws {
        if EVP_PKEY_get_base_id(pointer) == EVP_PKEY_RSA { return try checkRSAPair() }
        let ctx = try OpenSSL.check(EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil), .decode, "invalid key")
        defer { EVP_PKEY_CTX_free(ctx) }
        try OpenSSL.check(EVP_PKEY_pairwise_check(ctx), .decode, "the private key does not match its public key")
    }
}

/// One-shot digests through libcrypto.
enum Digest {
    static func sha1(_ data: UnsafeRawBufferPointer) -> [UInt8] { digest(EVP_sha1(), data, 20) }
    static func sha256(_ data: UnsafeRawBufferPointer) -> [UInt8] { digest(EVP_sha256(), data, 32) }
    static func sha1(_ data: [UInt8]) -> [UInt8] { data.withUnsafeBytes { sha1($0) } }
    static func sha256(_ data: [UInt8]) -> [UInt8] { data.withUnsafeBytes { sha256($0) } }

    private static func digest(_ md: OpaquePointer?, _ data: UnsafeRawBufferPointer, _ size: Int) -> [UInt8] {
        try? OpenSSL.ready()
        var out = [UInt8](repeating: 0, count: size)
        var length: UInt32 = 0
        // EVP_Digest fails only on allocation failure; a missing digest would be a build error.
        let empty: [UInt8] = [0]
        let rc = empty.withUnsafeBytes { EVP_Digest(data.baseAddress ?? $0.baseAddress, data.count, &out, &length, md, nil) }
        precondition(rc == 1 && Int(length) == size, "libcrypto digest failed")
        return out
    }
}

/// Decoding through libsodium, into guarded memory: the text may hold a key.
/// (Encoding is LocketSupport's.)
extension Base64 {
    /// Decodes standard base64, skipping whitespace, into guarded memory;
    /// nil when the text is not base64.
    static func decodeSecret(_ text: UnsafeRawBufferPointer) throws -> SecureBytes? {
        try? Sodium.ready()
        let scratch = try SecureBytes(count: text.count / 4 * 3 + 3)
        var length = 0
        let rc = scratch.withUnsafeMutableBytes { out in
            sodium_base642bin(out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
                              text.baseAddress?.assumingMemoryBound(to: CChar.self), text.count,
                              " \t\r\n", &length, nil, sodium_base64_VARIANT_ORIGINAL)
        }
        guard rc == 0 else { return nil }
        return try scratch.prefix(length)
    }

    /// Decodes public base64 (certificates, public keys).
    static func decode(_ text: String) throws -> [UInt8]? {
        var text = text
        return try text.withUTF8 { try decodeSecret(UnsafeRawBufferPointer($0))?.bytes }
    }
}
