import LocketCore

/// The proofs an item's secret needs on top of its protection class
/// (kSecAttrAccessControl, SPEC §14).
public final class SecAccessControl: Hashable, @unchecked Sendable {
    let control: AccessControl
    /// kSecAccessControlPrivateKeyUsage: the key is used inside the keychain (always so here).
    let privateKeyUsage: Bool

    init(_ control: AccessControl, privateKeyUsage: Bool = false) {
        self.control = control
        self.privateKeyUsage = privateKeyUsage
    }

    public static func == (a: SecAccessControl, b: SecAccessControl) -> Bool { a.control == b.control }
    public func hash(into hasher: inout Hasher) { hasher.combine(control.text) }
}

/// What an access control asks for, as Apple's flags name it.
public struct SecAccessControlCreateFlags: OptionSet, Sendable {
    public let rawValue: CFOptionFlags
    public init(rawValue: CFOptionFlags) { self.rawValue = rawValue }

    /// The keychain password at every use, asked at the terminal (user presence).
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    /// Biometry does not exist here: as `userPresence`.
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// The former name of `biometryAny`.
    public static let touchIDAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// As `userPresence`, and bound to the current keychain password: after
    /// `locket passwd` the item is unreadable for good (SPEC §14 password-current-set).
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// The former name of `biometryCurrentSet`.
    public static let touchIDCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// The keychain password is the passcode here: as `userPresence`.
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)
    /// A paired watch: there is none here (errSecParam).
    public static let watch = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// A companion device: there is none here (errSecParam).
    public static let companion = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// Any one of the other flags: accepted where they all mean user presence.
    public static let or = SecAccessControlCreateFlags(rawValue: 1 << 14)
    /// Every one of the other flags (also the default).
    public static let and = SecAccessControlCreateFlags(rawValue: 1 << 15)
    /// The private key is used inside the keychain, never handed out: always so for a key here.
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: 1 << 30)
    /// An extra per-item password (the application password), given through
    /// an `LAContext` credential or asked for at the terminal.
    public static let applicationPassword = SecAccessControlCreateFlags(rawValue: 1 << 31)
}

/// The type identifier of access controls.
public func SecAccessControlGetTypeID() -> CFTypeID { 303 }

/// Makes an access control of the protection class `protection` (one of the
/// kSecAttrAccessible... values) and `flags`. nil with `error` set
/// (errSecParam) for an unknown class or a flag that can't be honoured here:
/// `watch`/`companion`, or `or` between user presence and the application
/// password (only both together can be enforced).
public func SecAccessControlCreateWithFlags(_ allocator: CFAllocator?, _ protection: CFTypeRef,
                                            _ flags: SecAccessControlCreateFlags,
                                            _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecAccessControl? {
    withError(error) {
        guard let name = Value.string(protection) else { throw Value.wrongType("protection", "a kSecAttrAccessible value") }
        let pclass = try ProtectionClass(parsing: name)
        if !flags.isDisjoint(with: [.watch]) { throw KeychainError(.param, "there is no companion device to prove presence with") }
        var control: Set<AccessControl.Flag> = []
        if !flags.isDisjoint(with: [.userPresence, .devicePasscode, .biometryAny]) { control.insert(.userPresence) }
        if flags.contains(.biometryCurrentSet) { control.insert(.passwordCurrentSet) }
        if flags.contains(.applicationPassword) { control.insert(.applicationPassword) }
        // password-current-set is user presence bound to the password: one proof, not two.
        if control.contains(.passwordCurrentSet) { control.remove(.userPresence) }
        if flags.contains(.or) && control.contains(.applicationPassword) && control.count > 1 {
            throw KeychainError(.param, "either user presence or the application password can't be enforced here; ask for both")
        }
        let known: SecAccessControlCreateFlags = [.userPresence, .biometryAny, .biometryCurrentSet, .devicePasscode, .or, .and,
                                                  .privateKeyUsage, .applicationPassword]
        guard known.isSuperset(of: flags) else { throw KeychainError(.param, "unknown access control flags (\(flags.rawValue))") }
        return SecAccessControl(AccessControl(protection: pclass, flags: control), privateKeyUsage: flags.contains(.privateKeyUsage))
    }
}
