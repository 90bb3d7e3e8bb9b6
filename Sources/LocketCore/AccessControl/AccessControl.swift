import LocketSupport

/// kSecAttrAccessControl (SPEC §14): a protection class and the proofs an
/// item's secret needs on top of it. Given at add (and import, key generate)
/// as `CLASS:FLAG[,FLAG]`; it replaces `accessible`, never joins it.
public struct AccessControl: Equatable, Sendable {
    /// What an item's secret needs besides its class key.
    public enum Flag: String, CaseIterable, Sendable {
        /// The keychain password at every read or use (userPresence, devicePasscode).
        case userPresence = "user-presence"
        /// As user-presence, and bound to the current password (biometryCurrentSet):
        /// after a password change the item is permanently unreadable.
        case passwordCurrentSet = "password-current-set"
        /// An extra per-item password (applicationPassword), stretched with Argon2id.
        case applicationPassword = "application-password"

        /// Apple's name for the flag (kSecAccessControl...).
        public var appleName: String {
            switch self {
            case .userPresence: "userPresence"
            case .passwordCurrentSet: "biometryCurrentSet"
            case .applicationPassword: "applicationPassword"
            }
        }

        /// Accepts locket's name or Apple's (devicePasscode is user-presence:
        /// the keychain password is the only passcode here).
        init?(parsing text: String) {
            if text == "devicePasscode" { self = .userPresence; return }
            guard let match = Flag.allCases.first(where: { $0.rawValue == text || $0.appleName == text }) else { return nil }
            self = match
        }
    }

    /// When the item's class key is available (kSecAttrAccessible).
    public var protection: ProtectionClass
    /// The proofs the secret needs.
    public var flags: Set<Flag>

    public init(protection: ProtectionClass, flags: Set<Flag>) {
        self.protection = protection
        self.flags = flags
    }

    /// Parses `CLASS:FLAG[,FLAG]`, for example
    /// `when-passcode-set-this-device-only:user-presence`.
    public init(parsing text: String) throws {
        guard let colon = text.firstIndex(of: ":") else {
            throw KeychainError(.param, "access control '\(Printable.clip(text))' is not CLASS:FLAG[,FLAG]")
        }
        let protection = try ProtectionClass(parsing: String(text[..<colon]))
        var flags: Set<Flag> = []
        for name in text[text.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: false) {
            guard let flag = Flag(parsing: String(name)) else {
                throw KeychainError(.param, "no access-control flag '\(Printable.clip(String(name)))' "
                                    + "(user-presence, password-current-set, application-password)")
            }
            flags.insert(flag)
        }
        self.init(protection: protection, flags: flags)
    }

    /// `CLASS:FLAG[,FLAG]` in locket's names, flags in a fixed order.
    public var text: String {
        protection.name + ":" + Flag.allCases.filter { flags.contains($0) }.map(\.rawValue).joined(separator: ",")
    }

    /// Whether the secret needs the keychain password.
    public var needsPresence: Bool { flags.contains(.userPresence) || flags.contains(.passwordCurrentSet) }

    /// The keybag row whose key the item's secret is sealed to, when it needs the keychain password.
    var presenceKeyName: String? {
        flags.contains(.passwordCurrentSet) ? PresenceKeys.currentSetName : needsPresence ? PresenceKeys.presenceName : nil
    }
}

/// What a caller must supply before an item's secret opens; carried by the
/// errSecInteractionNotAllowed of a read that lacks it (reason `.proofNeeded`).
/// The engine never asks: the command line asks at the terminal and calls
/// `provePresence(password:)` or sets `applicationPassword`, then tries again.
public struct AccessRequest: Sendable, Equatable {
    /// The keychain password is needed (user-presence, password-current-set,
    /// or setting up the keychain's presence keys at the first such add).
    public var keychainPassword: Bool
    /// The item's application password is needed.
    public var applicationPassword: Bool
    /// The item's label, for the prompt (nil when not known).
    public var label: String?
}
