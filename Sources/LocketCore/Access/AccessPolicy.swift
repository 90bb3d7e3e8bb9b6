import LocketSupport

/// Who is calling, and which access groups that allows (SPEC §6).
public enum Caller: Sendable, Equatable {
    /// No entitlements: any group may be named; `add` defaults to `default`.
    case owner
    /// An app: only the groups of its entitlements, the first being the default.
    case app(Entitlements)

    /// nil for the owner, who is not limited.
    public var accessGroups: [String]? {
        if case .app(let entitlements) = self { return entitlements.accessGroups }
        return nil
    }
}

extension Keychain {
    /// The group `add` uses when none is given.
    public var defaultGroup: String { caller.accessGroups?.first ?? Keychain.defaultAccessGroup }

    /// Refuses a group the caller's entitlements do not list (errSecMissingEntitlement).
    func authorize(_ group: String) throws {
        guard !group.isEmpty else { throw KeychainError(.param, "the access group is empty") }
        if let allowed = caller.accessGroups, !allowed.contains(group) {
            throw KeychainError(.missingEntitlement, "the access group '\(Printable.clip(group))' is not in the caller's entitlements")
        }
    }

    /// The SQL condition limiting rows to the caller's groups ("" for the owner).
    func visibleGroupsCondition() -> String {
        guard let allowed = caller.accessGroups else { return "" }
        return "agrp IN (\(allowed.map(sqlQuote).joined(with: ", ")))"
    }

    /// Keychain-wide changes affect every app's items: only the owner makes them.
    func requireOwner(_ what: String) throws {
        if caller != .owner { throw KeychainError(.missingEntitlement, "\(what) is for the keychain's owner, not an app with entitlements") }
    }

    func sqlQuote(_ s: String) -> String { "'" + s.replacingAll("'", "''") + "'" }
}
