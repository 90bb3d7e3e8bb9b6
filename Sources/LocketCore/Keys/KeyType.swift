// The kinds of asymmetric key locket holds: key class (kcls), key type
// (type), curve and size (bsiz/esiz), with the values Apple stores for them
// and the names libcrypto and OpenSSH use.

/// Apple's kSecAttrKeyClass, for asymmetric keys.
public enum KeyClass: String, Sendable, CaseIterable {
    /// kSecAttrKeyClassPublic.
    case `public`
    /// kSecAttrKeyClassPrivate.
    case `private`

    /// The value Apple stores in `kcls` ("0" public, "1" private).
    public var appleValue: String { self == .public ? "0" : "1" }
}

/// Apple's kSecAttrKeyType, plus the Curve25519 types Apple added later.
public enum KeyType: String, Sendable, CaseIterable {
    /// RSA (kSecAttrKeyTypeRSA), 512 to 8192 bits.
    case rsa
    /// ECDSA/ECDH on a NIST prime curve (kSecAttrKeyTypeECSECPrimeRandom); the size gives the curve.
    case ec
    /// Ed25519 signatures (kSecAttrKeyTypeEd25519).
    case ed25519
    /// X25519 key agreement (kSecAttrKeyTypeX25519).
    case x25519

    /// The value Apple stores in `type`: CSSM algorithm numbers as strings.
    public var appleValue: String {
        switch self {
        case .rsa: "42"
        case .ec: "73"
        case .ed25519: "105"
        case .x25519: "106"
        }
    }
}

/// The NIST curves locket supports, by their size in bits.
public enum EllipticCurve: Int, Sendable, CaseIterable {
    /// secp256r1, prime256v1 (and the Secure Enclave's curve).
    case p256 = 256
    /// secp384r1.
    case p384 = 384
    /// secp521r1.
    case p521 = 521

    /// The size of a coordinate or scalar in bytes.
    public var byteCount: Int { (rawValue + 7) / 8 }
    /// libcrypto's group name (static: parameter builders keep the pointer).
    var groupName: StaticString {
        switch self {
        case .p256: "prime256v1"
        case .p384: "secp384r1"
        case .p521: "secp521r1"
        }
    }
    /// OpenSSH's curve identifier (`nistp256`).
    public var sshName: String { "nistp\(rawValue)" }
    /// The hash OpenSSH signs with on this curve (RFC 5656 6.2.1).
    var sshDigest: String {
        switch self {
        case .p256: "SHA256"
        case .p384: "SHA384"
        case .p521: "SHA512"
        }
    }

    init?(groupName: some StringProtocol) {
        switch groupName {
        case "prime256v1", "P-256", "secp256r1": self = .p256
        case "secp384r1", "P-384": self = .p384
        case "secp521r1", "P-521": self = .p521
        default: return nil
        }
    }
}

/// The key pairs locket makes: what `key generate --type` offers, and RSA-1024 besides.
public enum KeyGenerationType: String, Sendable, CaseIterable {
    /// Ed25519, X25519, EC on P-256/P-384/P-521, RSA of 2048/3072/4096 bits;
    /// RSA of 1024 bits for Apple code that asks for it (SecKeyCreateRandomKey).
    case ed25519, x25519, p256, p384, p521, rsa1024, rsa2048, rsa3072, rsa4096

    /// What the command line offers: not RSA-1024, a size NIST retired in
    /// 2013, which only Apple code that asks for it by size gets.
    public static var commandLineChoices: [KeyGenerationType] { allCases.filter { $0 != .rsa1024 } }

    /// The key type and size this generates.
    public var keyType: KeyType {
        switch self {
        case .ed25519: .ed25519
        case .x25519: .x25519
        case .p256, .p384, .p521: .ec
        case .rsa1024, .rsa2048, .rsa3072, .rsa4096: .rsa
        }
    }

    /// The size in bits (`bsiz`).
    public var sizeInBits: Int {
        switch self {
        case .ed25519, .x25519, .p256: 256
        case .p384: 384
        case .p521: 521
        case .rsa1024: 1024
        case .rsa2048: 2048
        case .rsa3072: 3072
        case .rsa4096: 4096
        }
    }

    /// The name given to `--type`, or errSecParam listing the choices.
    public static func named(_ name: String) throws -> KeyGenerationType {
        guard let type = KeyGenerationType(rawValue: name.lowercased()), commandLineChoices.contains(type) else {
            throw KeychainError(.param, "unknown key type '\(name)' (choose one of \(commandLineChoices.map(\.rawValue).joined(with: ", ")))")
        }
        return type
    }
}
