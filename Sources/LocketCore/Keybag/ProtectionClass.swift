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

    /// Tiers as bits. A `Set` of them had its generic metadata (and the
    /// standard library's prespecialized sets) set up at run time by every
    /// command that opens a keychain, for three bits.
    struct Tiers: Equatable {
        private var bits: UInt8

        private init(bits: UInt8) { self.bits = bits }
        init(_ tier: Tier) { bits = Tiers.bit(tier) }

        static let none = Tiers(bits: 0)
        /// What a session holds: after-first-unlock and when-unlocked.
        static let session = Tiers(.afterFirstUnlock).union(Tiers(.whenUnlocked))
        static let all = session.union(Tiers(.always))

        private static func bit(_ tier: Tier) -> UInt8 {
            switch tier {
            case .always: 1
            case .whenUnlocked: 2
            case .afterFirstUnlock: 4
            }
        }

        func contains(_ tier: Tier) -> Bool { bits & Tiers.bit(tier) != 0 }
        mutating func insert(_ tier: Tier) { bits |= Tiers.bit(tier) }
        func union(_ other: Tiers) -> Tiers { Tiers(bits: bits | other.bits) }
        func intersection(_ other: Tiers) -> Tiers { Tiers(bits: bits & other.bits) }
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
