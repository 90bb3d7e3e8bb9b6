import LocketSupport

/// The kinds of keychain item (kSecClass). An identity (kSecClassIdentity)
/// is not one: it is a view over a key and a certificate (`Keychain.identities`).
public enum ItemClass: String, CaseIterable, Sendable {
    /// kSecClassGenericPassword.
    case genericPassword = "genp"
    /// kSecClassInternetPassword.
    case internetPassword = "inet"
    /// kSecClassKey: an asymmetric key, private or public (SPEC §12).
    case key = "keys"
    /// kSecClassCertificate: an X.509 certificate (SPEC §12).
    case certificate = "cert"

    /// The long CLI name.
    public var name: String {
        switch self {
        case .genericPassword: "generic-password"
        case .internetPassword: "internet-password"
        case .key: "key"
        case .certificate: "certificate"
        }
    }

    /// Accepts the code (`genp`), the long name, or Apple's constant.
    public init(parsing text: String) throws {
        switch text {
        case "genp", "generic-password", "kSecClassGenericPassword": self = .genericPassword
        case "inet", "internet-password", "kSecClassInternetPassword": self = .internetPassword
        case "keys", "key", "kSecClassKey": self = .key
        case "cert", "certificate", "kSecClassCertificate": self = .certificate
        default: throw KeychainError(.noSuchClass, "no item class '\(Printable.clip(text))' (use genp, inet, keys, cert or identity)")
        }
    }

    /// The sealed attributes this class has, in display order.
    public var attributes: [Attribute] {
        switch self {
        case .genericPassword:
            [.service, .account, .label, .description, .comment, .generic, .creator, .type]
        case .internetPassword:
            [.server, .account, .protocol, .port, .path, .securityDomain, .authenticationType,
             .label, .description, .comment, .creator, .type]
        case .key:
            [.label, .applicationTag, .keyClass, .type, .keySize, .effectiveKeySize, .applicationLabel, .extractable,
             .canSign, .canVerify, .canEncrypt, .canDecrypt, .canDerive, .canWrap, .canUnwrap,
             .creator, .startDate, .endDate, .comment, .tokenID]
        case .certificate:
            [.label, .alias, .subjectName, .issuerName, .serialNumber, .fingerprint, .publicKeyHash, .subjectKeyID,
             .notBefore, .notAfter, .certificateType, .certificateEncoding, .subject, .issuer, .comment]
        }
    }

    /// The attributes that make an item unique, besides the access group
    /// and synchronizable (which every class has: `Sealing.primaryKeyDigest`).
    public var primaryKey: [Attribute] {
        switch self {
        case .genericPassword: [.service, .account]
        case .internetPassword: [.account, .securityDomain, .server, .protocol, .authenticationType, .port, .path]
        case .key: [.keyClass, .applicationLabel, .applicationTag, .creator, .type, .keySize, .effectiveKeySize, .startDate, .endDate]
        case .certificate: [.certificateType, .issuer, .serialNumber]
        }
    }

    /// The attribute whose value the label takes when `add` is given none.
    var labelDefault: Attribute? {
        switch self {
        case .genericPassword: .service
        case .internetPassword: .server
        case .key, .certificate: nil
        }
    }

    /// Whether items of this class carry `attribute` (access group,
    /// accessible, synchronizable and the value types: always). The last two
    /// are not among `attributes`: an item that is not synchronizable has no
    /// value and no blind row for it, as every item made before it existed,
    /// and the value types are never indexed.
    public func supports(_ attribute: Attribute) -> Bool {
        switch attribute {
        case .accessGroup, .accessible, .synchronizable, .valueTypes: true
        default: attributes.contains(attribute)
        }
    }

    /// Whether `update` may change `attribute`: every attribute of a
    /// password; of a key or certificate only what is not derived from its
    /// value (label, tag, comment) and where it is kept (group, protection
    /// class, synchronizable). `extr` is set when a key is added.
    public func isUpdatable(_ attribute: Attribute) -> Bool {
        switch self {
        case .genericPassword, .internetPassword: true
        case .key: [.label, .applicationTag, .comment, .accessGroup, .accessible, .synchronizable].contains(attribute)
        case .certificate: [.label, .comment, .accessGroup, .accessible, .synchronizable].contains(attribute)
        }
    }

    /// Keys and certificates hold key material, made by `import` and `key generate`, not by `add`.
    public var holdsKeyMaterial: Bool { self == .key || self == .certificate }
}
