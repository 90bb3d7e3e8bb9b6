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

extension KeychainEngine {
    /// The group `add` uses when none is given.
    var defaultGroup: String { caller.accessGroups?.first ?? Keychain.defaultAccessGroup }

    /// Refuses a group the caller's entitlements do not list (errSecMissingEntitlement).
    func authorize(_ group: String) throws {
        guard !group.isEmpty else { throw KeychainError(.param, "the access group is empty") }
        if let allowed = caller.accessGroups, !allowed.contains(group) {
            throw KeychainError(.missingEntitlement, "the access group '\(Printable.clip(group))' is not in the caller's entitlements")
        }
    }

    /// Which rows a query may touch: the one group it names (authorized), or
    /// every group the caller may see (nil for the owner: all of them).
    func filter(_ query: Query) throws -> ItemFilter {
        var filter = ItemFilter(itemClass: query.itemClass, ref: query.persistentRef, protectionClass: query.accessible)
        if let group = query.accessGroup {
            try authorize(group)
            filter.group = group
        } else {
            filter.visibleGroups = caller.accessGroups
        }
        return filter
    }

    /// Keychain-wide changes affect every app's items: only the owner makes them.
    func requireOwner(_ what: String) throws {
        if caller != .owner { throw KeychainError(.missingEntitlement, "\(what) is for the keychain's owner, not an app with entitlements") }
    }
}
