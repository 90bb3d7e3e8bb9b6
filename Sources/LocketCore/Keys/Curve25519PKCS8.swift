import CCrypto

// Ed25519 and X25519 private keys as the keychain stores them: RFC 8410's
// one-version PKCS#8, always these 48 bytes (16 fixed, the 32-byte private
// key). libcrypto 3.0 reads any PKCS#8 through its generic decoder, which
// looks every decoder up by name on each call: half of an ssh-agent request
// went there (perf, issue 14). This exact shape is read directly instead;
// anything else (a version-2 encoding with the public key, attributes) takes
// the generic path, which also re-encodes it to this shape at import.

/// RFC 8410 PKCS#8 and SubjectPublicKeyInfo of Curve25519 keys.
enum Curve25519PKCS8 {
    /// `SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.x }, OCTET STRING { OCTET STRING (32) } }`
    /// with x at index 11 (112 Ed25519, 110 X25519).
    private static let prefix: [UInt8] = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x00, 0x04, 0x22, 0x04, 0x20]
    /// `SEQUENCE { SEQUENCE { OID }, BIT STRING (33) }` before the 32-byte public key.
    private static let spkiPrefix: [UInt8] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x00, 0x03, 0x21, 0x00]

    private static func oidByte(_ type: KeyType) -> UInt8 { type == .ed25519 ? 0x70 : 0x6e }

    /// The key type and the private key of `der` when it is exactly this
    /// encoding of an Ed25519 or X25519 key; nil otherwise.
    static func split(_ der: UnsafeRawBufferPointer) -> (type: KeyType, privateKey: UnsafeRawBufferPointer)? {
        guard der.count == 48 else { return nil }
        let type: KeyType
        switch der[11] {
        case 0x70: type = .ed25519
        case 0x6e: type = .x25519
        default: return nil
        }
        for i in prefix.indices where i != 11 && der[i] != prefix[i] { return nil }
        return (type, UnsafeRawBufferPointer(rebasing: der[16...]))
    }

    /// A new EVP_PKEY (the caller frees it) from the raw private key: no decoder involved.
    static func key(_ type: KeyType, _ privateKey: UnsafeRawBufferPointer) throws -> OpaquePointer {
        try OpenSSL.ready()
        let name = type == .ed25519 ? "ED25519" : "X25519"
        let key = EVP_PKEY_new_raw_private_key_ex(nil, name, nil, privateKey.baseAddress!.assumingMemoryBound(to: UInt8.self), 32)
        return try OpenSSL.check(key, .decode, "invalid \(type.rawValue) private key")
    }

    /// The SubjectPublicKeyInfo DER of a 32-byte public key.
    static func spki(_ type: KeyType, _ publicKey: [UInt8]) -> [UInt8] {
        var out = spkiPrefix
        out[8] = oidByte(type)
        return out + publicKey
    }
}
