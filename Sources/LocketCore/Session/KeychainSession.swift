import Glibc
import LocketSupport

/// A keychain's session (`Keychain.session`): unlocking and locking it,
/// its password, the wrong-password rule, its status and settings, and the
/// proofs of presence its items with access control ask for. The keys a
/// password opens are kept by the machine's session store for later
/// commands (SessionStore), and by this process in the engine's key cache.
///
/// Where the rest lives: the password and its rotation
/// (KeychainSession+Password, +Rotation), the wrong-password rule
/// (+Attempts), status and settings (+Settings), proofs of presence
/// (+Presence), what a caller that keeps the keychain open sees of the
/// session (+InProcess).
public struct KeychainSession {
    let engine: KeychainEngine

    init(_ engine: KeychainEngine) { self.engine = engine }

    /// Hears what a password check is about to wait for (another attempt's
    /// turn, the delay after wrong passwords), before it waits: the command
    /// line says so on stderr, the Security module at the terminal.
    public var passwordWaitObserver: ((PasswordWait) -> Void)? {
        get { engine.passwordWaitObserver }
        nonmutating set { engine.passwordWaitObserver = newValue }
    }

    // MARK: - Unlock

    /// Unlocks with `password` until `lock`, a reboot, or `timeout` seconds
    /// without use (0: no auto-lock). After repeated wrong passwords it first
    /// waits out `passwordDelayMilliseconds`.
    public func unlock(password: SecureBytes, timeout: UInt32?) throws {
        guard engine.keybag.hasPassword else { return }
        try unlock(checked: try checkPassword(password), timeout: timeout)
    }

    /// An unlock in two steps, for a caller that may change its mind while
    /// the password is hashed (a Secret Service prompt dismissed meanwhile):
    /// `verify` does the costly part and counts a wrong password as `unlock`
    /// does; nothing is unlocked until `unlock(verified:)`. nil: the keychain
    /// has no password, nothing to unlock.
    public func verify(password: SecureBytes) throws -> VerifiedPassword? {
        guard engine.keybag.hasPassword else { return nil }
        let checked = try checkPassword(password)
        return VerifiedPassword(kek: checked.kek, keys: checked.keys)
    }

    /// Unlocks with what `verify(password:)` accepted (no second hash).
    public func unlock(verified: VerifiedPassword, timeout: UInt32?) throws {
        try unlock(checked: (verified.kek, verified.keys), timeout: timeout)
    }

    /// Unlocks with a password `checkPassword` accepted (restore reuses its
    /// check rather than hash the password twice).
    func unlock(checked: (kek: SecureBytes, keys: SessionKeys), timeout: UInt32?) throws {
        var unwrapped = checked.keys
        if engine.storage.policy.wrapsKeysForDevice {
            if engine.device == nil {
                // A lost device secret: make a new one. Device-bound items of the
                // old one stay unreadable, as after restoring a phone from backup.
                try DeviceKey.create(secretPath: engine.environment.deviceSecretPath())
                engine.device = try engine.deviceKey()
            }
            let device = try engine.keybagDevice()
            if let device, !engine.isBoundDevice(device) {
                try engine.rebind(&unwrapped, kek: checked.kek, device: device)
            }
            try engine.rewrapForThisDevice(unwrapped, device: device)
            if engine.isTPMBound, let device {
                // Kept after first unlock with the rest: later commands read them without the TPM.
                for (name, key) in engine.keybag.unwrapWithDevice(device).entries where unwrapped[name] == nil { unwrapped.set(name, key) }
            }
        }
        // Elsewhere nothing is written, and no key is wrapped for this device:
        // the keys the password opens go to this machine's session only.
        try engine.saveSession(unwrapped, timeout: timeout ?? engine.defaultTimeout)
        try engine.reloadKeys()
    }

    // MARK: - Locking

    /// Forgets the when-unlocked keys; with `all`, every key (as a reboot would).
    public func lock(all: Bool) {
        engine.session.remove(.whenUnlocked)
        if all { engine.session.remove(.afterFirstUnlock) }
        try? engine.reloadKeys(throughTPM: false)
    }

    /// Whether the when-unlocked keys are in the session now.
    public var isUnlocked: Bool { engine.cache.unlockedTiers.contains(.whenUnlocked) }

    // MARK: - Accepting a rollback

    /// Accepts the keychain as it is (SPEC §7): this machine's generation
    /// mirror is set to the keychain's own, so that an older copy put back on
    /// purpose opens again. The owner's act; with a password, only with it
    /// (checked as unlock checks it, and the header must still authenticate:
    /// an older header is accepted, a forged one never). Returns whether the
    /// keychain was rolled back; if it was, the session is cleared, since its
    /// keys may be newer than the keychain's. The password given then
    /// unlocks it, as `unlock` with the default timeout would, so the next
    /// command does not ask again.
    @discardableResult
    public func acceptRollback(password: SecureBytes?) throws -> Bool {
        try engine.requireOwner("accepting an older copy of the keychain")
        engine.acceptsRollback = true
        var checked: (kek: SecureBytes, keys: SessionKeys)?
        if engine.hasPassword {
            guard let password else { throw KeychainError(.authFailed) }
            checked = try checkPassword(password)
        }
        var accepted = false
        if engine.isRolledBack, let indexKey = engine.keys[Keybag.indexKeyName],
           let mirror = try engine.storage.rollbackRecords?.generationMirror(keychainID: engine.keybag.keychainID, environment: engine.environment,
                                                                             device: engine.device, indexKey: indexKey) {
            mirror.set(engine.generation)
            lock(all: true)
            // Accepted: what follows (the unlock's writes) writes it as it is now.
            engine.isRolledBack = false
            accepted = true
        }
        if let checked { try unlock(checked: checked, timeout: nil) }
        return accepted
    }
}
