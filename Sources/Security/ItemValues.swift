import LocketCore
import LocketSupport

/// What SecItemCopyMatching and SecItemAdd give back, shaped as Apple's:
/// with one return type, its value (the secret or the persistent reference
/// as Data, the SecKey, SecCertificate or SecIdentity); with several, or
/// with kSecReturnAttributes, a dictionary of the attributes plus
/// kSecValueData, kSecValueRef and kSecValuePersistentRef as asked; with a
/// match limit other than one, an array of those.
enum ItemValues {
    /// An item found: a stored item, or an identity (its key and its certificate, opened).
    enum Found {
        case item(Item)
        case identity(key: Item, certificate: Item)
    }

    /// The value of one found item for `returns`; nil when nothing was asked.
    static func value(_ found: Found, _ returns: ItemRequest.Returns, _ target: KeychainTarget,
                      _ authentication: Authentication) throws -> AnyObject? {
        if returns.isEmpty { return nil }
        if returns.contains(.ref), case .item(let item) = found, !item.itemClass.holdsKeyMaterial {
            // Apple makes no object of a password (SecItemCreateFromAttributeDictionary):
            // asked alone, the answer is nothing; with other return types, a
            // dictionary without kSecValueRef and with the secret it read for it.
            if returns == .ref { return nil }
            var out = returns.contains(.attributes) ? attributes(item) : [:]
            out["v_Data"] = try data(item)
            if returns.contains(.persistentRef) { out["v_PersistentRef"] = PersistentReference.encode(item.persistentRef) }
            return out as NSDictionary
        }
        if returns == .data { return try data(found) as NSData }
        if returns == .persistentRef { return try persistentRef(found) as NSData }
        if returns == .ref { return try ref(found, target, authentication) }
        var out: [String: Any] = [:]
        if returns.contains(.attributes) { out = attributes(found) }
        if returns.contains(.data) { out["v_Data"] = try data(found) }
        if returns.contains(.persistentRef) { out["v_PersistentRef"] = try persistentRef(found) }
        if returns.contains(.ref) { out["v_Ref"] = try ref(found, target, authentication) }
        return out as NSDictionary
    }

    /// The attributes of an item, under Apple's keys (the four-character codes).
    static func attributes(_ item: Item) -> [String: Any] {
        var out = attributes(item.itemClass, item.attributes, givenAsBytes: item.givenAsBytes)
        out["agrp"] = item.accessGroup
        out["pdmn"] = item.accessible.rawValue
        out["cdat"] = Date(timeIntervalSince1970: TimeInterval(item.creationDate) / 1000)
        out["mdat"] = Date(timeIntervalSince1970: TimeInterval(item.modificationDate) / 1000)
        out["sync"] = item[.synchronizable] == [0x31]
        out["persistref"] = PersistentReference.encode(item.persistentRef)
        if let control = item.accessControl { out["accc"] = SecAccessControl(control) }
        return out
    }

    /// Stored attribute values of an item of `itemClass`, under Apple's keys.
    static func attributes(_ itemClass: ItemClass, _ values: [Attribute: [UInt8]], givenAsBytes: Set<Attribute> = []) -> [String: Any] {
        var out: [String: Any] = [:]
        for attribute in itemClass.attributes where !locketOnly.contains(attribute) {
            let value = values[attribute] ?? []
            guard !value.isEmpty || alwaysShown(attribute, itemClass) else { continue }
            out[attribute.code] = AttributeCoding.decode(value, attribute, itemClass, givenAsBytes: givenAsBytes.contains(attribute))
        }
        return out
    }

    private static func attributes(_ found: Found) -> [String: Any] {
        switch found {
        case .item(let item): return attributes(item)
        case .identity(let key, let certificate):
            // An identity's attributes are its key's and its certificate's; the certificate's label wins.
            return attributes(key).merging(attributes(certificate)) { _, fromCertificate in fromCertificate }
        }
    }

    /// Attributes locket keeps beyond Apple's: left out of Apple's dictionaries.
    private static let locketOnly: Set<Attribute> = [.fingerprint, .subjectName, .issuerName, .notBefore, .notAfter]

    /// The primary-key strings of a password, shown empty as Apple shows them.
    private static func alwaysShown(_ attribute: Attribute, _ itemClass: ItemClass) -> Bool {
        switch itemClass {
        case .genericPassword: attribute == .account || attribute == .service
        case .internetPassword: [.account, .securityDomain, .server, .path, .port].contains(attribute)
        case .key, .certificate: false
        }
    }

    /// The secret as Apple gives it: a password's bytes, a key in Apple's
    /// external representation, a certificate's DER.
    static func data(_ item: Item) throws -> Data {
        guard let secret = item.data else { throw KeychainError(.decode, "an item's secret could not be opened") }
        guard item.itemClass == .key else { return secret.withUnsafeBytes { Data($0) } }
        if item[.keyClass] == Array("private".utf8) {
            return try AsymmetricKey(pkcs8: secret).privateKeyExternalRepresentation().withUnsafeBytes { Data($0) }
        }
        return Data(try AsymmetricKey(subjectPublicKeyInfo: secret.bytes).publicKeyExternalRepresentation)
    }

    private static func data(_ found: Found) throws -> Data {
        switch found {
        case .item(let item): return try data(item)
        case .identity(_, let certificate): return try data(certificate)
        }
    }

    private static func persistentRef(_ found: Found) throws -> Data {
        switch found {
        case .item(let item): return PersistentReference.encode(item.persistentRef)
        case .identity:
            throw KeychainError(.param, "an identity has no persistent reference of its own: ask for its certificate's or key's")
        }
    }

    /// The item as an object.
    static func ref(_ found: Found, _ target: KeychainTarget, _ authentication: Authentication) throws -> AnyObject {
        switch found {
        case .item(let item):
            switch item.itemClass {
            case .key:
                var described = item
                described.data = nil
                let publicKey = item[.keyClass] == Array("public".utf8) ? try item.data.map { try AsymmetricKey(subjectPublicKeyInfo: $0.bytes) } : nil
                return SecKey(stored: StoredKey(target: target, item: described, authentication: authentication), publicKey: publicKey)
            case .certificate:
                return SecCertificate(try Certificate(der: Array(try data(item))))
            case .genericPassword, .internetPassword:
                // `value` answers a password's kSecReturnRef as Apple does, before this.
                throw KeychainError(.param, "a password has no object (kSecReturnRef)")
            }
        case .identity(let key, let certificate):
            guard let certificateObject = try ref(.item(certificate), target, authentication) as? SecCertificate,
                  let keyObject = try ref(.item(key), target, authentication) as? SecKey else {
                throw KeychainError(.decode, "an identity could not be read")
            }
            return SecIdentity(certificate: certificateObject, privateKey: keyObject)
        }
    }
}

/// Persistent references as the command line prints and takes them: the 32
/// hexadecimal digits of `locket find --show-ref` and `--ref`, as UTF-8 bytes.
enum PersistentReference {
    static func encode(_ ref: [UInt8]) -> Data { Data(Hex.encode(ref).utf8) }

    /// The reference in `bytes`: its 32 hexadecimal digits, or its 16 bytes.
    static func decode(_ bytes: [UInt8]) -> [UInt8]? {
        if bytes.count == 32, let decoded = Hex.decode(String(decoding: bytes, as: UTF8.self)) { return decoded }
        return bytes.count == 16 ? bytes : nil
    }
}
