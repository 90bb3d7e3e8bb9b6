import LocketSupport

/// Settings and status: what needs no password.
extension KeychainSession {
    // MARK: - Settings

    /// The inactivity timeout `unlock` uses when none is given: the
    /// keychain's setting, else 300 s. 0 means no auto-lock.
    public var defaultTimeout: UInt32 { engine.defaultTimeout }

    /// Stores the keychain's default auto-lock timeout (0: never).
    public func setDefaultTimeout(_ seconds: UInt32) throws {
        try engine.requireOwner("changing settings")
        try engine.require(.settings)
        let value = BigEndian.bytes(Int64(seconds))
        try engine.write { try engine.storage.writeMeta([(.timeout, value)]) }
    }

    /// When the session's keyring locks the keychain by itself (SPEC §20),
    /// as macOS's "Lock when sleeping": each on unless turned off.
    public enum LockEvent: Sendable, CaseIterable {
        /// Before the machine sleeps (logind's PrepareForSleep).
        case sleep
        /// When the session's screen locks (logind's Session.Lock, LockedHint).
        case screenLock

        var metaKey: MetaKey { self == .sleep ? .lockOnSleep : .lockOnScreenLock }
    }

    /// Whether the keychain locks on `event`.
    public func locks(on event: LockEvent) -> Bool { engine.meta[event.metaKey] != [0] }

    /// Stores whether the keychain locks on `event`.
    public func setLocks(on event: LockEvent, _ locks: Bool) throws {
        try engine.requireOwner("changing settings")
        try engine.require(.settings)
        try engine.write { try engine.storage.writeMeta([(event.metaKey, [locks ? 1 : 0])]) }
    }

    /// Changes when the password changes, never otherwise, and tells
    /// nothing of it: the keychain's identity and its password's salt and
    /// cost (all stored in the clear), nil without a password. The login's
    /// unlock remembers a password that did not open the keychain by it.
    public var passwordStamp: String? {
        engine.keybag.kdf.map { Hex.encode(engine.keybag.keychainID) + "." + Hex.encode($0.encoded) }
    }

    /// The Argon2id cost of the password, nil without one.
    public var kdfCost: KDFCost? { engine.keybag.kdf?.cost }

    /// How many when-passcode-set items removing the password would delete.
    public var passcodeItemCount: Int {
        (try? countByClass()[.whenPasscodeSetThisDeviceOnly]) ?? 0
    }

    // MARK: - Status

    /// What `locket status` reports; needs no password.
    public struct Status: Sendable {
        public var path: String
        public var hasPassword: Bool
        public var whenUnlocked: Bool
        public var afterFirstUnlock: Bool
        /// nil: locked, or no auto-lock.
        public var secondsUntilAutoLock: Int64?
        public var autoLockTimeout: UInt32
        public var sessionBackend: String?
        public var itemCounts: [ProtectionClass: Int]
        public var failedAttempts: Int
        /// The access groups a session unlocked by an app is limited to; nil for an owner session.
        public var scopedGroups: [String]?
        /// Whether the keychain is bound to this machine's TPM (`init --tpm`, `settings --tpm`).
        public var tpmBound: Bool
    }

    public func status() throws -> Status {
        let counts = try countByClass()
        let whenUnlocked = engine.hasPassword ? try engine.session.peek(.whenUnlocked) : nil
        let firstUnlock = engine.hasPassword ? try engine.session.peek(.afterFirstUnlock) : nil
        return Status(path: engine.path, hasPassword: engine.hasPassword,
                      whenUnlocked: !engine.hasPassword || whenUnlocked != nil,
                      afterFirstUnlock: !engine.hasPassword || firstUnlock != nil,
                      secondsUntilAutoLock: whenUnlocked?.secondsLeft,
                      autoLockTimeout: defaultTimeout,
                      sessionBackend: (whenUnlocked ?? firstUnlock)?.backend.rawValue,
                      itemCounts: counts, failedAttempts: failedAttempts, scopedGroups: engine.sessionScope?.groups,
                      tpmBound: engine.isTPMBound)
    }

    func countByClass() throws -> [ProtectionClass: Int] {
        try engine.transaction(write: false) {
            var counts: [ProtectionClass: Int] = [:]
            for (code, count) in try engine.storage.itemStore.countByProtectionClass(ItemFilter(visibleGroups: engine.caller.accessGroups)) {
                if let pclass = ProtectionClass(rawValue: code) { counts[pclass] = count }
            }
            return counts
        }
    }
}
