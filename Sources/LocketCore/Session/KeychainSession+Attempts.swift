import LocketSupport

/// Checking a password, and the wrong-password rule (SPEC §5: repeated
/// failures slow further attempts): after five failures in a row each
/// attempt first waits 1, 2, 4, ... and at most 30 s from the last failure.
///
/// Attempts take turns. Where the storage counts failures, an attempt takes
/// the keychain's password turn (`PasswordTurns`: every process and thread,
/// one at a time) before it reads the count, and keeps it through the wait,
/// the count, the hash and the verdict, so six attempts started at once wait
/// 1, 2, 4, 8, 16 and 30 s one after the other, never the same second side by
/// side. The rule lives here, so the command line, the Secret Service
/// provider and the Security module all meet it.
extension KeychainSession {
    /// What a password check is about to wait for, told to
    /// `passwordWaitObserver` before it waits (the engine never prints: a
    /// caller that talks to a person says so).
    public enum PasswordWait: Sendable, Equatable {
        /// Another attempt on this keychain is being checked; this one waits for its turn.
        case turn
        /// `failures` wrong passwords in a row: this attempt waits `milliseconds` first.
        case delay(failures: Int, milliseconds: Int)
    }

    // MARK: - Checking a password

    /// Checks `password` (nil for a keychain without one) and returns the
    /// KEK and the keys it opens, once the header has authenticated with
    /// them. The one path every password takes (unlock, passwd, restore,
    /// a proof of presence). Where the storage counts wrong passwords, the
    /// attempt takes its turn, the delay is waited out, and the attempt
    /// counted before the hash (so killing the process during it does not
    /// dodge the count) and the count reset after a success.
    func checkPassword(_ password: SecureBytes?) throws -> (kek: SecureBytes, keys: SessionKeys) {
        try engine.checkKDFParameters()
        // Nobody waits for the keychain during the TPM, the turn, the delay and the hash.
        engine.storage.hold?.release()
        // A bound keychain's TPM first: another TPM is refused with nothing counted or written.
        if engine.isTPMBound { _ = try engine.tpmBinding() }
        let counted = engine.hasPassword && engine.storage.policy.countsPasswordFailures
        // Held to the end of this function: the verdict is part of the turn.
        let turn = counted ? try takePasswordTurn() : nil
        defer { withExtendedLifetime(turn) {} }
        if counted {
            try readFailureCount()
            waitOutPasswordDelay()
            try recordAttempt(failed: true)
        }
        let kek = try engine.keybagKEK(engine.keybag.kek(password: password))
        let device = try engine.keybagDevice()
        let keys = try engine.keybag.unwrapWithKEK(kek, device: device, sameDevice: engine.isBoundDevice(device))
        try engine.authenticateWithPassword(keys)
        if counted { try recordAttempt(failed: false) }
        return (kek, keys)
    }

    /// This attempt's turn, from a storage that gives them (a file); nil
    /// where attempts are not counted at all.
    private func takePasswordTurn() throws -> AnyObject? {
        guard let turns = engine.storage.passwordTurns else { return nil }
        return try turns.passwordTurn(busy: { engine.passwordWaitObserver?(.turn) })
    }

    /// Under the turn: the count and the time of the last failure as stored
    /// now (the attempt before this one may have counted since open). Read
    /// without the header's MAC, for the wait only: the count that follows
    /// (`recordAttempt`) authenticates the header before it writes, so an
    /// edited count fails the attempt before any password is hashed. Where
    /// nothing is counted (`recordsAttempts`) the header stays as read at
    /// open: rows newer than its MAC would fail it.
    private func readFailureCount() throws {
        guard recordsAttempts else { return }
        var rows: [(MetaKey, [UInt8]?)] = []
        try engine.transaction(write: false) {
            for key in [MetaKey.failures, .failedAt, .failedAtMilliseconds] { rows.append((key, try engine.storage.readMeta(key))) }
        }
        for (key, value) in rows { engine.meta[key] = value }
    }

    /// Whether attempts are written down here (see `recordAttempt`).
    private var recordsAttempts: Bool { engine.keys[Keybag.indexKeyName] != nil && !engine.isRolledBack }

    // MARK: - Wrong passwords

    /// Consecutive wrong passwords since the last success.
    public var failedAttempts: Int { engine.meta.integer(.failures).map { Int($0) } ?? 0 }

    /// Seconds to wait before the next password attempt (rounded up): none
    /// for the first five failures, then 1, 2, 4, ... up to 30 s after the last failure.
    public var passwordDelay: Int { (passwordDelayMilliseconds + 999) / 1000 }

    /// The same wait in milliseconds.
    public var passwordDelayMilliseconds: Int {
        let failures = failedAttempts
        guard failures >= 5 else { return 0 }
        let wait = min(30, 1 << min(failures - 5, 5))
        // Milliseconds since the last failure (older keychains stored whole seconds under failed_at).
        let lastMs = engine.meta.integer(.failedAtMilliseconds) ?? (engine.meta.integer(.failedAt) ?? 0) * 1000
        return max(0, Int(lastMs + Int64(wait) * 1000 - clock.milliseconds()))
    }

    /// The clock and sleeper of the wrong-password delay: the environment's.
    var clock: TimeSource { engine.environment.time }

    /// Sleeps until the next password attempt is allowed, having told
    /// `passwordWaitObserver` how long. Every check of a password (unlock,
    /// passwd, restore, a proof) waits here, so a library caller is slowed
    /// as the command line is.
    func waitOutPasswordDelay() {
        var left = passwordDelayMilliseconds
        if left > 0 { engine.passwordWaitObserver?(.delay(failures: failedAttempts, milliseconds: left)) }
        while left > 0 {
            clock.sleep(min(left, 1000))
            left = passwordDelayMilliseconds
        }
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
        guard recordsAttempts else { return }
        if !failed && failedAttempts == 0 { return }
        let now = clock.milliseconds()
        // Fully synchronous, as every write: the generation mirror follows the
        // commit, and must never be ahead of it after a power cut. The count
        // is the header's, as `write` has just read it.
        try engine.write(advancingHeader: true) {
            let failures = failed ? Int64(failedAttempts) + 1 : 0
            try engine.storage.writeMeta([(.failures, BigEndian.bytes(failures)),
                                          (.failedAt, BigEndian.bytes(now / 1000)),
                                          (.failedAtMilliseconds, BigEndian.bytes(now))])
        }
    }
}
