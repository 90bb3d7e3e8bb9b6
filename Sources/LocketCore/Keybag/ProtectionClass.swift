import LocketSupport

/// Data-protection classes (kSecAttrAccessible): when an item's data can be read.
public enum ProtectionClass: String, CaseIterable, Sendable {
    case whenUnlocked = "ak"
    case afterFirstUnlock = "ck"
    case always = "dk"
    case whenUnlockedThisDeviceOnly = "aku"
    case afterFirstUnlockThisDeviceOnly = "cku"
    case alwaysThisDeviceOnly = "dku"
    case whenPasscodeSetThisDeviceOnly = "akpu"

    /// When a class's key is in memory.
    public enum Tier: String, Sendable {
        /// Between unlock and lock (or auto-lock).
        case whenUnlocked = "wu"
        /// From the first unlock until `lock --all` or a reboot.
        case afterFirstUnlock = "afu"
        /// Always: the key opens with the device key alone.
        case always = "always"
    }

    /// The CLI name (`--accessible when-unlocked`).
    public var name: String {
        switch self {
        case .whenUnlocked: "when-unlocked"
        case .afterFirstUnlock: "after-first-unlock"
        case .always: "always"
        case .whenUnlockedThisDeviceOnly: "when-unlocked-this-device-only"
        case .afterFirstUnlockThisDeviceOnly: "after-first-unlock-this-device-only"
        case .alwaysThisDeviceOnly: "always-this-device-only"
        case .whenPasscodeSetThisDeviceOnly: "when-passcode-set-this-device-only"
        }
    }

    /// Apple's constant name.
    public var appleName: String {
        switch self {
        case .whenUnlocked: "kSecAttrAccessibleWhenUnlocked"
        case .afterFirstUnlock: "kSecAttrAccessibleAfterFirstUnlock"
        case .always: "kSecAttrAccessibleAlways"
        case .whenUnlockedThisDeviceOnly: "kSecAttrAccessibleWhenUnlockedThisDeviceOnly"
        case .afterFirstUnlockThisDeviceOnly: "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly"
        case .alwaysThisDeviceOnly: "kSecAttrAccessibleAlwaysThisDeviceOnly"
        case .whenPasscodeSetThisDeviceOnly: "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly"
        }
    }

    public var tier: Tier {
        switch self {
        case .whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly: .whenUnlocked
        case .afterFirstUnlock, .afterFirstUnlockThisDeviceOnly: .afterFirstUnlock
        case .always, .alwaysThisDeviceOnly: .always
        }
    }

    /// Bound to this device: never readable from a copy elsewhere.
    public var thisDeviceOnly: Bool {
        switch self {
        case .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly,
             .whenPasscodeSetThisDeviceOnly: true
        default: false
        }
    }

    /// Accepts the CLI name, Apple's constant name, or the code.
    public init(parsing text: String) throws {
        guard let match = ProtectionClass.allCases.first(where: {
            $0.name == text || $0.appleName == text || $0.rawValue == text
        }) else {
            throw KeychainError(.param, "no protection class '\(Printable.clip(text))'", reason: .unknownProtectionClass)
        }
        self = match
    }
}
