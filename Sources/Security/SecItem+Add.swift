import LocketCore
import LocketSupport

/// SecItemAdd and SecItemUpdate.
extension ItemCalls {
    static func add(_ request: ItemRequest) throws -> AnyObject? {
        // What can't be returned is refused before anything is added.
        if request.returns.contains(.persistentRef) && request.kind == .identity {
            throw KeychainError(.param, "an identity has no persistent reference of its own: ask for its certificate's or key's")
        }
        let target = try KeychainTarget.current()
        let found: ItemValues.Found
        switch request.kind {
        case .item(let itemClass)? where !itemClass.holdsKeyMaterial: found = .item(try addPassword(request, itemClass))
        case .item(.key)?: found = try addKeyMaterial(request, keys: [try key(request)], certificates: [])
        case .item(.certificate)?: found = try addKeyMaterial(request, keys: [], certificates: [try certificate(request)])
        case .identity?:
            guard let identity = request.ref as? SecIdentity else { throw KeychainError(.param, "adding an identity takes kSecValueRef, a SecIdentity") }
            guard case .memory(let privateKey, let extractable) = identity.privateKey.backing else {
                throw KeychainError(.duplicateItem, "the identity's key is in a keychain already")
            }
            var adding = request
            if !extractable { adding.terms.append((.extractable, [0x30])) }
            found = try addKeyMaterial(adding, keys: [privateKey], certificates: [identity.certificate.certificate])
        default: throw KeychainError(.param, "SecItemAdd needs kSecClass")
        }
        return try ItemValues.value(found, request.returns, target, request.authentication)
    }

    /// A generic or internet password.
    private static func addPassword(_ request: ItemRequest, _ itemClass: ItemClass) throws -> Item {
        if request.ref != nil { throw KeychainError(.param, "kSecValueRef is for keys, certificates and identities") }
        var item = NewItem(itemClass: itemClass)
        for (attribute, value) in request.terms { try item.set(attribute, value) }
        if request.synchronizable == .yes { try item.set(.synchronizable, [0x31]) }
        item.givenAsBytes = request.givenAsBytes
        item.accessGroup = request.accessGroup
        item.accessible = request.accessible
        item.accessControl = request.accessControl?.control
        let secret = try SecureBytes(copying: request.data ?? Data())
        var added = try Operation.run(request.authentication, newItem: request.accessControl != nil) { keychain, entry in
            defer { entry?.didWrite() }
            return try keychain.add(item, data: secret)
        }
        added.data = secret
        return added
    }

    /// The key a key item's request adds: kSecValueRef (a SecKey in memory),
    /// or kSecValueData in Apple's external representation with kSecAttrKeyType and kSecAttrKeyClass.
    private static func key(_ request: ItemRequest) throws -> AsymmetricKey {
        if let key = request.ref as? SecKey {
            if case .tpm = key.backing {
                throw KeychainError(.param, "a Secure Enclave key made without kSecAttrIsPermanent stays out of the keychain: make it with kSecAttrIsPermanent to keep it")
            }
            guard case .memory(let held, _) = key.backing else { throw KeychainError(.duplicateItem, "the key is in a keychain already") }
            return held
        }
        guard let data = request.data else { throw KeychainError(.param, "adding a key takes kSecValueRef or kSecValueData") }
        let term = { (attribute: Attribute) in request.terms.last { $0.0 == attribute }?.1 }
        guard let typeName = term(.type), let type = KeyType(rawValue: String(decoding: typeName, as: UTF8.self)) else {
            throw KeychainError(.param, "adding a key's data takes kSecAttrKeyType")
        }
        if term(.keyClass) == Array("private".utf8) {
            return try AsymmetricKey(privateKeyExternalRepresentation: try SecureBytes(copying: data), keyType: type)
        }
        return try AsymmetricKey(publicKeyExternalRepresentation: Array(data), keyType: type)
    }

    private static func certificate(_ request: ItemRequest) throws -> Certificate {
        if let certificate = request.ref as? SecCertificate { return certificate.certificate }
        guard let data = request.data else { throw KeychainError(.param, "adding a certificate takes kSecValueRef or kSecValueData") }
        return try Certificate(der: Array(data))
    }

    /// Keys and certificates, in one transaction: the label, application tag
    /// and extractability given; the other key attributes are the key's own.
    private static func addKeyMaterial(_ request: ItemRequest, keys: [AsymmetricKey], certificates: [Certificate]) throws -> ItemValues.Found {
        var options = KeyItemOptions()
        let label = request.terms.last { $0.0 == .label }.map { String(decoding: $0.1, as: UTF8.self) }
        options.label = label
        options.tag = request.terms.last { $0.0 == .applicationTag }?.1
        options.extractable = request.terms.last { $0.0 == .extractable }?.1 != [0x30]
        options.accessible = request.accessible
        options.accessControl = request.accessControl?.control
        options.accessGroup = request.accessGroup
        options.synchronizable = request.synchronizable == .yes
        let file = ImportedItems(keys: keys.map { ($0, label) },
                                 certificates: certificates.map { ($0, label, keys.isEmpty ? nil : 0) })
        var added: [Item] = []
        try Operation.run(request.authentication, newItem: request.accessControl != nil) { keychain, entry in
            defer { entry?.didWrite() }
            added = []
            try keychain.keys.addKeyFile(file, options: options) { added.append($0.item) }
        }
        var withValues = added
        for (i, item) in added.enumerated() {
            switch item.itemClass {
            case .key: withValues[i].data = try keys[0].pkcs8 ?? SecureBytes(copying: keys[0].subjectPublicKeyInfo)
            case .certificate: withValues[i].data = try SecureBytes(copying: certificates[0].der)
            default: break
            }
        }
        if let key = withValues.first(where: { $0.itemClass == .key }), let certificate = withValues.first(where: { $0.itemClass == .certificate }) {
            return .identity(key: key, certificate: certificate)
        }
        return .item(withValues[0])
    }

    static func update(_ query: ItemRequest, _ changes: ItemRequest) throws {
        if let limit = query.limit, limit != .all { throw KeychainError(.param, "SecItemUpdate changes every match: kSecMatchLimit can only be kSecMatchLimitAll") }
        guard !changes.pendingChanges.isEmpty || changes.accessGroup != nil || changes.data != nil || changes.accessible != nil
                || changes.synchronizable != nil else {
            throw KeychainError(.param, "SecItemUpdate's attributes name nothing to change")
        }
        if query.kind == .identity { throw KeychainError(.param, "identities are updated through their certificate or key") }
        func run(_ itemClass: ItemClass) throws {
            var search = try query.query(itemClass)
            try match(query.ref, in: &search)
            var encoded = changes
            try encoded.encodeTerms(changes.pendingChanges, for: itemClass)
            var newValues = Dictionary(encoded.terms, uniquingKeysWith: { _, last in last })
            // A new class re-seals the items under it, in the same transaction (SPEC §4).
            if let pclass = changes.accessible { newValues[.accessible] = Array(pclass.rawValue.utf8) }
            if let synchronizable = changes.synchronizable { newValues[.synchronizable] = synchronizable == .yes ? [0x31] : [] }
            let data = try changes.data.map { try SecureBytes(copying: $0) }
            try Operation.run(query.authentication) { keychain, entry in
                defer { entry?.didWrite() }
                _ = try keychain.update(search, changes: newValues, accessGroup: changes.accessGroup, data: data,
                                        givenAsBytes: encoded.givenAsBytes)
            }
        }
        switch query.kind {
        case .item(let itemClass)?: try run(itemClass)
        case .identity?: break
        case nil:
            guard query.persistentRef != nil else { throw KeychainError(.param, "SecItemUpdate needs kSecClass") }
            try firstClass(run)
        }
    }
}
