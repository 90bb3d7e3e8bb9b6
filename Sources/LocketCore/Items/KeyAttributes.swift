import LocketSupport

/// How the items of a key file (or a generated key) are added: what
/// `import` and `key generate` take besides the file. Access control
/// (issue 14) joins here.
public struct KeyItemOptions: Sendable {
    /// The label of the file's keys and their certificates (nil: the file's
    /// friendly name or comment, else the certificate's common name). A
    /// chain's CA certificates keep their own common names.
    public var label: String?
    /// The application tag (`atag`) of the file's keys.
    public var tag: [UInt8]?
    /// False: private keys are added non-extractable (`extr` = 0) and never leave the keychain.
    public var extractable = true
    /// nil: when-unlocked.
    public var accessible: ProtectionClass?
    /// nil: the caller's default group.
    public var accessGroup: String?
    /// Access control of the private keys (SPEC §14), instead of `accessible`
    /// (both: errSecParam); the class applies to every item of the file.
    public var accessControl: AccessControl?
    /// kSecAttrSynchronizable true: the items are synchronizable (SPEC §4).
    public var synchronizable = false
    /// Where `generateKey` makes the key: in the keychain, or in the TPM (SPEC §21).
    public var token = KeyToken.software

    public init() {}
}

/// The attributes Apple derives from a key or a certificate (SPEC §12),
/// computed from the value when it is added: never taken from the user.
enum KeyAttributes {
    static func boolean(_ value: Bool) -> [UInt8] { value ? [0x31] : [0x30] }
    static func number(_ value: Int) -> [UInt8] { Array(String(value).utf8) }

    /// A key's attributes: class, type, sizes, application label (SHA-1 of the
    /// public key, equal to its certificate's `pkhh`), usage flags from what
    /// the key type can do, extractable, and the label and tag given.
    static func of(_ key: AsymmetricKey, label: String?, tag: [UInt8]?, extractable: Bool) -> [Attribute: [UInt8]] {
        let isPrivate = key.keyClass == .private
        let signs = !key.algorithms(for: .sign).isEmpty
        let encrypts = !key.algorithms(for: .encrypt).isEmpty
        let derives = isPrivate && (key.keyType == .ec || key.keyType == .x25519)
        var attributes: [Attribute: [UInt8]] = [
            .keyClass: Array(key.keyClass.rawValue.utf8),
            .type: Array(key.keyType.rawValue.utf8),
            .keySize: number(key.sizeInBits),
            .effectiveKeySize: number(key.effectiveSizeInBits),
            .applicationLabel: key.applicationLabel,
            // A public key is public: only a private key is ever non-extractable.
            .extractable: boolean(extractable || !isPrivate),
            .canSign: boolean(isPrivate && signs),
            .canVerify: boolean(!isPrivate && signs),
            .canEncrypt: boolean(!isPrivate && encrypts),
            .canDecrypt: boolean(isPrivate && encrypts),
            .canDerive: boolean(derives),
            .canWrap: boolean(!isPrivate && encrypts),
            .canUnwrap: boolean(isPrivate && encrypts),
        ]
        if let label, !label.isEmpty { attributes[.label] = Array(label.utf8) }
        if let tag, !tag.isEmpty { attributes[.applicationTag] = tag }
        return attributes
    }

    /// A certificate's attributes, all from its DER but the label (default:
    /// the common name, else the e-mail address, else the subject).
    static func of(_ certificate: Certificate, label: String?) -> [Attribute: [UInt8]] {
        var attributes: [Attribute: [UInt8]] = [
            .certificateType: number(certificate.certificateType),
            .certificateEncoding: number(certificate.certificateEncoding),
            .subject: certificate.subject,
            .issuer: certificate.issuer,
            .serialNumber: certificate.serialNumber,
            .publicKeyHash: certificate.publicKeyHash,
            .fingerprint: certificate.sha256Fingerprint,
            .subjectName: Array(certificate.subjectName.utf8),
            .issuerName: Array(certificate.issuerName.utf8),
            .notBefore: number(Int(certificate.notBefore)),
            .notAfter: number(Int(certificate.notAfter)),
            .label: Array((label.flatMap { $0.isEmpty ? nil : $0 } ?? certificate.defaultLabel).utf8),
        ]
        if let skid = certificate.subjectKeyID { attributes[.subjectKeyID] = skid }
        if let alias = certificate.alias { attributes[.alias] = Array(alias.utf8) }
        return attributes.filter { !$0.value.isEmpty }
    }

    /// The items a parsed key file adds, in file order: keys, then
    /// certificates. Options apply as `KeyItemOptions` says.
    static func items(of file: ImportedItems, _ options: KeyItemOptions) throws -> [(ItemClass, [Attribute: [UInt8]], SecureBytes)] {
        let hasPrivateKey = file.keys.contains { $0.key.keyClass == .private }
        var out: [(ItemClass, [Attribute: [UInt8]], SecureBytes)] = []
        for (i, entry) in file.keys.enumerated() {
            let certificate = file.certificates.first { $0.keyIndex == i }
            let label = options.label ?? entry.label ?? certificate.map { $0.label ?? $0.certificate.defaultLabel }
            let value = try entry.key.pkcs8 ?? SecureBytes(copying: entry.key.subjectPublicKeyInfo)
            out.append((.key, of(entry.key, label: label, tag: options.tag, extractable: options.extractable), value))
        }
        for entry in file.certificates {
            // With a private key in the file, --label names the identity, not the CA certificates of its chain.
            let label = (entry.keyIndex != nil || !hasPrivateKey ? options.label : nil) ?? entry.label
            out.append((.certificate, of(entry.certificate, label: label), try SecureBytes(copying: entry.certificate.der)))
        }
        return out
    }
}

extension Item {
    /// False for a key added non-extractable: its value never leaves the keychain.
    public var isExtractable: Bool { itemClass != .key || self[.extractable] != [0x30] }
}
