import Glibc
import LocketCore
import LocketSupport

/// `-k postgres://...` and names registered with `keychain add-remote`
/// (SPEC §17): how the command line finds a remote keychain and the database
/// password. A file keychain's command never reaches any of this beyond a
/// prefix check of its `-k` (a registered name is looked up only when no
/// keychain file of that name exists).
extension Context {
    /// What `-k` or LOCKET_KEYCHAIN says, nil for the default.
    func keychainSpec() throws -> String? {
        try globals.keychain ?? environment["LOCKET_KEYCHAIN"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The remote keychain named by `-k`/LOCKET_KEYCHAIN (a URL, or a
    /// registered name), with the database password when the registration
    /// names the item holding it; nil for a file keychain.
    func remoteKeychain(registeredToo: Bool) throws -> (RemoteLocation, SecureBytes?)? {
        guard let spec = try keychainSpec() else { return nil }
        return try Context.remoteKeychain(spec, registeredToo: registeredToo, environment: environment)
    }

    /// `spec` as a remote keychain, nil when it names none (see above).
    static func remoteKeychain(_ spec: String, registeredToo: Bool, environment: Environment) throws -> (RemoteLocation, SecureBytes?)? {
        if RemoteLocation.isURL(spec) { return (try RemoteLocation(url: spec), nil) }
        guard registeredToo, let entry = try RemoteRegistry.lookup(spec, environment: environment) else { return nil }
        let location = try RemoteLocation(url: entry.url)
        return (location, try entry.passwordService.map {
            try databasePassword(service: $0, user: location.value("user"), environment: environment)
        })
    }

    /// The database password kept as a generic password (service, and the
    /// URL's user as account when it names one) in the login keychain.
    private static func databasePassword(service: String, user: String?, environment: Environment) throws -> SecureBytes {
        let login = try Keychain.open(at: environment.dataDirectory() + "/login.keychain", environment: environment)
        var query = Query(itemClass: .genericPassword)
        try query.match(.service, Array(service.utf8))
        if let user { try query.match(.account, Array(user.utf8)) }
        do {
            guard let password = try login.search(query, returnData: true).first?.data else { throw KeychainError(.itemNotFound) }
            return password
        } catch let error as KeychainError where error.code == .itemNotFound {
            throw KeychainError(.itemNotFound, "the database password (service '\(Printable.clip(service))') is not in the login keychain")
        }
    }

    /// Opens the remote keychain, or nil when the keychain named is a file.
    /// Never inlined into `openKeychain`: a file keychain's command must not
    /// pay for this one's types (callgrind, docs/REMOTE.md).
    @inline(never)
    func openRemoteKeychain(caller: Caller, extendSession: Bool, acceptRollback: Bool, registeredToo: Bool) throws -> Keychain? {
        guard let (location, password) = try remoteKeychain(registeredToo: registeredToo) else { return nil }
        let keychain = try Keychain.open(remote: location, caller: caller, databasePassword: password, environment: environment,
                                         extendSession: extendSession, acceptRollback: acceptRollback, maxStale: try maxStale())
        if let since = keychain.offlineSince {
            let seconds = max(0, Clock.milliseconds() * 1000 - since) / 1_000_000
            let age = seconds < 120 ? "\(seconds) s" : seconds < 7200 ? "\(seconds / 60) min" : "\(seconds / 3600) h"
            err("locket: offline: \(location.url) is unreachable; reading its local cache, synced \(age) ago")
        }
        return keychain
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

    /// The ssh-agent's keys: from the keychain `-k` names, a file or a
    /// remote one. The agent opens it afresh for every request, so a remote
    /// keychain is a helper and a connection per request, and the database
    /// password (from the login keychain) is read again each time: the
    /// agent holds no connection and no secret between requests. With
    /// `--max-stale`, a request made while the server is unreachable is
    /// answered from the offline cache as `find -w` is (after-first-unlock
    /// keys only), without the notice: a refusal is the agent's one line.
    func agentKeySource() throws -> KeychainKeySource {
        let caller = try self.caller()
        let environment = self.environment
        let spec = try keychainSpec()
        let path = try environment.keychainPath(spec)
        // As `openKeychain`: a URL, or a registered name when no keychain file has it.
        let isRemote = try spec.map { spec in
            try RemoteLocation.isURL(spec) || (access(path, F_OK) != 0 && RemoteRegistry.lookup(spec, environment: environment) != nil)
        } ?? false
        guard let spec, isRemote else { return KeychainKeySource(path: path, caller: caller, environment: environment) }
        // A bad URL or --max-stale stops the agent before it listens.
        if RemoteLocation.isURL(spec) { _ = try RemoteLocation(url: spec) }
        let maxStale = try maxStale()
        return KeychainKeySource(name: spec, caller: caller, environment: environment) { caller, environment, extendSession in
            guard let (location, password) = try Context.remoteKeychain(spec, registeredToo: true, environment: environment) else {
                throw KeychainError(.noSuchKeychain, "no keychain named \(Printable.clip(spec))")
            }
            return try Keychain.open(remote: location, caller: caller, databasePassword: password, environment: environment,
                                     extendSession: extendSession, maxStale: maxStale)
        }
    }
}
