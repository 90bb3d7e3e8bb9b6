import CCrypto

// The key value: a private or public asymmetric key as the keychain will
// store it (a private key's PKCS#8 DER in guarded memory, a public key's
// SPKI DER), with the attributes Apple derives from it: key class, type,
// size, application label.

/// An RSA, EC (P-256/384/521), Ed25519 or X25519 key, private or public.
///
/// A private key's bytes live only in `SecureBytes` (PKCS#8 PrivateKeyInfo
/// DER, what the keychain stores as the item's secret); every operation
/// makes a libcrypto key for its own duration and frees it.
public struct AsymmetricKey: Sendable {
    /// kSecAttrKeyClass: public or private.
    public let keyClass: KeyClass
    /// kSecAttrKeyType.
    public let keyType: KeyType
    /// kSecAttrKeySizeInBits (`bsiz`): the modulus for RSA, the curve for EC, 256 for Ed25519/X25519.
    public let sizeInBits: Int
    /// The private key as PKCS#8 PrivateKeyInfo DER, in guarded memory; nil for a public key.
    public let pkcs8: SecureBytes?
    /// The public key as SubjectPublicKeyInfo DER (EC points uncompressed).
    public let subjectPublicKeyInfo: [UInt8]
    /// The public key in Apple's external representation
    /// (SecKeyCopyExternalRepresentation of the public key): PKCS#1
    /// RSAPublicKey DER for RSA, 04||X||Y for EC, the raw 32 bytes for
    /// Ed25519 and X25519.
    public let publicKeyExternalRepresentation: [UInt8]

    /// kSecAttrEffectiveKeySize (`esiz`): the same as `sizeInBits`, as Apple stores it.
    public var effectiveSizeInBits: Int { sizeInBits }

    /// The curve of an EC key.
    public var curve: EllipticCurve? { keyType == .ec ? EllipticCurve(rawValue: sizeInBits) : nil }

    /// kSecAttrApplicationLabel (`klbl`): SHA-1 of the public key's external
    /// representation, as Apple computes it; equals the `pkhh` of a
    /// certificate for this key.
    public var applicationLabel: [UInt8] { Digest.sha1(publicKeyExternalRepresentation) }

    /// The public half (itself for a public key).
    public var publicKey: AsymmetricKey {
        AsymmetricKey(keyClass: .public, keyType: keyType, sizeInBits: sizeInBits, pkcs8: nil,
                      subjectPublicKeyInfo: subjectPublicKeyInfo, publicKeyExternalRepresentation: publicKeyExternalRepresentation)
    }

    private init(keyClass: KeyClass, keyType: KeyType, sizeInBits: Int, pkcs8: SecureBytes?, subjectPublicKeyInfo: [UInt8], publicKeyExternalRepresentation: [UInt8]) {
        self.keyClass = keyClass
        self.keyType = keyType
        self.sizeInBits = sizeInBits
        self.pkcs8 = pkcs8
        self.subjectPublicKeyInfo = subjectPublicKeyInfo
        self.publicKeyExternalRepresentation = publicKeyExternalRepresentation
    }

    /// The key held by `evp`; a private key's PKCS#8 is re-encoded so that
    /// every import path stores the same canonical bytes.
    init(evp: EVPKey, isPrivate: Bool) throws {
        let (type, bits) = try evp.describe()
        keyClass = isPrivate ? .private : .public
        keyType = type
        sizeInBits = bits
        pkcs8 = isPrivate ? try evp.pkcs8() : nil
        subjectPublicKeyInfo = try evp.spki()
        publicKeyExternalRepresentation = try evp.publicExternalRepresentation()
    }

    /// A private key from its PKCS#8 PrivateKeyInfo DER (as the keychain
    /// stores it). errSecDecode if the bytes are not one, errSecParam for an
    /// unsupported key type or size.
    public init(pkcs8 der: SecureBytes) throws {
        let evp = try der.withUnsafeBytes { try EVPKey(pkcs8: $0) }
        // Already the canonical encoding: no re-encoding through libcrypto's encoders (Curve25519PKCS8).
        if let type = der.withUnsafeBytes({ Curve25519PKCS8.split($0)?.type }) {
            let publicKey = try evp.publicExternalRepresentation()
            self.init(keyClass: .private, keyType: type, sizeInBits: 256, pkcs8: try der.withUnsafeBytes { try SecureBytes(copying: $0) },
                      subjectPublicKeyInfo: Curve25519PKCS8.spki(type, publicKey), publicKeyExternalRepresentation: publicKey)
            return
        }
        try self.init(evp: evp, isPrivate: true)
    }

    /// A stored private key whose public half is already known (the keychain
    /// found it by the application label of `publicHalf`): nothing is decoded
    /// here, only when it is used. The caller vouches that they pair.
    init(pkcs8: SecureBytes, publicHalf: AsymmetricKey) {
        self.init(keyClass: .private, keyType: publicHalf.keyType, sizeInBits: publicHalf.sizeInBits, pkcs8: pkcs8,
                  subjectPublicKeyInfo: publicHalf.subjectPublicKeyInfo,
                  publicKeyExternalRepresentation: publicHalf.publicKeyExternalRepresentation)
    }

    /// A public key from SubjectPublicKeyInfo DER.
    public init(subjectPublicKeyInfo der: [UInt8]) throws {
        let evp = try der.withUnsafeBytes { try EVPKey(spki: $0) }
        try self.init(evp: evp, isPrivate: false)
    }

    /// A public key from Apple's external representation
    /// (SecKeyCreateWithData of a public key): the type says how to read it,
    /// an EC point's length gives the curve.
    public init(publicKeyExternalRepresentation bytes: [UInt8], keyType: KeyType) throws {
        try OpenSSL.ready()
        let evp: EVPKey
        switch keyType {
        case .rsa:
            evp = try bytes.withUnsafeBytes { raw in
                guard let base = raw.baseAddress, raw.count > 0 else { throw KeychainError(.decode, "empty RSA public key") }
                var p: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
                let key = try OpenSSL.check(d2i_PublicKey(EVP_PKEY_RSA, nil, &p, raw.count), .decode, "not a PKCS#1 RSA public key")
                let wrapped = EVPKey(taking: key)
                guard p == base.assumingMemoryBound(to: UInt8.self) + raw.count else { throw KeychainError(.decode, "trailing bytes after the RSA public key") }
                return wrapped
            }
        case .ec:
            guard let curve = EllipticCurve.allCases.first(where: { 1 + 2 * $0.byteCount == bytes.count }), bytes.first == 4 else {
                throw KeychainError(.decode, "not an uncompressed P-256, P-384 or P-521 point")
            }
            evp = try KeyParameters.ecPublic(curve: curve, point: bytes)
        case .ed25519, .x25519:
            guard bytes.count == 32 else { throw KeychainError(.decode, "a \(keyType.rawValue) public key is 32 bytes") }
            let name = keyType == .ed25519 ? "ED25519" : "X25519"
            evp = EVPKey(taking: try OpenSSL.check(EVP_PKEY_new_raw_public_key_ex(nil, name, nil, bytes, 32), .decode, "invalid \(keyType.rawValue) public key"))
        }
        try self.init(evp: evp, isPrivate: false)
    }

    /// Runs `body` with a libcrypto key made for it and freed after it: the
    /// private key when there is one, else the public key.
    func withEVP<R>(_ body: (EVPKey) throws -> R) throws -> R {
        let evp: EVPKey
        if let pkcs8 {
            evp = try pkcs8.withUnsafeBytes { try EVPKey(pkcs8: $0) }
        } else {
            evp = try subjectPublicKeyInfo.withUnsafeBytes { try EVPKey(spki: $0) }
        }
        return try body(evp)
    }

    /// Runs `body` with the public key only.
    func withPublicEVP<R>(_ body: (EVPKey) throws -> R) throws -> R {
        let evp = try subjectPublicKeyInfo.withUnsafeBytes { try EVPKey(spki: $0) }
        return try body(evp)
    }

    /// Fails with errSecParam unless this is a private key.
    func requirePrivate(_ what: String) throws -> SecureBytes {
        guard let pkcs8 else { throw KeychainError(.param, "\(what) needs a private key; this is a public key") }
        return pkcs8
    }

    /// The same key in libcrypto's PEM text for the public key (SPKI, `-----BEGIN PUBLIC KEY-----`).
    public var publicKeyPEM: String { PEM.encode(label: "PUBLIC KEY", subjectPublicKeyInfo) }

    /// True when `other` is the same key pair or its other half (same public key).
    public func pairs(with other: AsymmetricKey) -> Bool {
        keyType == other.keyType && publicKeyExternalRepresentation == other.publicKeyExternalRepresentation
    }
}

/// Keys assembled from their components (OpenSSH files, raw points).
enum KeyParameters {
    /// An EC public key from its curve and uncompressed point.
    static func ecPublic(curve: EllipticCurve, point: [UInt8]) throws -> EVPKey {
        // The builder keeps pointers to the name and the point until it makes its parameters.
        try point.withUnsafeBytes { raw in
            try build { bld, _ in
                try push(OSSL_PARAM_BLD_push_utf8_string(bld, OpenSSL.cString("group"), OpenSSL.cString(curve.groupName), 0))
                try push(OSSL_PARAM_BLD_push_octet_string(bld, OpenSSL.cString("pub"), raw.baseAddress, raw.count))
            } make: { try EVPKey(name: "EC", selection: locket_evp_pkey_public(), params: $0) }
        }
    }

    /// Fails when a parameter could not be added to the builder.
    static func push(_ rc: Int32) throws {
        try OpenSSL.check(rc, .decode, "invalid key parameters")
    }

    /// Runs `fill` on a parameter builder, then `make` on its parameters;
    /// frees both (secure parameters are wiped). The builder refers to the
    /// BIGNUMs `fill` pushes until its parameters are made, so `fill` hands
    /// them over in `numbers`, cleared and freed at the end.
    static func build(_ fill: (OpaquePointer, inout [OpaquePointer]) throws -> Void, make: (UnsafeMutablePointer<OSSL_PARAM>) throws -> EVPKey) throws -> EVPKey {
        try OpenSSL.ready()
        let bld = try OpenSSL.check(OSSL_PARAM_BLD_new(), .io, "out of memory")
        var numbers: [OpaquePointer] = []
        defer {
            OSSL_PARAM_BLD_free(bld)
            for bn in numbers { BN_clear_free(bn) }
        }
        try fill(bld, &numbers)
        let params = try OpenSSL.check(OSSL_PARAM_BLD_to_param(bld), .decode, "invalid key parameters")
        // OSSL_PARAM_free wipes the secure part, where private numbers are.
        defer { OSSL_PARAM_free(params) }
        return try make(params)
    }

    /// A BIGNUM in libcrypto's secure heap from big-endian bytes; the caller frees it with BN_clear_free.
    static func secureNumber(_ bytes: UnsafeRawBufferPointer) throws -> OpaquePointer {
        let bn = try OpenSSL.check(BN_secure_new(), .io, "out of memory")
        guard BN_bin2bn(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(bytes.count), bn) != nil else {
            BN_clear_free(bn)
            throw OpenSSL.failure(.decode, "invalid key number")
        }
        return bn
    }
}
