import LocketSupport

/// What the credential socket gives to whom (`locket credential-socket
/// --policy FILE`): for each systemd unit, the access groups it gets and, for
/// each credential ID of its `LoadCredential=` lines, the secret reference
/// (SPEC §9: `SERVICE/ACCOUNT` or `SCHEME://[USER@]HOST[:PORT][/PATH]`) that
/// answers it. Everything else is refused.
///
/// The file is JSON, checked like an entitlements file (`TrustedFile`):
///
///     {
///       "units": {
///         "deploy.service": {
///           "access-groups": ["deploy"],
///           "credentials": { "github-token": "github/deploy" }
///         },
///         "backup@.service": { ... }
///       }
///     }
///
/// A template's name (`backup@.service`) covers each of its instances
/// (`backup@daily.service`) that has no entry of its own. Unknown keys are
/// refused, so that a misspelt one can't silently grant or withhold.
public struct CredentialPolicy: Sendable {
    /// What a unit is given for one credential ID.
    public struct Grant: Sendable {
        /// The reference as the policy spells it (for log lines: names, never a secret).
        public let reference: String
        /// The item it names.
        public let query: Query
        /// The unit as a caller: an app whose access groups are the unit's.
        public let caller: Caller
    }

    struct Unit: Sendable {
        var groups: [String]
        var credentials: [(id: String, reference: String, query: Query)]
    }

    let units: [(name: String, unit: Unit)]

    /// The largest policy file read.
    static let maximumFileSize = 1 << 20
    /// systemd's own limits: a unit name (UNIT_NAME_MAX) and a credential ID (a file name).
    static let maximumUnitName = 256
    static let maximumCredentialID = 255

    /// Reads and checks the policy at `path`. `server` is the caller the
    /// credential socket runs as: an app (`-e`) may hand out only its own
    /// access groups. Every failure is errSecParam with a message that
    /// starts with the path.
    public static func load(path: String, server: Caller) throws -> CredentialPolicy {
        let file = TrustedFile(what: "a credential policy file", holds: "credential policies", maximumSize: maximumFileSize)
        return try parse(try file.read(path), name: path, server: server)
    }

    /// Parses a policy document; `name` starts every error message.
    public static func parse(_ bytes: [UInt8], name: String, server: Caller) throws -> CredentialPolicy {
        func fail(_ problem: String) -> KeychainError { KeychainError(.param, "\(name): \(problem)") }
        let input = try SecureBytes(copying: bytes)
        let document: JSONValue
        do { document = try JSONValue.parse(input, options: JSONValue.Options(maximumDepth: 8)) } catch let error as KeychainError {
            throw fail("malformed: \(error.message)")
        }
        guard case .object(let top) = document else { throw fail("malformed: the top level must be an object") }
        try checkKeys(top, allowed: ["units"], where: "the top level", fail)
        guard case .object(let unitMembers)? = document["units"] else { throw fail("\"units\" must be an object of unit names") }
        var units: [(name: String, unit: Unit)] = []
        for (unitName, value) in unitMembers {
            try checkUnitName(unitName, fail)
            guard !units.contains(where: { $0.name == unitName }) else { throw fail("the unit \(unitName) is given twice") }
            guard case .object(let members) = value else { throw fail("the unit \(unitName) must be an object") }
            try checkKeys(members, allowed: ["access-groups", "credentials"], where: "the unit \(unitName)", fail)
            guard case .array(let groupValues)? = value["access-groups"], !groupValues.isEmpty else {
                throw fail("the unit \(unitName) needs \"access-groups\": a non-empty array of the access groups it may read")
            }
            var groups: [String] = []
            for groupValue in groupValues {
                guard case .string = groupValue, let group = String(validating: groupValue.bytes(in: input), as: UTF8.self) else {
                    throw fail("the access groups of \(unitName) must be strings")
                }
                try checkGroup(group, unit: unitName, fail)
                if let allowed = server.accessGroups, !allowed.contains(group) {
                    throw fail("the unit \(unitName) is given the access group '\(Printable.clip(group))', which is not in the credential socket's own entitlements")
                }
                if !groups.contains(group) { groups.append(group) }
            }
            guard groups.count <= 64 else { throw fail("the unit \(unitName) has more than 64 access groups") }
            guard case .object(let credentialMembers)? = value["credentials"] else {
                throw fail("the unit \(unitName) needs \"credentials\": an object from credential ID to secret reference")
            }
            var credentials: [(id: String, reference: String, query: Query)] = []
            for (id, referenceValue) in credentialMembers {
                try checkCredentialID(id, unit: unitName, fail)
                guard !credentials.contains(where: { $0.id == id }) else { throw fail("the credential \(id) of \(unitName) is given twice") }
                guard case .string = referenceValue, let reference = String(validating: referenceValue.bytes(in: input), as: UTF8.self) else {
                    throw fail("the credential \(id) of \(unitName) must be a secret reference (a string)")
                }
                let query: Query
                do { query = try Reference.query(reference) } catch let error as KeychainError {
                    throw fail("the credential \(id) of \(unitName): \(error.message)")
                }
                credentials.append((id, reference, query))
            }
            units.append((unitName, Unit(groups: groups, credentials: credentials)))
        }
        return CredentialPolicy(units: units)
    }

    /// The grant for `credential` of `unit`; nil when the policy gives it none.
    /// An instance of a template (`name@instance.service`) falls back to the
    /// template's entry (`name@.service`) when it has none of its own.
    public func grant(unit: String, credential: String) -> Grant? {
        let entry = units.first { $0.name == unit }?.unit ?? CredentialPolicy.template(of: unit).flatMap { template in
            units.first { $0.name == template }?.unit
        }
        guard let entry, let found = entry.credentials.first(where: { $0.id == credential }) else { return nil }
        return Grant(reference: found.reference, query: found.query,
                     caller: .app(Entitlements(accessGroups: entry.groups, applicationIdentifier: nil)))
    }

    /// `name@.service` for `name@instance.service`; nil for a unit that is no instance.
    static func template(of unit: String) -> String? {
        guard let at = unit.firstIndex(of: "@"), let dot = unit.lastIndex(of: "."), at < dot,
              unit.index(after: at) < dot else { return nil }
        return String(unit[...at]) + String(unit[dot...])
    }

    private static func checkKeys(_ members: [(key: String, value: JSONValue)], allowed: Set<String>, where place: String,
                                  _ fail: (String) -> KeychainError) throws {
        for (key, _) in members where !allowed.contains(key) {
            throw fail("\(place) has an unknown key \"\(Printable.clip(key))\" (known: \(allowed.sorted().joined(separator: ", ")))")
        }
        for key in allowed where members.filter({ $0.key == key }).count > 1 {
            throw fail("\(place) gives \"\(key)\" twice")
        }
    }

    /// Unit names are systemd's: printable, no slash, a type suffix.
    private static func checkUnitName(_ name: String, _ fail: (String) -> KeychainError) throws {
        guard !name.isEmpty, name.utf8.count <= maximumUnitName, !name.contains("/"), name.contains("."),
              !name.unicodeScalars.contains(where: { $0.value <= 0x20 || (0x7f...0x9f).contains($0.value) }) else {
            throw fail("\"\(Printable.clip(name))\" is not a unit name (such as deploy.service or backup@.service)")
        }
    }

    /// Credential IDs are file names in `$CREDENTIALS_DIRECTORY`.
    private static func checkCredentialID(_ id: String, unit: String, _ fail: (String) -> KeychainError) throws {
        guard !id.isEmpty, id != ".", id != "..", id.utf8.count <= maximumCredentialID, !id.contains("/"),
              !id.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) }) else {
            throw fail("\"\(Printable.clip(id))\" of \(unit) is not a credential ID (a file name: no slash, no control character)")
        }
    }

    /// Access groups as entitlements take them.
    private static func checkGroup(_ group: String, unit: String, _ fail: (String) -> KeychainError) throws {
        guard !group.isEmpty, group.utf8.count <= 200,
              !group.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) }) else {
            throw fail("the unit \(unit) has an access group that is empty, too long or has control characters")
        }
    }
}
