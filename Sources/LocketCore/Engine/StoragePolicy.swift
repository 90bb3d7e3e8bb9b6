/// What a place that keeps keychains decides about them, stated by its
/// storage (`KeychainStorage.policy`) and followed by the engine, which
/// never asks which place it is.
package struct StoragePolicy {
    /// The operations it allows (what it lacks is errSecNotAvailable).
    package var capabilities: KeychainCapabilities
    /// Wrong passwords are counted in the header and slowed down (SPEC §5).
    /// Where the header is shared by many devices a count would be a write
    /// every device makes at every unlock, and whoever reads the store can
    /// try passwords offline anyway.
    package var countsPasswordFailures: Bool
    /// Class keys may be wrapped for this device's key (opening without the
    /// password, ThisDeviceOnly classes). Not where many devices read the
    /// same rows: a key wrapped there would open for whoever holds them.
    package var wrapsKeysForDevice: Bool
    /// A keychain here always has a password (without one its keys would
    /// open for whoever reads the store).
    package var requiresPassword: Bool
    /// A header without a MAC is refused rather than read as one written
    /// before MACs existed (every keychain here was made with one, and
    /// whoever keeps the store could strip it).
    package var requiresAuthenticatedHeader: Bool
    /// Every write moves the header to its next generation. Otherwise only
    /// writes that replace keys do (every writer would conflict on the header).
    package var advancesHeaderOnEveryWrite: Bool
    /// Many queries are answered in one read transaction (one opening of a
    /// file for all of them). Otherwise each has its own, so that a retried
    /// transaction or a lost connection is handled as it is for one query.
    package var readsManyInOneTransaction: Bool
    /// A search's sealed rows may be held by a caller that keeps the
    /// keychain open, and the search answered again from them while that
    /// caller sees nothing changed (`searchHolding`): a file, whose changes
    /// it can watch. Not where other machines write unseen.
    package var rowsMayBeHeld: Bool
    /// The format number written into a new keychain's header (SPEC §7).
    package var format: Int64

    package init(capabilities: KeychainCapabilities, countsPasswordFailures: Bool, wrapsKeysForDevice: Bool, requiresPassword: Bool,
                 requiresAuthenticatedHeader: Bool, advancesHeaderOnEveryWrite: Bool, readsManyInOneTransaction: Bool, rowsMayBeHeld: Bool,
                 format: Int64) {
        self.capabilities = capabilities
        self.countsPasswordFailures = countsPasswordFailures
        self.wrapsKeysForDevice = wrapsKeysForDevice
        self.requiresPassword = requiresPassword
        self.requiresAuthenticatedHeader = requiresAuthenticatedHeader
        self.advancesHeaderOnEveryWrite = advancesHeaderOnEveryWrite
        self.readsManyInOneTransaction = readsManyInOneTransaction
        self.rowsMayBeHeld = rowsMayBeHeld
        self.format = format
    }
}

/// The keychain format this release writes (SPEC §7): items with a blind
/// index table. Format 1 (an index column per attribute) is read, and
/// migrated by the first write.
package enum KeychainFormat {
    package static let current: Int64 = 2
}

/// Operations a keychain allows, as the place it lives in decides
/// (`Keychain.capabilities`; `Keychain.require` refuses what it lacks).
public struct KeychainCapabilities: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `passwd`: changing, setting or removing the password.
    public static let changePassword = KeychainCapabilities(rawValue: 1 << 0)
    /// `passwd --rotate`: new keys, every item re-sealed.
    public static let rotateKeys = KeychainCapabilities(rawValue: 1 << 1)
    /// `settings`: the auto-lock timeout and the presence reuse window.
    public static let settings = KeychainCapabilities(rawValue: 1 << 2)
    /// `import`: items streamed from a reader into one transaction.
    public static let importItems = KeychainCapabilities(rawValue: 1 << 3)
    /// Adding the keys a keychain made by an earlier release lacks (the
    /// presence key pairs of access control) when first needed.
    public static let addMissingKeys = KeychainCapabilities(rawValue: 1 << 4)
    /// Free-form attributes (SPEC §18): a blind row per (name, value)
    /// pair, and items unique by their reference alone.
    public static let freeFormAttributes = KeychainCapabilities(rawValue: 1 << 5)

    /// What each is called in a refusal.
    var activity: String {
        switch self {
        case .changePassword: "changing the password"
        case .rotateKeys: "rotating the keys"
        case .settings: "changing settings"
        case .importItems: "importing"
        case .addMissingKeys: "adding the access control keys of a keychain made before them"
        case .freeFormAttributes: "storing free-form attributes"
        default: "this operation"
        }
    }
}
