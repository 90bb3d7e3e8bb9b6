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
        if RemoteLocation.isURL(spec) { return (try RemoteLocation(url: spec), nil) }
        guard registeredToo, let entry = try RemoteRegistry.lookup(spec, environment: environment) else { return nil }
        let location = try RemoteLocation(url: entry.url)
        return (location, try entry.passwordService.map { try databasePassword(service: $0, user: location.value("user")) })
    }

    /// The database password kept as a generic password (service, and the
    /// URL's user as account when it names one) in the login keychain.
    private func databasePassword(service: String, user: String?) throws -> SecureBytes {
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
        return try Keychain.open(remote: location, caller: caller, databasePassword: password, environment: environment,
                                 extendSession: extendSession, acceptRollback: acceptRollback)
    }
}
