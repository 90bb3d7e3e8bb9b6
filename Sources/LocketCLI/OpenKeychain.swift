import LocketCore
import LocketSupport

/// Which keychain a command works on (`-k`, LOCKET_KEYCHAIN: a file, a
/// NAME, a `postgres://` URL or a registered remote, resolved by
/// LocketLocator's `KeychainLocator` as for every other caller, through
/// `backends`), and opening it.
extension Context {
    /// The keychain `-k` or LOCKET_KEYCHAIN names.
    func keychainLocation() throws -> any KeychainAddress { try backends.resolve(globals.keychain, environment) }

    /// Opens the keychain; the engine disables nothing itself, so turn off core dumps first.
    /// With `keepsFileOpen`, a file stays open (locked) for the command's
    /// first call, which must follow at once: whatever waits in between
    /// (every prompt does) calls `releaseKeychainFile` first.
    /// `caller` replaces the one `-e` names (the credential socket opens the
    /// keychain as each unit).
    package func openKeychain(extendSession: Bool = true, acceptRollback: Bool = false, keepsFileOpen: Bool = true,
                              caller given: Caller? = nil) throws -> Keychain {
        Diagnostics.protectProcess()
        // What a killed `exec --file` left: one lstat when there is nothing.
        SecretFiles.removeAbandoned(environment)
        // Entitlements first: a bad file must stop the command before anything is read or written.
        let caller = try given ?? self.caller()
        let location = try keychainLocation()
        let keychain = try location.open(caller: caller, environment: environment, extendSession: extendSession,
                                         acceptRollback: acceptRollback, keepsFileOpen: keepsFileOpen, maxStale: try maxStale())
        heldKeychain = keychain
        if let since = backends.offlineSince(keychain) { announceOffline(location, since: since) }
        return keychain
    }

    /// A remote keychain read from its offline cache says so, and how old the cache is.
    private func announceOffline(_ location: any KeychainAddress, since: Int64) {
        let seconds = max(0, io.environment.time.milliseconds() * 1000 - since) / 1_000_000
        let age = seconds < 120 ? "\(seconds) s" : seconds < 7200 ? "\(seconds / 60) min" : "\(seconds / 3600) h"
        err("locket: offline: \(location.description) is unreachable; reading its local cache, synced \(age) ago")
    }

    /// `--max-stale DURATION` in microseconds, nil when not given (no offline reads).
    func maxStale() throws -> Int64? {
        guard let text = globals.maxStale else { return nil }
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        guard let unit = text.last, let scale = units[unit], let count = Int64(text.dropLast()), count >= 0, count < 1 << 32 else {
            throw UsageError(message: "--max-stale takes a duration: 90s, 30m, 12h, 7d", command: nil)
        }
        return count * scale * 1_000_000
    }

    /// The ssh-agent's keys, from the keychain `-k` names. The agent opens
    /// it afresh for every request, so a remote keychain is a helper and a
    /// connection per request, and the database password (from the login
    /// keychain) is read again each time: the agent holds no connection and
    /// no secret between requests. With `--max-stale`, a request made while
    /// the server is unreachable is answered from the offline cache as
    /// `find -w` is (after-first-unlock keys only), without the notice: a
    /// refusal is the agent's one line.
    func agentKeySource() throws -> KeychainKeySource {
        let caller = try self.caller()
        // A bad URL, name or --max-stale stops the agent before it listens.
        return try keychainLocation().keySource(caller: caller, environment: environment, maxStale: try maxStale())
    }
}
