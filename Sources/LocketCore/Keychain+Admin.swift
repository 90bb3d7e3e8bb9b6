import LocketSupport

/// Password changes, settings, status and the wrong-password counter.
extension Keychain {
    // MARK: - Wrong passwords

    /// Consecutive wrong passwords since the last success.
    public var failedAttempts: Int { meta["failures"].map { Int(BigEndian.int64($0)) } ?? 0 }

    /// Seconds to wait before the next password attempt: none for the first
    /// five failures, then 1, 2, 4, ... up to 30 s after the last failure.
    public var passwordDelay: Int {
        let failures = failedAttempts
        guard failures >= 5 else { return 0 }
        let wait = min(30, 1 << min(failures - 5, 5))
        // Milliseconds since the last failure (older keychains stored whole seconds under failed_at).
        let lastMs = meta["failed_at_ms"].map(BigEndian.int64) ?? (meta["failed_at"].map(BigEndian.int64) ?? 0) * 1000
        let leftMs = lastMs + Int64(wait) * 1000 - Clock.milliseconds()
        return leftMs <= 0 ? 0 : Int((leftMs + 999) / 1000)
    }

    public var passwordDelayMilliseconds: Int {
        let failures = failedAttempts
        guard failures >= 5 else { return 0 }
        let wait = min(30, 1 << min(failures - 5, 5))
        let lastMs = meta["failed_at_ms"].map(BigEndian.int64) ?? (meta["failed_at"].map(BigEndian.int64) ?? 0) * 1000
        return max(0, Int(lastMs + Int64(wait) * 1000 - Clock.milliseconds()))
    }

    /// Counts a password attempt (before checking it) or resets the count
    /// (after a success). Counted only where the header can be sealed, that
    /// is where the blind-index key opens without the password: on a device
    /// the keychain was never unlocked on, or after the device secret was
    /// lost, the count starts at the first success there (whoever can run
    /// locket in that state can also edit the file).
    ///
    /// Nor is an attempt on an older copy being accepted: it is not written
    /// before it is accepted (whoever put it back set its count anyway).
    func recordAttempt(failed: Bool) throws {
        guard keys[Keybag.indexKeyName] != nil, !isRolledBack else { return }
        if !failed && failedAttempts == 0 { return }
        // Fully synchronous, as every write: the generation mirror follows the
        // commit, and must never be ahead of it after a power cut.
        try write {
            let current = try database.prepare("SELECT value FROM meta WHERE name = 'failures'")
            let before = try current.step() ? Int(BigEndian.int64(current.blob(0))) : 0
            let failures = failed ? before + 1 : 0
            try Keychain.writeMeta(database, [("failures", BigEndian.bytes(Int64(failures))),
                                              ("failed_at", BigEndian.bytes(Clock.seconds())),
                                              ("failed_at_ms", BigEndian.bytes(Clock.milliseconds()))])
        }
    }

    // MARK: - Settings

    /// Stores the keychain's default auto-lock timeout (0: never).
    public func setDefaultTimeout(_ seconds: UInt32) throws {
        try requireOwner("changing settings")
        let value = BigEndian.bytes(Int64(seconds))
        try write { try Keychain.writeMeta(database, [("timeout", value)]) }
    }

    // MARK: - Password

    /// The Argon2id cost of the password, nil without one.
    public var kdfCost: KDFCost? { keybag.kdf?.cost }

    /// Changes, sets (on a keychain without one) or removes (`new` nil) the
    /// password, hashing the new one at `kdf` (nil: the current cost, or
    /// `.moderate` for a first password). Only the class keys are re-wrapped,
    /// in one transaction, so after a crash either the old or the new password
    /// unlocks. Removing the password deletes every when-passcode-set item, as
    /// iOS does; returns how many.
    ///
    /// With `rotate`, every class key and the blind-index key are replaced
    /// and every item is re-sealed (`rotateKeys`), in the same transaction.
    @discardableResult
    public func changePassword(old: SecureBytes?, new: SecureBytes?, kdf cost: KDFCost? = nil, rotate: Bool = false) throws -> Int {
        try requireOwner("changing the password")
        if let new, new.count == 0 { throw KeychainError(.param, "the new password is empty", hint: "use --remove to remove the password") }
        if new == nil && !hasPassword { throw KeychainError(.param, "the keychain has no password to remove") }
        if new == nil && rotate { throw KeychainError(.param, "rotating the keys needs a new password") }
        try checkKDFParameters()
        if hasPassword { try recordAttempt(failed: true) }
        let oldKEK = try keybag.kek(password: old)
        var keys = try keybag.unwrapWithKEK(oldKEK, device: device, sameDevice: isBoundDevice(device))
        try authenticateWithPassword(keys)
        if hasPassword { try recordAttempt(failed: false) }

        let passcodeName = ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue
        var kdf: KDFParameters?
        let newKEK: SecureBytes
        if let new {
            kdf = KDFParameters(cost: cost ?? keybag.kdf?.cost ?? .moderate)
            newKEK = try PasswordHash.deriveKEK(password: new, parameters: kdf!)
            if keys[passcodeName] == nil && keybag.rows[passcodeName] == nil {
                keys.set(passcodeName, SecureBytes(copying: Sodium.random(32)))
            }
        } else {
            newKEK = Keybag.passwordlessKEK(keybag.keychainID)
        }
        if rotate {
            try rotateKeys(old: keys, kdf: kdf!, kek: newKEK)
            return 0
        }
        var bag = Keybag(keychainID: keybag.keychainID, kdf: kdf, rows: keybag.rows)
        bag.wrap(keys, kek: newKEK, device: device)
        let removed: Int = try write {
            var removed = 0
            if new == nil {
                let delete = try database.prepare("DELETE FROM items WHERE pdmn = ?")
                try delete.bind(1, passcodeName)
                _ = try delete.step()
                removed = database.changes
                try database.execute("DELETE FROM keybag WHERE class = '\(passcodeName)'")
                try database.execute("DELETE FROM meta WHERE name = 'kdf'")
                bag.removeRow(passcodeName)
            } else {
                try Keychain.writeMeta(database, [("kdf", kdf!.encoded)])
            }
            try Keychain.writeKeybag(database, bag)
            return removed
        }
        let hadPassword = keybag.hasPassword
        keybag = bag
        if new == nil {
            // Nothing left to unlock: the session's copies are redundant.
            lock(all: true)
        } else if !hadPassword {
            // Setting a first password leaves the keychain unlocked, as init does
            // (and as iOS does after a passcode is set).
            try saveSession(keys, timeout: defaultTimeout)
        }
        return removed
    }

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
    }

    public func status() throws -> Status {
        let counts = try countByClass()
        let whenUnlocked = hasPassword ? session.peek(.whenUnlocked) : nil
        let firstUnlock = hasPassword ? session.peek(.afterFirstUnlock) : nil
        return Status(path: path, hasPassword: hasPassword,
                      whenUnlocked: !hasPassword || whenUnlocked != nil,
                      afterFirstUnlock: !hasPassword || firstUnlock != nil,
                      secondsUntilAutoLock: whenUnlocked?.secondsLeft,
                      autoLockTimeout: defaultTimeout,
                      sessionBackend: (whenUnlocked ?? firstUnlock)?.backend.rawValue,
                      itemCounts: counts, failedAttempts: failedAttempts, scopedGroups: sessionScope?.groups)
    }

    func countByClass() throws -> [ProtectionClass: Int] {
        try database.transaction(write: false) {
            let visible = caller.accessGroups == nil ? "" : " WHERE " + visibleGroupsCondition()
            let stmt = try database.prepare("SELECT pdmn, count(*) FROM items\(visible) GROUP BY pdmn")
            var counts: [ProtectionClass: Int] = [:]
            while try stmt.step() {
                if let pclass = ProtectionClass(rawValue: stmt.text(0)) { counts[pclass] = Int(stmt.int64(1)) }
            }
            return counts
        }
    }
}
