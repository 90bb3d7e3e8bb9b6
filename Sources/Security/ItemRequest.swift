import LocalAuthentication
import LocketCore
import LocketSupport

/// One SecItem dictionary, read once: its class, attribute terms, return
/// types, match limit, values and authentication options, each key checked
/// against what the call takes. A key the call does not take is
/// errSecParam; an attribute the item class does not have is
/// errSecNoSuchAttr (SPEC §3), as on Apple's platforms.
struct ItemRequest {
    /// What the dictionary is given to.
    enum Role {
        case add, search, update, changes, delete

        var name: String {
            switch self {
            case .add: "SecItemAdd"
            case .search: "SecItemCopyMatching"
            case .update: "SecItemUpdate's query"
            case .changes: "SecItemUpdate's attributes"
            case .delete: "SecItemDelete"
            }
        }
    }

    /// The class named (kSecClass), or implied by the value's type.
    enum Kind: Equatable {
        case item(ItemClass)
        case identity
    }

    struct Returns: OptionSet {
        let rawValue: Int
        static let data = Returns(rawValue: 1)
        static let attributes = Returns(rawValue: 2)
        static let ref = Returns(rawValue: 4)
        static let persistentRef = Returns(rawValue: 8)
    }

    /// kSecUseAuthenticationUI.
    enum Interaction { case allow, fail, skip }

    var kind: Kind?
    /// Attribute terms in the order given (Apple's keys, canonical bytes).
    var terms: [(Attribute, [UInt8])] = []
    var accessGroup: String?
    /// kSecAttrAccessible: the class of an item added, a query's term, or
    /// SecItemUpdate's new class (the items re-sealed under it).
    var accessible: ProtectionClass?
    var accessControl: SecAccessControl?
    /// kSecAttrSynchronizable as given: true, false, or (in a query)
    /// kSecAttrSynchronizableAny; nil when absent (Apple's "false").
    var synchronizable: Synchronizable?
    /// The string attributes given as Data (stored so, they read back as Data).
    var givenAsBytes: Set<Attribute> = []
    /// kSecAttrTokenID kSecAttrTokenIDSecureEnclave.
    var secureEnclave = false
    var returns: Returns = []
    var limit: MatchLimit?
    /// kSecValueData as the caller gave it (Data is a reference to its
    /// bytes: the secret is copied once, into guarded memory, where it is used).
    var data: Data?
    var ref: AnyObject?
    var persistentRef: [UInt8]?
    var prompt: String?
    var interaction = Interaction.allow
    var context: LAContext?

    /// Reads `dictionary` for `role`.
    init(_ dictionary: NSDictionary, _ role: Role) throws {
        var pending: [(String, Attribute, Any)] = []
        for (rawKey, rawValue) in Self.entries(dictionary) {
            guard let key = Value.string(rawKey) else { throw KeychainError(.param, "a key of \(role.name)'s dictionary is not a string") }
            // A nil value (an Optional that is nil) is as if the key were absent.
            guard let value = Value.unwrapped(rawValue) else { continue }
            if let attribute = AttributeCoding.attribute(key) {
                guard role != .changes || !Self.addOnly.contains(attribute) else {
                    throw KeychainError(.param, "\(key) is set when an item is added and can't be changed")
                }
                pending.append((key, attribute, value))
                continue
            }
            try read(key, value, role)
        }
        if kind == nil, role != .changes, let ref {
            kind = ref is SecKey ? .item(.key) : ref is SecCertificate ? .item(.certificate) : ref is SecIdentity ? .identity : nil
        }
        guard !pending.isEmpty else { return }
        let itemClass: ItemClass
        switch kind {
        case .item(let named)?: itemClass = named
        case .identity?: itemClass = .key
        case nil:
            // SecItemUpdate's attributes name no class: the query's decides (`encodeTerms`).
            guard role == .changes else { throw KeychainError(.param, "\(role.name) needs kSecClass") }
            self.pendingChanges = pending
            return
        }
        try encodeTerms(pending, for: kind == .identity ? nil : itemClass)
    }

    /// The keys and values of `dictionary` (enumerated: half the cost of its iterator here).
    static func entries(_ dictionary: NSDictionary) -> [(Any, Any)] {
        var out: [(Any, Any)] = []
        out.reserveCapacity(dictionary.count)
        dictionary.enumerateKeysAndObjects { key, value, _ in out.append((key, value)) }
        return out
    }

    /// The attributes of SecItemUpdate's second dictionary, waiting for the query's class.
    var pendingChanges: [(String, Attribute, Any)] = []

    /// Encodes attribute values for `itemClass` (nil: an identity, whose
    /// terms go to its certificate or its key).
    mutating func encodeTerms(_ pending: [(String, Attribute, Any)], for itemClass: ItemClass?) throws {
        for (key, attribute, value) in pending {
            let owner: ItemClass
            if let itemClass {
                guard itemClass.supports(attribute) else {
                    throw KeychainError(.noSuchAttr, "\(itemClass.name) items have no \(key) attribute")
                }
                owner = itemClass
            } else {
                owner = ItemClass.certificate.supports(attribute) ? .certificate : .key
            }
            terms.append((attribute, try AttributeCoding.encode(value, attribute, owner, key: key)))
            if attribute.kind == .string && attribute != .applicationTag && Value.data(value) != nil { givenAsBytes.insert(attribute) }
        }
    }

    /// Attributes given when an item is added and never changed (SPEC §4).
    private static let addOnly: Set<Attribute> = [.keyClass, .applicationLabel, .keySize, .effectiveKeySize, .extractable]

    private mutating func read(_ key: String, _ value: Any, _ role: Role) throws {
        func refuse(_ why: String) -> KeychainError { KeychainError(.param, "\(key) \(why)") }
        func flag() throws -> Bool {
            guard let flag = Value.bool(value) else { throw Value.wrongType(key, "a Bool") }
            return flag
        }
        switch key {
        case "class":
            guard role != .changes else { throw refuse("can't be changed") }
            guard let name = Value.string(value) else { throw Value.wrongType(key, "a kSecClass value") }
            if name == "idnt" { kind = .identity; return }
            guard let itemClass = ItemClass(rawValue: name) else {
                throw KeychainError(.noSuchClass, "no item class '\(Printable.clip(name))'")
            }
            kind = .item(itemClass)
        case "agrp":
            guard let group = Value.string(value) else { throw Value.wrongType(key, "a String") }
            accessGroup = group
        case "pdmn":
            // An ordinary attribute, as on Apple's platforms (SPEC §4): in a query a term, in SecItemUpdate a new class.
            guard let name = Value.string(value) else { throw Value.wrongType(key, "a kSecAttrAccessible value") }
            accessible = try ProtectionClass(parsing: name)
        case "accc":
            guard role == .add else { throw refuse(role == .changes ? "is set when an item is added and can't be changed" : "can't be used in a query") }
            guard let control = value as? SecAccessControl else { throw Value.wrongType(key, "a SecAccessControl") }
            accessControl = control
        case "sync":
            if Value.string(value) == "syna" {
                guard role == .search || role == .update || role == .delete else { throw refuse("kSecAttrSynchronizableAny is for queries") }
                synchronizable = .any
                return
            }
            synchronizable = try flag() ? .yes : .no
        case "tkid":
            guard Value.string(value) == "com.apple.setoken" else { throw refuse("supports only kSecAttrTokenIDSecureEnclave in queries") }
            guard role == .search || role == .delete || role == .update else {
                throw refuse("can't be given here: keys that never leave the keychain are made by SecKeyCreateRandomKey")
            }
            secureEnclave = true
        case "v_Data":
            guard role == .add || role == .changes else { throw refuse("can't be used in a query") }
            guard let bytes = Value.dataObject(value) else { throw Value.wrongType(key, "Data") }
            data = bytes
        case "v_Ref":
            guard role != .changes else { throw refuse("can't be changed") }
            ref = value as AnyObject
        case "v_PersistentRef", "persistref":
            guard role != .add && role != .changes else { throw refuse("is given by the keychain") }
            guard let bytes = Value.bytes(value), let decoded = PersistentReference.decode(bytes) else {
                throw KeychainError(.param, "kSecValuePersistentRef is not a persistent reference")
            }
            persistentRef = decoded
        case "r_Data", "r_Attributes", "r_Ref", "r_PersistentRef":
            // SecItemDelete ignores them, as Apple's does.
            if role == .delete { return }
            guard role == .add || role == .search else { throw refuse("is not supported by \(role.name)") }
            let flags: [String: Returns] = ["r_Data": .data, "r_Attributes": .attributes, "r_Ref": .ref, "r_PersistentRef": .persistentRef]
            if try flag() { returns.insert(flags[key]!) }
        case "m_Limit":
            guard role != .changes else { throw refuse("is not an attribute") }
            if let name = Value.string(value), name == "m_LimitOne" || name == "m_LimitAll" {
                limit = name == "m_LimitOne" ? .one : .all
            } else if let n = Value.integer(value) {
                guard n >= 1 else { throw refuse("must be at least 1") }
                limit = .count(n)
            } else {
                throw Value.wrongType(key, "kSecMatchLimitOne, kSecMatchLimitAll or a number")
            }
        case "m_CaseInsensitive":
            if try flag() { throw refuse("is not supported: values match byte for byte") }
        case "u_OpPrompt":
            guard let text = Value.string(value) else { throw Value.wrongType(key, "a String") }
            prompt = text
        case "u_AuthUI":
            switch Value.string(value) {
            case "u_AuthUIA"?: interaction = .allow
            case "u_AuthUIF"?: interaction = .fail
            case "u_AuthUIS"?: interaction = .skip
            default: throw Value.wrongType(key, "kSecUseAuthenticationUIAllow, ...Fail or ...Skip")
            }
        case "u_NoAuthUI":
            if try flag() { interaction = .fail }
        case "u_AuthCtx":
            guard let context = value as? LAContext else { throw Value.wrongType(key, "an LAContext") }
            self.context = context
        case "nleg", "sens", "perm", "u_Tomb":
            // The data protection keychain's semantics are locket's; the rest Apple ignores here too.
            return
        case "cdat", "mdat":
            throw refuse(role == .search || role == .update || role == .delete ? "can't be used in a query" : "is set by the keychain")
        default:
            throw KeychainError(.param, "\(role.name) does not take the key '\(Printable.clip(key))'")
        }
    }

    /// The class this request is for; errSecParam when it names none.
    func itemClass(_ role: Role) throws -> ItemClass {
        guard case .item(let itemClass)? = kind else {
            throw KeychainError(.param, kind == nil ? "\(role.name) needs kSecClass" : "\(role.name) of identities is not supported here")
        }
        return itemClass
    }

    /// The engine's query: terms, group, reference, and the Secure Enclave's mark.
    func query(_ itemClass: ItemClass) throws -> Query {
        var query = Query(itemClass: itemClass)
        for (attribute, value) in terms { try query.match(attribute, value) }
        if secureEnclave {
            guard itemClass == .key else { throw KeychainError(.noSuchAttr, "\(itemClass.name) items have no kSecAttrTokenID attribute") }
            // The keys the TPM holds (tkid), not software keys that merely never leave.
            try query.match(.tokenID, KeyToken.secureEnclaveID)
        }
        query.accessGroup = accessGroup
        query.accessible = accessible
        query.synchronizable = synchronizable
        query.persistentRef = persistentRef
        return query
    }

    /// The application password the context carries, and whether a proof may be asked for.
    var authentication: Authentication {
        Authentication(prompt: prompt ?? context?.localizedReason, applicationPassword: context?.applicationPassword,
                       mayAsk: interaction == .allow && context?.interactionNotAllowed != true)
    }
}

/// How an operation may obtain the proofs its items' access control needs.
struct Authentication {
    /// kSecUseOperationPrompt (or the context's localizedReason): why, shown above the prompt.
    var prompt: String?
    /// The context's application password credential.
    var applicationPassword: Data?
    /// False: never ask (kSecUseAuthenticationUIFail/Skip, interactionNotAllowed).
    var mayAsk: Bool
}
