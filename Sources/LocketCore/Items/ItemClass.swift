import LocketSupport

/// The kinds of keychain item (kSecClass).
public enum ItemClass: String, CaseIterable, Sendable {
    /// kSecClassGenericPassword.
    case genericPassword = "genp"
    /// kSecClassInternetPassword.
    case internetPassword = "inet"

    /// The long CLI name.
    public var name: String {
        switch self {
        case .genericPassword: "generic-password"
        case .internetPassword: "internet-password"
        }
    }

    /// Accepts the code (`genp`), the long name, or Apple's constant.
    public init(parsing text: String) throws {
        switch text {
        case "genp", "generic-password", "kSecClassGenericPassword": self = .genericPassword
        case "inet", "internet-password", "kSecClassInternetPassword": self = .internetPassword
        default: throw KeychainError(.noSuchClass, "no item class '\(Printable.clip(text))' (use genp or inet)")
        }
    }

    /// The sealed attributes this class has, in display order.
    public var attributes: [Attribute] {
        switch self {
        case .genericPassword:
            [.service, .account, .label, .description, .comment, .generic, .creator, .type]
        case .internetPassword:
            [.server, .account, .protocol, .port, .path, .securityDomain, .authenticationType,
             .label, .description, .comment, .creator, .type]
        }
    }

    /// The attributes that make an item unique, besides the access group.
    public var primaryKey: [Attribute] {
        switch self {
        case .genericPassword: [.service, .account]
        case .internetPassword: [.account, .securityDomain, .server, .protocol, .authenticationType, .port, .path]
        }
    }

    /// The attribute whose value the label takes when `add` is given none.
    var labelDefault: Attribute? {
        switch self {
        case .genericPassword: .service
        case .internetPassword: .server
        }
    }

    /// Whether items of this class carry `attribute` (access group and accessible: always).
    public func supports(_ attribute: Attribute) -> Bool {
        attribute == .accessGroup || attribute == .accessible || attributes.contains(attribute)
    }
}
