import LocketSupport

/// Where a new key lives (`key generate --token`, kSecAttrTokenID).
public enum KeyToken: String, CaseIterable, Sendable {
    /// In the keychain, like any key: the default.
    case software
    /// In the TPM (SPEC §21), as Apple's kSecAttrTokenIDSecureEnclave: a
    /// P-256 key made inside it that never leaves it. Without a TPM,
    /// errSecNotAvailable saying why; never a software key in its place.
    case secureEnclave = "secure-enclave"
    /// A non-extractable P-256 key in the keychain, asked for by name where
    /// there is no TPM: what "Secure Enclave" meant before keys lived in one.
    case softwareEnclave = "software-enclave"

    /// kSecAttrTokenIDSecureEnclave, the `tkid` of a key held by the TPM.
    public static let secureEnclaveID = Array("com.apple.setoken".utf8)

    /// errSecParam for any other name, with the names there are.
    public init(parsing name: String) throws {
        guard let token = KeyToken(rawValue: name) else {
            throw KeychainError(.param, "no key token '\(Printable.clip(name, max: 40))' (\(KeyToken.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        self = token
    }
}

extension Item {
    /// Whether the item is a Secure Enclave key: its value is the TPM's key file.
    public var isHeldByTPM: Bool { itemClass == .key && self[.tokenID] == KeyToken.secureEnclaveID }
}

extension KeyAttributes {
    /// A Secure Enclave key's attributes: those of any private P-256 key,
    /// never extractable, and its token.
    static func of(_ key: TPMKey, label: String?, tag: [UInt8]?) -> [Attribute: [UInt8]] {
        var attributes = of(key.publicKey, label: label, tag: tag, extractable: false)
        attributes[.keyClass] = Array(KeyClass.private.rawValue.utf8)
        attributes[.extractable] = boolean(false)
        attributes[.canSign] = boolean(true)
        attributes[.canVerify] = boolean(false)
        attributes[.canEncrypt] = boolean(false)
        attributes[.canDecrypt] = boolean(true)
        attributes[.canDerive] = boolean(true)
        attributes[.canWrap] = boolean(false)
        attributes[.canUnwrap] = boolean(true)
        attributes[.tokenID] = KeyToken.secureEnclaveID
        return attributes
    }
}

/// A stored key as opened: in memory, or the TPM's key file.
enum StoredKey {
    case software(AsymmetricKey)
    case tpm(TPMKey)

    var publicKey: AsymmetricKey {
        switch self {
        case .software(let key): key.publicKey
        case .tpm(let key): key.publicKey
        }
    }
}

/// Secure Enclave keys (SPEC §21, docs/TPM.md "For the engine"): made in
/// the TPM, stored as its key file, used through it.
extension KeychainKeys {
    /// A new P-256 key made in the TPM. Nothing is written until the TPM has
    /// made it, and the TPM keeps nothing of a key it made: a failure
    /// anywhere leaves nothing behind.
    func generateInTPM(_ type: KeyGenerationType, _ options: KeyItemOptions) throws -> (item: Item, publicKey: AsymmetricKey) {
        guard type == .p256 else {
            throw KeychainError(.param, "Secure Enclave keys are P-256 (--type p256) and never leave the TPM, as Apple's")
        }
        // Placement and proofs first: a refusal costs no TPM operation.
        let (_, control, _) = try engine.placement(accessible: options.accessible, accessControl: options.accessControl,
                                                   accessGroup: options.accessGroup)
        if let name = control?.presenceKeyName, engine.meta[PresenceKeys.publicKeyRow(name)]?.count != 32 {
            throw engine.proofNeeded(password: true, application: false, label: options.label)
        }
        var authorization: TPMAuthorization?
        if control?.flags.contains(.applicationPassword) == true {
            // The application password becomes the key's authorization value: the TPM counts wrong ones.
            guard let password = engine.proof.applicationPassword else {
                throw engine.proofNeeded(password: false, application: true, label: options.label)
            }
            authorization = try TPMAuthorization(password: password)
        }
        let key = try engine.tpm().createKey(authorization: authorization)
        var kept = options
        kept.extractable = false
        var added: Item?
        try addKeyItems([(.key, KeyAttributes.of(key, label: options.label, tag: options.tag), try SecureBytes(copying: key.file.der))], kept) {
            added = $0.item
        }
        return (added!, key.publicKey)
    }

    /// The TSS2 key file of the first Secure Enclave key `query` matches
    /// (`export --format tss2`): the TPM's wrapped blob and the public key,
    /// nothing secret, useful only with this TPM. errSecParam for a key the
    /// TPM does not hold.
    public func tpmKeyFile(_ query: Query) throws -> (item: Item, file: TSS2KeyFile) {
        var (item, key) = try storedKey(query)
        item.data = nil
        guard case .tpm(let held) = key else {
            let label = String(decoding: item[.label], as: UTF8.self)
            throw KeychainError(.param, "the key\(label.isEmpty ? "" : " '\(Printable.clip(label))'") is not a Secure Enclave key: only a key made in the TPM has a TSS2 key file")
        }
        return (item, held.file)
    }

    /// The key opened for use: a software key as is, a TPM key with the
    /// keychain's TPM client and the application password as its authorization value.
    func operations(_ key: StoredKey, _ item: Item) throws -> any PrivateKeyOperations {
        switch key {
        case .software(let software):
            return software
        case .tpm(let held):
            var authorization: TPMAuthorization?
            if held.needsAuthorization {
                guard let password = engine.proof.applicationPassword else {
                    throw engine.proofNeeded(password: false, application: true, label: KeychainEngine.label(item.attributes))
                }
                authorization = try TPMAuthorization(password: password)
            }
            return TPMKeyUse(key: held, client: { [engine] in try engine.tpm() }, authorization: authorization)
        }
    }
}

extension KeychainEngine {
    /// The keychain's TPM client, made on first use (`TPMLocation.find`:
    /// without a TPM, errSecNotAvailable naming why).
    func tpm() throws -> TPMClient {
        if let tpmClient { return tpmClient }
        let client = try TPMClient(environment: environment)
        tpmClient = client
        return client
    }
}

extension TPMKey {
    /// The attributes the key has as an item (SecKeyCopyAttributes of one not kept).
    public var itemAttributes: [Attribute: [UInt8]] { KeyAttributes.of(self, label: nil, tag: nil) }
}

extension TPMKeyUse {
    /// A new Secure Enclave key in the TPM `environment` names, kept in no
    /// keychain (SecKeyCreateRandomKey without kSecAttrIsPermanent): it lives
    /// as long as this value, used through its own helper.
    public static func create(environment: Environment) throws -> TPMKeyUse {
        let client = try TPMClient(environment: environment)
        return TPMKeyUse(key: try client.createKey(), client: client, authorization: nil)
    }
}
