import LocketCore
import LocketSupport

/// Turns the attribute options of add/find/update/delete into engine values.
enum AttributeOptions {
    static func itemClass(_ invocation: Invocation) throws -> ItemClass {
        try invocation.value("class").map { try ItemClass(parsing: $0) } ?? .genericPassword
    }

    /// The attributes that have an option (CommandTable.attributeOptions),
    /// in table order: a lookup per attribute is on every `find`'s path, so
    /// not one for each of the key and certificate attributes without an option.
    static let optionAttributes: [Attribute] = [
        .account, .service, .label, .description, .comment, .generic, .creator, .type, .server, .securityDomain,
        .protocol, .authenticationType, .port, .path, .accessGroup, .applicationTag, .fingerprint,
    ]

    /// How many items `find` returns: one, `--all`, or `--limit N`.
    static func matchLimit(_ invocation: Invocation) throws -> MatchLimit {
        if let text = invocation.value("limit") {
            guard let n = Int(text), n > 0 else { throw UsageError(message: "--limit needs a positive number", command: "find") }
            return .count(n)
        }
        return invocation.has("all") ? .all : .one
    }

    /// `--class identity`: not a stored class but a view over keys and certificates.
    static func isIdentity(_ invocation: Invocation) -> Bool {
        ["identity", "idnt", "kSecClassIdentity"].contains(invocation.value("class") ?? "")
    }

    /// The identity query of the attribute options: certificate terms and key terms.
    static func identityQuery(_ invocation: Invocation) throws -> IdentityQuery {
        var query = IdentityQuery()
        for attribute in optionAttributes {
            guard let text = invocation.value(attribute.longName) else { continue }
            let owner: ItemClass = ItemClass.certificate.supports(attribute) ? .certificate : .key
            try query.match(attribute, try AttributeValue.parse(attribute, Array(text.utf8), for: owner))
        }
        if invocation.has("ref") { throw KeychainError(.param, "an identity has no persistent reference of its own: find its certificate or key by --ref") }
        return query
    }

    /// Calls `body` with each attribute given and its value, in table order
    /// (not an array of them: an array of a tuple type costs `find` its
    /// metadata at run time). `-s` means the service of a generic password
    /// and the server of an internet password; the long spellings mean
    /// exactly what they say, so `--service` on inet is errSecNoSuchAttr.
    static func given(_ invocation: Invocation, _ itemClass: ItemClass, _ body: (Attribute, [UInt8]) throws -> Void) throws {
        for attribute in optionAttributes {
            guard let text = invocation.value(attribute.longName) else { continue }
            var target = attribute
            if attribute == .service && itemClass == .internetPassword && invocation.spelling("service") == "-s" {
                target = .server
            }
            guard itemClass.supports(target) else {
                throw KeychainError(.noSuchAttr, "\(itemClass.name) items have no \(target.longName) attribute (\(target.code))",
                                    hint: itemClass == .genericPassword && target == .server ? "use --class inet for internet passwords"
                                        : itemClass == .internetPassword && target == .service ? "an internet password's server is -s or --server" : nil)
            }
            try body(target, try AttributeValue.parse(target, Array(text.utf8), for: itemClass))
        }
    }

    /// Each `--attr NAME=VALUE` (SPEC §18), split by FreeFormMapping: `service`
    /// and `username` are the service and account, the rest free-form.
    static func freeForm(_ invocation: Invocation, _ itemClass: ItemClass,
                         _ body: (_ mapped: Attribute?, _ name: String, _ value: String) throws -> Void) throws {
        let given = invocation.all("attr")
        guard !given.isEmpty else { return }
        guard itemClass == .genericPassword else {
            throw KeychainError(.noSuchAttr, "\(itemClass.name) items have no free-form attributes (--attr is for generic passwords)")
        }
        for text in given {
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw UsageError(message: "--attr takes NAME=VALUE, not '\(Printable.clip(text))'", command: invocation.command.name)
            }
            let name = String(text[..<equals])
            try body(FreeFormMapping.attribute(named: name), name, String(text[text.index(after: equals)...]))
        }
    }

    /// A query from the attribute options, `--ref`, `--synchronizable` and
    /// (where it is a term: find, delete) `--accessible` included.
    static func query(_ invocation: Invocation, accessibleIsATerm: Bool = true) throws -> Query {
        let itemClass = try itemClass(invocation)
        var query = Query(itemClass: itemClass)
        try given(invocation, itemClass) { try query.match($0, $1) }
        if accessibleIsATerm, let pclass = invocation.value("accessible") { query.accessible = try ProtectionClass(parsing: pclass) }
        if let text = invocation.value("synchronizable") { query.synchronizable = try synchronizable(text, command: invocation.command.name) }
        try freeForm(invocation, itemClass) { mapped, name, value in
            if let mapped { try query.match(mapped, try AttributeValue.parse(mapped, Array(value.utf8))) } else { query.match(freeForm: name, value) }
        }
        if let ref = invocation.value("ref") {
            guard let bytes = PersistentRef.decode(ref) else {
                throw KeychainError(.param, "'\(Printable.clip(ref, max: 40))' is not a persistent reference (32 hexadecimal digits)")
            }
            query.persistentRef = bytes
        }
        return query
    }
}

extension AttributeOptions {
    /// `--synchronizable[=yes|no|any]`: the bare option is yes.
    static func synchronizable(_ text: String, command: String) throws -> Synchronizable {
        switch text {
        case "", "yes", "true", "1": .yes
        case "no", "false", "0": .no
        case "any": .any
        default: throw UsageError(message: "--synchronizable takes yes, no or any, not '\(Printable.clip(text, max: 40))'", command: command)
        }
    }
}

/// Persistent references print as 32 lowercase hexadecimal digits.
enum PersistentRef {
    static func decode(_ text: String) -> [UInt8]? {
        text.utf8.count == 32 ? Hex.decode(text) : nil
    }
}
