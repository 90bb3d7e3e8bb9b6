// The algorithm names users type for `key sign|verify|encrypt|decrypt`
// (SPEC 13): Apple's SecKeyAlgorithm names in kebab case where Apple has one,
// plus `ed25519` and `x25519-sealed-box`; which key types each applies to.

/// A signature or encryption algorithm, named as users type it.
public enum KeyAlgorithm: String, Sendable, CaseIterable {
    /// ECDSA over SHA-256 of the message, X9.62 DER signature (kSecKeyAlgorithmECDSASignatureMessageX962SHA256).
    case ecdsaMessageX962SHA256 = "ecdsa-message-x962-sha256"
    /// kSecKeyAlgorithmECDSASignatureMessageX962SHA384.
    case ecdsaMessageX962SHA384 = "ecdsa-message-x962-sha384"
    /// kSecKeyAlgorithmECDSASignatureMessageX962SHA512.
    case ecdsaMessageX962SHA512 = "ecdsa-message-x962-sha512"
    /// ECDSA of a SHA-256 digest the caller computed (kSecKeyAlgorithmECDSASignatureDigestX962SHA256).
    case ecdsaDigestX962SHA256 = "ecdsa-digest-x962-sha256"
    /// kSecKeyAlgorithmECDSASignatureDigestX962SHA384.
    case ecdsaDigestX962SHA384 = "ecdsa-digest-x962-sha384"
    /// kSecKeyAlgorithmECDSASignatureDigestX962SHA512.
    case ecdsaDigestX962SHA512 = "ecdsa-digest-x962-sha512"
    /// RSASSA-PSS, SHA-256, MGF1-SHA-256, salt as long as the digest (kSecKeyAlgorithmRSASignatureMessagePSSSHA256).
    case rsaSignatureMessagePSSSHA256 = "rsa-signature-message-pss-sha256"
    /// kSecKeyAlgorithmRSASignatureMessagePSSSHA384.
    case rsaSignatureMessagePSSSHA384 = "rsa-signature-message-pss-sha384"
    /// kSecKeyAlgorithmRSASignatureMessagePSSSHA512.
    case rsaSignatureMessagePSSSHA512 = "rsa-signature-message-pss-sha512"
    /// RSASSA-PKCS1-v1_5 with SHA-256 (kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA256).
    case rsaSignatureMessagePKCS1v15SHA256 = "rsa-signature-message-pkcs1v15-sha256"
    /// kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA384.
    case rsaSignatureMessagePKCS1v15SHA384 = "rsa-signature-message-pkcs1v15-sha384"
    /// kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA512.
    case rsaSignatureMessagePKCS1v15SHA512 = "rsa-signature-message-pkcs1v15-sha512"
    /// Ed25519 (RFC 8032) of the message.
    case ed25519 = "ed25519"
    /// RSAES-OAEP, SHA-1 and MGF1-SHA-1, empty label (kSecKeyAlgorithmRSAEncryptionOAEPSHA1), for old peers.
    case rsaEncryptionOAEPSHA1 = "rsa-encryption-oaep-sha1"
    /// RSAES-OAEP, SHA-256 and MGF1-SHA-256, empty label (kSecKeyAlgorithmRSAEncryptionOAEPSHA256).
    case rsaEncryptionOAEPSHA256 = "rsa-encryption-oaep-sha256"
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA384.
    case rsaEncryptionOAEPSHA384 = "rsa-encryption-oaep-sha384"
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA512.
    case rsaEncryptionOAEPSHA512 = "rsa-encryption-oaep-sha512"
    /// Raw RSA (kSecKeyAlgorithmRSAEncryptionRaw): m^e mod n of a block
    /// (left-padded with zeros) smaller than the modulus, no padding: the
    /// primitive Apple code builds its own schemes on.
    case rsaEncryptionRaw = "rsa-encryption-raw"
    /// Apple's ECIES (kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM):
    /// ephemeral key, cofactor ECDH, ANSI X9.63 KDF with SHA-256 and the
    /// ephemeral public key as shared info, AES-GCM with a derived 16-byte IV;
    /// ephemeral public key || ciphertext || 16-byte tag.
    case eciesCofactorVariableIVX963SHA256AESGCM = "ecies-cofactor-variable-iv-x963-sha256-aesgcm"
    /// kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA256AESGCM:
    /// as the cofactor variant (the NIST curves' cofactor is 1).
    case eciesStandardVariableIVX963SHA256AESGCM = "ecies-standard-variable-iv-x963-sha256-aesgcm"
    /// kSecKeyAlgorithmECIESEncryptionStandardX963SHA256AESGCM: the KDF gives
    /// the AES key only, and AES-GCM runs with a 16-byte all-zero IV.
    case eciesStandardX963SHA256AESGCM = "ecies-standard-x963-sha256-aesgcm"
    /// kSecKeyAlgorithmECIESEncryptionCofactorX963SHA256AESGCM: as the standard one.
    case eciesCofactorX963SHA256AESGCM = "ecies-cofactor-x963-sha256-aesgcm"
    /// libsodium's sealed box (crypto_box_seal) to an X25519 key.
    case x25519SealedBox = "x25519-sealed-box"

    /// What an algorithm does.
    public enum Operation: String, Sendable {
        /// sign and verify.
        case sign
        /// encrypt and decrypt.
        case encrypt
    }

    /// Whether the algorithm signs or encrypts.
    public var operation: Operation {
        switch self {
        case .rsaEncryptionOAEPSHA1, .rsaEncryptionOAEPSHA256, .rsaEncryptionOAEPSHA384, .rsaEncryptionOAEPSHA512, .rsaEncryptionRaw,
             .eciesCofactorVariableIVX963SHA256AESGCM, .eciesStandardVariableIVX963SHA256AESGCM, .eciesStandardX963SHA256AESGCM,
             .eciesCofactorX963SHA256AESGCM, .x25519SealedBox: .encrypt
        default: .sign
        }
    }

    /// The key type the algorithm needs.
    public var keyType: KeyType {
        switch self {
        case .ecdsaMessageX962SHA256, .ecdsaMessageX962SHA384, .ecdsaMessageX962SHA512,
             .ecdsaDigestX962SHA256, .ecdsaDigestX962SHA384, .ecdsaDigestX962SHA512,
             .eciesCofactorVariableIVX963SHA256AESGCM, .eciesStandardVariableIVX963SHA256AESGCM, .eciesStandardX963SHA256AESGCM,
             .eciesCofactorX963SHA256AESGCM: .ec
        case .ed25519: .ed25519
        case .x25519SealedBox: .x25519
        default: .rsa
        }
    }

    /// Apple's constant, for documentation and messages; nil for locket's own.
    public var appleName: String? {
        switch self {
        case .ecdsaMessageX962SHA256: "kSecKeyAlgorithmECDSASignatureMessageX962SHA256"
        case .ecdsaMessageX962SHA384: "kSecKeyAlgorithmECDSASignatureMessageX962SHA384"
        case .ecdsaMessageX962SHA512: "kSecKeyAlgorithmECDSASignatureMessageX962SHA512"
        case .ecdsaDigestX962SHA256: "kSecKeyAlgorithmECDSASignatureDigestX962SHA256"
        case .ecdsaDigestX962SHA384: "kSecKeyAlgorithmECDSASignatureDigestX962SHA384"
        case .ecdsaDigestX962SHA512: "kSecKeyAlgorithmECDSASignatureDigestX962SHA512"
        case .rsaSignatureMessagePSSSHA256: "kSecKeyAlgorithmRSASignatureMessagePSSSHA256"
        case .rsaSignatureMessagePSSSHA384: "kSecKeyAlgorithmRSASignatureMessagePSSSHA384"
        case .rsaSignatureMessagePSSSHA512: "kSecKeyAlgorithmRSASignatureMessagePSSSHA512"
        case .rsaSignatureMessagePKCS1v15SHA256: "kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA256"
        case .rsaSignatureMessagePKCS1v15SHA384: "kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA384"
        case .rsaSignatureMessagePKCS1v15SHA512: "kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA512"
        case .rsaEncryptionOAEPSHA1: "kSecKeyAlgorithmRSAEncryptionOAEPSHA1"
        case .rsaEncryptionOAEPSHA256: "kSecKeyAlgorithmRSAEncryptionOAEPSHA256"
        case .rsaEncryptionOAEPSHA384: "kSecKeyAlgorithmRSAEncryptionOAEPSHA384"
        case .rsaEncryptionOAEPSHA512: "kSecKeyAlgorithmRSAEncryptionOAEPSHA512"
        case .rsaEncryptionRaw: "kSecKeyAlgorithmRSAEncryptionRaw"
        case .eciesCofactorVariableIVX963SHA256AESGCM: "kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM"
        case .eciesStandardVariableIVX963SHA256AESGCM: "kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA256AESGCM"
        case .eciesStandardX963SHA256AESGCM: "kSecKeyAlgorithmECIESEncryptionStandardX963SHA256AESGCM"
        case .eciesCofactorX963SHA256AESGCM: "kSecKeyAlgorithmECIESEncryptionCofactorX963SHA256AESGCM"
        case .ed25519, .x25519SealedBox: nil
        }
    }

    /// libcrypto's digest name for the hash the algorithm uses; nil for Ed25519 and the sealed box.
    var digestName: String? {
        switch self {
        case .rsaEncryptionOAEPSHA1: "SHA1"
        case .ecdsaMessageX962SHA256, .ecdsaDigestX962SHA256, .rsaSignatureMessagePSSSHA256, .rsaSignatureMessagePKCS1v15SHA256,
             .rsaEncryptionOAEPSHA256, .eciesCofactorVariableIVX963SHA256AESGCM, .eciesStandardVariableIVX963SHA256AESGCM,
             .eciesStandardX963SHA256AESGCM, .eciesCofactorX963SHA256AESGCM: "SHA256"
        case .ecdsaMessageX962SHA384, .ecdsaDigestX962SHA384, .rsaSignatureMessagePSSSHA384, .rsaSignatureMessagePKCS1v15SHA384,
             .rsaEncryptionOAEPSHA384: "SHA384"
        case .ecdsaMessageX962SHA512, .ecdsaDigestX962SHA512, .rsaSignatureMessagePSSSHA512, .rsaSignatureMessagePKCS1v15SHA512,
             .rsaEncryptionOAEPSHA512: "SHA512"
        case .ed25519, .x25519SealedBox, .rsaEncryptionRaw: nil
        }
    }

    /// Apple's ECIES variants: whether the KDF gives the IV too (else all
    /// zeros) and whether ECDH is the cofactor one; nil for the rest.
    var ecies: (variableIV: Bool, cofactor: Bool)? {
        switch self {
        case .eciesCofactorVariableIVX963SHA256AESGCM: (true, true)
        case .eciesStandardVariableIVX963SHA256AESGCM: (true, false)
        case .eciesStandardX963SHA256AESGCM: (false, false)
        case .eciesCofactorX963SHA256AESGCM: (false, true)
        default: nil
        }
    }

    /// The digest's length in bytes.
    var digestLength: Int {
        switch digestName {
        case "SHA1": 20
        case "SHA256": 32
        case "SHA384": 48
        case "SHA512": 64
        default: 0
        }
    }

    /// The input is a digest the caller computed, not the message.
    var signsDigest: Bool {
        self == .ecdsaDigestX962SHA256 || self == .ecdsaDigestX962SHA384 || self == .ecdsaDigestX962SHA512
    }

    /// The algorithms for `keyType` and `operation`, in declaration order.
    public static func supported(by keyType: KeyType, for operation: Operation) -> [KeyAlgorithm] {
        allCases.filter { $0.keyType == keyType && $0.operation == operation }
    }

    /// The algorithm called `name` for `key`: errSecParam for an unknown
    /// name, or for one the key's type can't do, with the names it can.
    public static func named(_ name: String, for key: AsymmetricKey, operation: Operation) throws -> KeyAlgorithm {
        let usable = KeyAlgorithm.supported(by: key.keyType, for: operation)
        let other = KeyAlgorithm.supported(by: key.keyType, for: operation == .sign ? .encrypt : .sign)
        let verb = operation == .sign ? "sign" : "encrypt"
        let choices = usable.isEmpty
            ? "\(key.keyType.rawValue) keys can't \(verb); they support \(other.map { $0.rawValue }.joined(with: ", "))"
            : "\(key.keyType.rawValue) keys support \(usable.map { $0.rawValue }.joined(with: ", "))"
        guard let algorithm = KeyAlgorithm(rawValue: name.lowercased()) else {
            throw KeychainError(.param, "unknown algorithm '\(name)' (\(choices))")
        }
        guard usable.contains(algorithm) else {
            throw KeychainError(.param, "\(algorithm.rawValue) can't be used with this key (\(choices))")
        }
        return algorithm
    }
}
