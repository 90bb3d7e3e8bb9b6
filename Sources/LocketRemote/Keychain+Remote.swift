import Glibc
import LocketCore
import LocketSupport

/// Remote keychains (SPEC §17, docs/REMOTE.md): creating and opening one in
/// PostgreSQL. Items are sealed and digested by the engine exactly as in a
/// file; the server holds what a file holds.
extension Keychain {
    /// Creates a keychain in the database at `location` (its schema first,
    /// if the database has none) with `password`, which a remote keychain
    /// needs: without one (nil) its keys would open for whoever reads the
    /// database, and errSecParam says so before anything is made.
    /// `databasePassword`: the server login's, when libpq's own sources don't give it.
    public static func createRemote(_ location: RemoteLocation, password: SecureBytes?, kdf cost: KDFCost = .moderate,
                                    databasePassword: SecureBytes? = nil, deviceName: String = "creator", environment: Environment) throws {
        try create(in: RemoteStore.New(location, databasePassword: databasePassword, deviceName: deviceName), password: password,
                   kdf: cost, environment: environment)
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
        let (store, stored) = try RemoteStore.open(location, databasePassword: databasePassword, environment: environment, maxStale: maxStale)
        return try Keychain(opening: store, stored, caller: caller, environment: environment, extendSession: extendSession,
                            acceptRollback: acceptRollback)
    }

    /// Opens the remote keychain at `location` for `keychain recover`: a
    /// history older than, or other than, the one this device saw is not
    /// refused, and nothing is written or kept until `remote.recover`.
    public static func openForRecovery(remote location: RemoteLocation, caller: Caller = .owner, databasePassword: SecureBytes? = nil,
                                       environment: Environment) throws -> Keychain {
        try Sodium.ready()
        let (store, stored) = try RemoteStore.open(location, databasePassword: databasePassword, environment: environment, maxStale: nil,
                                                   recovering: true)
        return try Keychain(opening: store, stored, caller: caller, environment: environment, extendSession: true, acceptRollback: true)
    }
}

extension RemoteStore {
    /// Connects to `location` and reads the keychain's header there; when
    /// the server can't be reached and `maxStale` allows, the offline cache's.
    /// `recovering`: for `keychain recover`, the server's history is compared
    /// with what this device kept, not refused (RemoteStore+Recovery).
    static func open(_ location: RemoteLocation, databasePassword: SecureBytes?, environment: Environment,
                     maxStale: Int64?, recovering: Bool = false) throws -> (RemoteStore, StoredHeader) {
        var reach = location
        if maxStale != nil && location.value("connect_timeout") == nil {
            reach.parameters.append(("connect_timeout", String(RemoteAdmin.offlineConnectTimeout)))
        }
        let store: RemoteStore
        do {
            store = try RemoteStore(reach, password: databasePassword?.bytes, environment: environment)
        } catch let error as KeychainError where error.code == .notAvailable && maxStale != nil {
            return try openOffline(location, environment: environment, maxStale: maxStale!, cause: error)
        }
        store.recovering = recovering
        // Two statements outside a transaction, not five in one (BEGIN,
        // the table, the version, the rows, COMMIT): every command opens,
        // and each statement is a round trip to the server and back. The
        // rows come from one statement, so from one snapshot, the version's
        // row among them; the table, once there, stays.
        let (version, stored) = try store.connection.autocommit { statements in
            guard try RemoteSchema.hasSchema(statements) else { return (Int32(0), [String: [UInt8]]()) }
            let meta = try store.readMeta(statements)
            return (try RemoteSchema.version(meta["schema"]), meta)
        }
        if version > RemoteSchema.version {
            throw KeychainError(.invalidKeychain, "\(location.url) has schema version \(version); this locket knows up to \(RemoteSchema.version)")
        }
        if version > 0 && version < 2 { throw RemoteSchema.olderVersion(version, location.url) }
        if version == 2 {
            // The tree's table made; the first approved device's transaction builds it (RemoteStore+Upgrade).
            try RemoteSchema.prepare(store.connection)
            store.linearRoot = true
        }
        guard let id = stored[MetaKey.id.rawValue] else {
            throw KeychainError(.noSuchKeychain, "no keychain in \(location.url)", reason: .noKeychain(path: location.url))
        }
        let header = RemoteStore.header(stored)
        guard id.count == 16, header.meta.integer(.format) == KeychainFormat.current,
              let kdf = header.meta[.kdf].flatMap(KDFParameters.init(encoded:)) else {
            throw KeychainError(.decode, "\(location.url) has a damaged header")
        }
        try store.loadDeviceState(keychainID: id, environment: environment)
        return (store, StoredHeader(keybag: Keybag(keychainID: id, kdf: kdf, rows: header.keybag), meta: header.meta))
    }

    /// Where a new remote keychain goes: a database, its schema made if it has none.
    final class New: KeychainPlace {
        let location: RemoteLocation
        let databasePassword: SecureBytes?
        let deviceName: String
        private var store: RemoteStore?

        init(_ location: RemoteLocation, databasePassword: SecureBytes?, deviceName: String) {
            self.location = location
            self.databasePassword = databasePassword
            self.deviceName = deviceName
        }

        var address: String { location.url }
        var medium: String { "database" }
        var policy: StoragePolicy { RemoteStore.policy }
        var headerLayout: Header.Layout { .metaRows(prefix: RemoteStore.keybagPrefix) }

        /// A keychain there already is found in `make`'s transaction, where two creators meet.
        func checkVacant() throws {}

        func prepare(environment: Environment) throws {
            let store = try RemoteStore(location, password: databasePassword?.bytes, environment: environment)
            try RemoteSchema.prepare(store.connection)
            self.store = store
        }

        func make(header: [(String, [UInt8])], keybag: Keybag, environment: Environment) throws -> any KeychainStorage {
            guard let store else { throw KeychainError(.io, "the database was not prepared") }
            let keys = try DeviceIdentity.generate(id: 0)
            var device = keys
            let keychainID = keybag.keychainID
            try store.transaction { transaction in
                if try store.readMeta(transaction)[MetaKey.id.rawValue] != nil {
                    throw KeychainError(.duplicateKeychain, "\(location.url) already holds a keychain")
                }
                try store.writeMeta(header + keybag.remoteMeta)
                // The creating machine is the first device, approved: its groups' keys are wrapped to it as it makes them.
                let row = try store.execute("""
                    INSERT INTO locket.devices(public_key, signing_key, name, state) VALUES ($1, $2, $3, 'approved') RETURNING id
                    """, [.bytes(keys.publicKey), .bytes(keys.signingKey), .text(deviceName)])
                device = try keys.with(id: row.first?[0].int ?? 0)
                // Epoch 1 of the membership (the creator alone, the root every
                // device's trust starts from) and the first state (no item).
                let roster = try SignedRoster.sign(Roster(keychainID: keychainID, epoch: 1, previous: [UInt8](repeating: 0, count: 32),
                                                          signer: device.id,
                                                          devices: [Roster.Device(id: device.id, encryptionKey: device.publicKey,
                                                                                  signingKey: device.signingKey, revokedAt: 0)],
                                                          groups: []), by: device)
                try store.insertRoster(roster)
                let state = try SignedState.sign(after: nil, keychainID: keychainID, rosterEpoch: 1, root: ItemTree.absent, by: device)
                try store.insertState(state)
                store.working = RemoteTrust(roster: roster, state: state)
            }
            try device.save(keychainID: keychainID, environment: environment)
            store.device = device
            store.keychainID = keychainID
            store.environment = environment
            store.trust = store.working
            try store.trust.save(keychainID: keychainID, device: device, environment: environment)
            return store
        }
    }
}
