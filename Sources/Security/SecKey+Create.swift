import LocalAuthentication
import LocketCore
import LocketSupport

/// Makes a new key pair and returns its private key. kSecAttrKeyType and
/// kSecAttrKeySizeInBits choose it (RSA 1024/2048/3072/4096, EC 256/384/521,
/// Ed25519, X25519). With kSecAttrIsPermanent (top level or in
/// kSecPrivateKeyAttrs) the private key is made inside the default keychain,
/// with the label, application tag, access group, protection class or
/// access control given there, as `locket key generate` makes one; with
/// kSecAttrTokenIDSecureEnclave it is a P-256 key made inside the TPM that
/// never leaves it (SPEC §21; errSecNotAvailable without a TPM), with
/// kSecAttrTokenIDSoftwareEnclave a non-extractable P-256 key in the
/// keychain. kSecPublicKeyAttrs' kSecAttrIsPermanent adds the public key as
/// an item too.
public func SecKeyCreateRandomKey(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    withError(error) { try KeyParameters(parameters).make() }
}

/// The older form of SecKeyCreateRandomKey (deprecated by Apple, still
/// common): makes a key pair and gives both keys. kSecAttrIsPermanent at the
/// top level keeps both in the keychain; in kSecPrivateKeyAttrs or
/// kSecPublicKeyAttrs, that key only.
public func SecKeyGeneratePair(_ parameters: CFDictionary, _ publicKey: UnsafeMutablePointer<SecKey?>?,
                               _ privateKey: UnsafeMutablePointer<SecKey?>?) -> OSStatus {
    withStatus {
        let made = try KeyParameters(parameters, publicInheritsPermanence: true).make()
        let madePublic = try SecKey(made.publicKey())
        publicKey?.pointee = madePublic
        privateKey?.pointee = made
    }
}

/// A SecKeyCreateRandomKey dictionary, read.
private struct KeyParameters {
    var type: KeyGenerationType
    var secureEnclave = false
    var permanent = false
    var publicPermanent = false
    var options = KeyItemOptions()
    var publicLabel: String?
    var publicTag: [UInt8]?
    var authentication = Authentication(prompt: nil, applicationPassword: nil, mayAsk: true)

    /// `publicInheritsPermanence`: SecKeyGeneratePair's rule, where a
    /// top-level kSecAttrIsPermanent keeps the public key too.
    init(_ parameters: NSDictionary, publicInheritsPermanence: Bool = false) throws {
        guard let typeValue = parameters["type"] else { throw KeychainError(.param, "kSecAttrKeyType is required") }
        let keyType = try AttributeCoding.keyType(typeValue)
        let size = try parameters["bsiz"].map { value -> Int in
            guard let size = Value.integer(value) else { throw Value.wrongType("kSecAttrKeySizeInBits", "a number") }
            return size
        }
        if let token = parameters["tkid"] {
            let name = Value.string(token as Any)
            if name == kSecAttrTokenIDSecureEnclave as String {
                options.token = .secureEnclave
            } else if name == kSecAttrTokenIDSoftwareEnclave as String {
                options.token = .softwareEnclave
            } else {
                throw KeychainError(.param, "kSecAttrTokenID supports only kSecAttrTokenIDSecureEnclave (and kSecAttrTokenIDSoftwareEnclave)")
            }
        }
        secureEnclave = options.token != .software
        switch (keyType, size) {
        case (.rsa, let bits?) where [1024, 2048, 3072, 4096].contains(bits): type = KeyGenerationType(rawValue: "rsa\(bits)")!
        case (.rsa, nil): type = .rsa2048
        case (.ec, let bits?) where [256, 384, 521].contains(bits): type = KeyGenerationType(rawValue: "p\(bits)")!
        case (.ec, nil): type = .p256
        case (.ed25519, nil), (.ed25519, 256?): type = .ed25519
        case (.x25519, nil), (.x25519, 256?): type = .x25519
        default: throw KeychainError(.param, "\(keyType.rawValue) keys of \(size ?? 0) bits can't be made (RSA 1024/2048/3072/4096, EC 256/384/521)")
        }
        if secureEnclave && type != .p256 { throw KeychainError(.param, "kSecAttrTokenIDSecureEnclave keys are EC keys of 256 bits, as Apple's") }
        options.extractable = !secureEnclave
        try read(parameters, top: true)
        if publicInheritsPermanence { publicPermanent = permanent }
        if let privateAttributes = parameters["private"] {
            guard let dictionary = privateAttributes as? NSDictionary else { throw Value.wrongType("kSecPrivateKeyAttrs", "a dictionary") }
            try read(dictionary, top: false)
        }
        if let publicAttributes = parameters["public"] {
            guard let dictionary = publicAttributes as? NSDictionary else { throw Value.wrongType("kSecPublicKeyAttrs", "a dictionary") }
            publicPermanent = try dictionary["perm"].map { try flag($0, "kSecAttrIsPermanent") } ?? false
            publicLabel = try dictionary["labl"].map { try text($0, "kSecAttrLabel") }
            publicTag = dictionary["atag"].flatMap(Value.bytes)
        }
        if secureEnclave && publicPermanent { throw KeychainError(.param, "the public key of a Secure Enclave key is not stored") }
    }

    /// The attributes of the private key: at the top level, or in kSecPrivateKeyAttrs (which win).
    private mutating func read(_ dictionary: NSDictionary, top: Bool) throws {
        for (rawKey, rawValue) in dictionary {
            guard let key = Value.string(rawKey), let value = Value.unwrapped(rawValue) else { continue }
            switch key {
            case "perm": permanent = try flag(value, "kSecAttrIsPermanent")
            case "labl": options.label = try text(value, "kSecAttrLabel")
            case "atag":
                guard let tag = Value.bytes(value) else { throw Value.wrongType("kSecAttrApplicationTag", "Data") }
                options.tag = tag
            case "agrp": options.accessGroup = try text(value, "kSecAttrAccessGroup")
            case "pdmn": options.accessible = try ProtectionClass(parsing: try text(value, "kSecAttrAccessible"))
            case "accc":
                guard let control = value as? SecAccessControl else { throw Value.wrongType("kSecAttrAccessControl", "a SecAccessControl") }
                options.accessControl = control.control
            case "extr":
                let extractable = try flag(value, "kSecAttrIsExtractable")
                if extractable && secureEnclave { throw KeychainError(.param, "a Secure Enclave key is never extractable") }
                options.extractable = extractable && !secureEnclave
            case "u_AuthCtx":
                guard let context = value as? LAContext else { throw Value.wrongType("kSecUseAuthenticationContext", "an LAContext") }
                authentication.applicationPassword = context.applicationPassword
                authentication.prompt = authentication.prompt ?? (context.localizedReason.isEmpty ? nil : context.localizedReason)
                if context.interactionNotAllowed { authentication.mayAsk = false }
            case "u_OpPrompt": authentication.prompt = try text(value, "kSecUseOperationPrompt")
            case "u_AuthUI": if Value.string(value) != "u_AuthUIA" { authentication.mayAsk = false }
            case "type", "bsiz", "tkid", "private", "public", "sens", "nleg", "esiz", "kcls", "sign", "vrfy", "decr", "encr", "drve", "wrap", "unwp":
                if !top && ["type", "bsiz", "tkid", "private", "public"].contains(key) {
                    throw KeychainError(.param, "kSecPrivateKeyAttrs does not take \(key)")
                }
            default:
                throw KeychainError(.param, "SecKeyCreateRandomKey does not take the key '\(Printable.clip(key))'")
            }
        }
    }

    private func flag(_ value: Any, _ key: String) throws -> Bool {
        guard let flag = Value.bool(value) else { throw Value.wrongType(key, "a Bool") }
        return flag
    }

    private func text(_ value: Any, _ key: String) throws -> String {
        guard let text = Value.string(value) else { throw Value.wrongType(key, "a String") }
        return text
    }

    func make() throws -> SecKey {
        guard permanent else {
            if options.accessControl != nil || options.accessGroup != nil {
                throw KeychainError(.param, "access control and access groups apply to keys in the keychain: add kSecAttrIsPermanent")
            }
            if options.token == .secureEnclave { return SecKey(tpm: try TPMKeyUse.create(environment: .process)) }
            return SecKey(try AsymmetricKey.generate(type), extractable: options.extractable)
        }
        let target = try KeychainTarget.current()
        return try Operation.run(authentication, newItem: true, target: target) { keychain, entry in
            let (item, publicKey) = try keychain.keys.generateKey(type, options: options)
            entry?.didWrite()
            if publicPermanent {
                var publicOptions = options
                publicOptions.label = publicLabel ?? options.label
                publicOptions.tag = publicTag ?? options.tag
                publicOptions.accessControl = nil
                publicOptions.accessible = options.accessControl?.protection ?? options.accessible
                try keychain.keys.addKeyFile(try KeyImport.parse(publicKey.subjectPublicKeyInfo, format: .der) { SecureBytes() }, options: publicOptions)
            }
            return SecKey(stored: StoredKey(target: target, item: item, authentication: authentication), publicKey: publicKey)
        }
    }
}

/// The attributes of `key`: class, type, size, application label, what it
/// can do, whether it is permanent and extractable, and for a stored key
/// its label, tag, access group, protection class and access control.
public func SecKeyCopyAttributes(_ key: SecKey) -> CFDictionary? {
    var out: [String: Any] = [:]
    switch key.backing {
    case .stored(let stored):
        out = ItemValues.attributes(stored.item)
        out["perm"] = true
    case .tpm(let use):
        out = ItemValues.attributes(.key, use.key.itemAttributes)
        out["perm"] = false
    case .memory(let held, let extractable):
        out = ItemValues.attributes(.key, held.itemAttributes(extractable: extractable))
        out["perm"] = false
        if held.keyClass == .public { out["v_Data"] = Data(held.publicKeyExternalRepresentation) }
    }
    return out as NSDictionary
}
