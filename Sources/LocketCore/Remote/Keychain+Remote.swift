import Glibc
import LocketSupport

/// Remote keychains (SPEC §17, docs/REMOTE.md): creating and opening one in
/// PostgreSQL, unlocking it, and the one transaction call both backends share.
/// Items are sealed and digested here exactly as in a file; the server holds
/// what a file holds.
extension Keychain {
    /// The remote store, nil for a file keychain.
    var remote: RemoteStore? {
        if case .remote(let remote) = backend { return remote }
        return nil
    }

    /// Whether the keychain lives in PostgreSQL rather than a file.
    public var isRemote: Bool { remote != nil }

    /// Runs `body` in one transaction of the backend (a remote one is
    /// serializable, and run again on a serialization failure).
    func transaction<T>(write: Bool, _ body: () throws -> T) throws -> T {
        switch backend {
        case .file(let database): return try database.transaction(write: write, body)
        case .remote(let remote):
            if remote.offline != nil {
                // Offline: reads of the cache; a write needs the server.
                if write { _ = try remote.connection }
                return try body()
            }
            return try remote.transaction { _ in try body() }
        }
    }

    /// Refuses what only a file keychain does (its password file header,
    /// rotation, rollback, imports) before anything reaches the file's
    /// database (errSecNotAvailable); a caller may ask before its prompts.
    public func requireFile(_ what: String) throws {
        guard let remote else { return }
        throw KeychainError(.notAvailable, "\(what) is not available for a remote keychain (\(remote.location.url))")
    }

    /// ThisDeviceOnly items belong to one device; a shared keychain refuses them.
    static func notShareable(_ pclass: ProtectionClass) -> KeychainError {
        KeychainError(.param, "\(pclass.name) items belong to one device and can't be stored in a remote keychain",
                      reason: .thisDeviceOnlyRemote)
    }

    // MARK: - Creating and opening

    /// Creates a keychain in the database at `location` (its schema first,
    /// if the database has none) with `password`, which a remote keychain
    /// needs: without one its keys would open for whoever reads the database.
    /// `databasePassword`: the server login's, when libpq's own sources don't give it.
    public static func createRemote(_ location: RemoteLocation, password: SecureBytes, kdf cost: KDFCost = .moderate,
                                    databasePassword: SecureBytes? = nil, deviceName: String = "creator", environment: Environment) throws {
        try Sodium.ready()
        umask(0o077)
        if password.count == 0 { throw KeychainError(.param, "the password is empty", reason: .emptyPassword) }
        _ = try SessionStore(environment: environment, keychainID: [])
        let id = Sodium.random(16)
        let kdf = KDFParameters(cost: cost)
        let kek = try PasswordHash.deriveKEK(password: password, parameters: kdf)
        var bag = Keybag(keychainID: id, kdf: kdf, rows: [:])
        var keys = SessionKeys()
        for name in RemoteStore.keyNames { keys.set(name, try SecureBytes(copying: Sodium.random(32))) }
        try bag.wrap(keys, kek: kek, device: nil)
        // The presence key pairs of access control (SPEC §14), made now: the
        // header is written once here, where a file makes them at first use.
        var presence: [(String, [UInt8])] = []
        for name in PresenceKeys.names {
            let (publicKey, secretKey) = try PresenceKeys.generate()
            try bag.wrapPresence(name, secretKey, kek: kek)
            presence.append((PresenceKeys.publicKeyRow(name).rawValue, publicKey))
        }
        let header = [(MetaKey.format.rawValue, BigEndian.bytes(Schema.format)), (MetaKey.id.rawValue, id),
                      (MetaKey.kdf.rawValue, kdf.encoded)] + presence + bag.remoteMeta
        guard let indexKey = keys[Keybag.indexKeyName] else { throw KeychainError(.io, "no blind-index key was made") }
        let store = try RemoteStore(location, password: databasePassword?.bytes, environment: environment)
        try RemoteSchema.prepare(store.connection)
        let deviceKey = try DeviceIdentity.generateSecretKey()
        let devicePublicKey = try BackupRecipients.publicKey(secretKey: deviceKey)
        var deviceID: Int64 = 0
        try store.transaction { transaction in
            if try store.readMeta(transaction)[MetaKey.id.rawValue] != nil {
                throw KeychainError(.duplicateKeychain, "\(location.url) already holds a keychain")
            }
            // The header's MAC and first generation, under a key the server never sees (Keychain+RemoteHeader).
            try store.writeMeta(header + Keychain.remoteHeader(Dictionary(uniqueKeysWithValues: header))
                .sealed(generation: 1, indexKey: indexKey, keychainID: id))
            // The creating machine is the first device, approved: its groups' keys are wrapped to it as it makes them.
            let device = try store.execute("INSERT INTO locket.devices(public_key, name, state) VALUES ($1, $2, 'approved') RETURNING id",
                                           [.bytes(devicePublicKey), .text(deviceName)])
            deviceID = device.first?[0].int ?? 0
        }
        let device = try DeviceIdentity(id: deviceID, secretKey: deviceKey)
        try device.save(keychainID: id, environment: environment)
        store.device = device
        let keychain = try Keychain(path: location.url, caller: .owner, backend: .remote(store), environment: environment,
                                    keybag: bag, meta: Dictionary(uniqueKeysWithValues: header.filter { !$0.0.hasPrefix(RemoteStore.keybagPrefix) }))
        // The creator has just proven the password: start unlocked, as a file keychain does.
        try keychain.saveSession(keys, timeout: keychain.defaultTimeout)
        try keychain.remoteMirror(indexKey: indexKey).raise(to: 1)
    }

    /// Opens the keychain in the database at `location` for `caller` and
    /// loads whatever keys this machine's session holds for it.
    /// The header is authenticated and checked against this machine's
    /// generation mirror when the session holds the blind-index key; an older
    /// one fails with errSecDecode (reason `.rolledBack`) unless `acceptRollback`.
    /// `maxStale` (µs): when the server is unreachable, read the offline
    /// cache if it is no older (docs/REMOTE.md); nil: never. With it, a
    /// server that does not answer is given `offlineConnectTimeout` seconds
    /// to answer, not the helper's 10, unless the URL sets `connect_timeout`.
    public static func open(remote location: RemoteLocation, caller: Caller = .owner, databasePassword: SecureBytes? = nil,
                            environment: Environment, extendSession: Bool = true, acceptRollback: Bool = false,
                            maxStale: Int64? = nil) throws -> Keychain {
        try Sodium.ready()
        umask(0o077)
        var reach = location
        if maxStale != nil && location.value("connect_timeout") == nil {
            reach.parameters.append(("connect_timeout", String(offlineConnectTimeout)))
        }
        let store: RemoteStore
        do {
            store = try RemoteStore(reach, password: databasePassword?.bytes, environment: environment)
        } catch let error as KeychainError where error.code == .notAvailable && maxStale != nil {
            return try openOffline(location, caller: caller, environment: environment, maxStale: maxStale!, extendSession: extendSession,
                                   cause: error)
        }
        let (version, stored) = try store.transaction { transaction in
            let version = try RemoteSchema.installedVersion(transaction)
            return (version, version == 0 ? [:] : try store.readMeta(transaction))
        }
        if version > RemoteSchema.version {
            throw KeychainError(.invalidKeychain, "\(location.url) has schema version \(version); this locket knows up to \(RemoteSchema.version)")
        }
        guard let id = stored[MetaKey.id.rawValue] else {
            throw KeychainError(.noSuchKeychain, "no keychain in \(location.url)", reason: .noKeychain(path: location.url))
        }
        guard id.count == 16, stored[MetaKey.format.rawValue].map(BigEndian.int64) == Schema.format,
              let kdf = stored[MetaKey.kdf.rawValue].flatMap(KDFParameters.init(encoded:)) else {
            throw KeychainError(.decode, "\(location.url) has a damaged header")
        }
        let meta = stored.filter { !$0.key.hasPrefix(RemoteStore.keybagPrefix) }
        let keychain = try Keychain(path: location.url, caller: caller, backend: .remote(store), environment: environment,
                                    keybag: Keybag(keychainID: id, kdf: kdf, rows: Keybag.remoteRows(stored)), meta: meta)
        keychain.extendsSession = extendSession
        keychain.acceptsRollback = acceptRollback
        store.device = try DeviceIdentity.load(keychainID: id, environment: environment)
        try keychain.settleOfflineState(store)
        try keychain.loadKeys()
        if let indexKey = keychain.keys[Keybag.indexKeyName] { try keychain.authenticateRemote(keychain.remoteHeader, indexKey: indexKey) }
        return keychain
    }

    // MARK: - Unlocking

    /// `unlock` of a remote keychain: the keys the password opens go to this
    /// machine's session, as a file's do. Nothing is written to the database,
    /// and no key is wrapped for this device there (a device-wrapped key in a
    /// shared database would open for anyone who holds the database).
    /// Password-hash parameters below the interactive floor are refused before
    /// hashing (`checkKDFParameters`): a server could lower them.
    func unlockRemote(password: SecureBytes, timeout: UInt32?) throws {
        let unwrapped = try checkRemotePassword(password).keys
        try saveSession(unwrapped, timeout: timeout ?? defaultTimeout)
        try reloadKeys()
    }

    /// Checks `password` on a remote keychain: the parameters' floor before
    /// hashing, the wraps it opens, then the header with the blind-index key
    /// they gave, before any key is used (a wrap moved between rows, a
    /// substituted keybag or an older header is refused here). Not counted:
    /// docs/REMOTE.md says why a remote keychain keeps no failure count.
    func checkRemotePassword(_ password: SecureBytes) throws -> (kek: SecureBytes, keys: SessionKeys) {
        try checkKDFParameters()
        let kek = try keybag.kek(password: password)
        let unwrapped = try keybag.unwrapWithKEK(kek, device: nil)
        guard let indexKey = unwrapped[Keybag.indexKeyName] else {
            throw KeychainError(.decode, "the keychain's header in \(path) has no blind-index key; the database was altered")
        }
        try authenticateRemote(remoteHeader, indexKey: indexKey)
        return (kek, unwrapped)
    }
}
