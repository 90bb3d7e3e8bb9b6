import LocketSupport

/// What a caller that keeps a `Keychain` open across many calls (the
/// Security module, SPEC §19) sees of the session: when another process
/// locked, unlocked or let it expire.
extension KeychainSession {
    /// A digest of the session's records for this keychain now (both tiers,
    /// keyed by the keychain's identity): it changes when another process
    /// unlocks, locks or lets the session expire, and not when a use is
    /// stamped. `probe` remembers where the records are between calls (a
    /// keyring record is then one system call to read). With `extend`, the
    /// session's inactivity timeout restarts, as a command's use restarts
    /// it. Empty for a keychain without a password (no session).
    public func sessionFingerprint(extend: Bool, probe: SessionProbe) -> [UInt8] {
        guard engine.keybag.hasPassword else { return [] }
        // One opening of the session directory for the loads and the look after them.
        var directory = engine.session.sessionDirectory()
        if extend {
            // What a command's opening does (a damaged session is left to the next opening).
            _ = try? engine.session.load(.afterFirstUnlock, extend: true, directory: &directory)
            _ = try? engine.session.load(.whenUnlocked, extend: true, directory: &directory)
        }
        return engine.session.fingerprint(key: engine.keybag.keychainID, serials: &probe.serials, directory: &directory)
    }

    /// Loads the session's keys again, as at open, and returns the session's
    /// fingerprint as it was just before: a later fingerprint that differs
    /// means these keys may be out of date (a change in between is seen as
    /// one, never missed).
    public func reloadSession(extend: Bool, probe: SessionProbe) throws -> [UInt8] {
        let fingerprint = sessionFingerprint(extend: extend, probe: probe)
        engine.extendsSession = false
        try engine.reloadKeys()
        return fingerprint
    }
}
