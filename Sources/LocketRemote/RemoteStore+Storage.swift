import LocketCore
import LocketSupport

/// A remote keychain as the engine's storage (SPEC §17, docs/REMOTE.md).
///
/// The header (docs/REMOTE.md "Integrity of the header"): the meta rows
/// (format, identity, password-hash parameters, the `keybag.*` wraps) carry
/// a MAC and a generation, as a file's header does. The MAC's key derives
/// from the blind-index key, which a remote keychain wraps only with the
/// password's KEK: the server never holds it, so it can neither forge a
/// header nor move a wrap from one row to another. The generation advances
/// when the header or the group keys are replaced (`revoke`), not at every
/// write (every writer would conflict on the header), and each machine
/// remembers the highest it has seen (`GenerationMirror`, per URL), so a
/// server that puts back an older header is refused with the errSecDecode
/// a file gets.
extension RemoteStore: TypedItemStorage {
    /// What a shared database decides: no device wraps, no failure count,
    /// no operation that only a file's header or a replayable reader allows
    /// (`passwd`, `settings`, `import`), and no free-form attributes: an
    /// item unique by reference sets a header row (`unique_by_ref`) that a
    /// write here, which does not seal the header again, would leave outside its MAC.
    static let policy = StoragePolicy(
        capabilities: [], countsPasswordFailures: false, wrapsKeysForDevice: false, requiresPassword: true,
        requiresAuthenticatedHeader: true, advancesHeaderOnEveryWrite: false, readsManyInOneTransaction: false,
        rowsMayBeHeld: false, format: KeychainFormat.current)

    var address: String { location.url }
    var medium: String { "database" }
    var policy: StoragePolicy { Self.policy }
    var headerLayout: Header.Layout { .metaRows(prefix: RemoteStore.keybagPrefix) }

    // MARK: - Transactions

    func transaction(write: Bool, _ body: () throws -> Void) throws {
        if offline != nil {
            // Offline: reads of the cache; a write needs the server.
            if write { _ = try connection }
            return try body()
        }
        try transaction { _ in try body() }
    }

    // MARK: - The header

    /// Meta rows outside the header: the schema version belongs to the
    /// database (a newer locket upgrades it), not to the keychain.
    static let unauthenticatedMeta: Set<String> = ["schema"]

    /// The header in the rows of `locket.meta` (keybag rows included).
    static func header(_ rows: [String: [UInt8]]) -> Header {
        Header(meta: rows.filter { !$0.key.hasPrefix(keybagPrefix) && !unauthenticatedMeta.contains($0.key) },
               keybag: Keybag.remoteRows(rows), layout: .metaRows(prefix: keybagPrefix))
    }

    func readHeader() throws -> Header { RemoteStore.header(try allMeta()) }

    /// Every meta row, keybag rows included: the server's, or the snapshot's offline.
    private func allMeta() throws -> [String: [UInt8]] {
        if let offline { return offline.meta }
        var meta: [String: [UInt8]] = [:]
        for row in try execute("SELECT name, value FROM locket.meta", []) {
            if let name = row[0].text, let value = row[1].bytes { meta[name] = value }
        }
        return meta
    }

    func readMeta(_ name: String) throws -> [UInt8]? {
        if let offline { return offline.meta[name] }
        return try execute("SELECT value FROM locket.meta WHERE name = $1", [.text(name)]).first?[0].bytes
    }

    func removeMeta(_ name: String) throws { try execute("DELETE FROM locket.meta WHERE name = $1", [.text(name)]) }

    func writeKeybag(_ keybag: Keybag, replacingAll: Bool) throws {
        if replacingAll { try execute("DELETE FROM locket.meta WHERE name LIKE $1", [.text(RemoteStore.keybagPrefix + "%")]) }
        try writeMeta(keybag.remoteMeta)
    }

    func removeKeybagRow(_ name: String) throws { try removeMeta(RemoteStore.keybagPrefix + name) }

    // MARK: - Abilities

    var rollbackRecords: (any RollbackRecords)? { self }
    var deviceGroups: (any DeviceGroups)? { self }
    var readAudit: (any ReadAudit)? { self }

    /// Offline, a miss is not an answer: the server may hold the item (or it is not after-first-unlock).
    func noMatch() -> KeychainError {
        guard offline != nil else { return KeychainError(.itemNotFound) }
        return KeychainError(.notAvailable, "\(location.url) is unreachable and no after-first-unlock item in its offline cache matches")
    }

    func unavailable(_ what: String) -> KeychainError {
        KeychainError(.notAvailable, "\(what) is not available for a remote keychain (\(location.url))")
    }
}

extension RemoteStore: RollbackRecords {
    /// Per keychain, not per URL: one database reached by several URLs (a
    /// socket and TCP, one host and then a list after a failover, a named
    /// remote re-pointed) is one keychain with one history. Authenticated
    /// with a key derived from the blind-index key: a remote keychain has no
    /// device-wrapped key.
    func generationMirror(keychainID: [UInt8], environment: Environment, device: SecureBytes?,
                          indexKey: SecureBytes) throws -> GenerationMirror? {
        let key = try KeyDerivation.derive(indexKey, KeyDerivation.Context("locket.remote.generation-mirror.v1").with(keychainID))
        return try GenerationMirror(environment: environment, keychainID: keychainID, place: RemoteStore.mirrorPlace, key: key)
    }

    /// What the generation record is kept under in place of a path.
    static let mirrorPlace = "remote keychain"
}

extension RemoteStore {
    /// At open, once the header is read: this machine's device (nil before
    /// it enrolls), what it verified before, and what it kept while offline
    /// settled with the server. Offline, the device came with the cache.
    func loadDeviceState(keychainID: [UInt8], environment: Environment) throws {
        guard offline == nil else { return }
        self.keychainID = keychainID
        self.environment = environment
        device = try DeviceIdentity.load(keychainID: keychainID, environment: environment)
        guard let device else { return }
        do {
            trust = try RemoteTrust.load(keychainID: keychainID, device: device, environment: environment)
        } catch let error as KeychainError where recovering {
            // Recovery starts from the server's history, as at enrolment, and says what could not be kept.
            trustDamage = error.message
        }
        ownAudit = OwnAuditRecord.load(keychainID: keychainID, device: device, environment: environment)
        // A recovery writes nothing before it is confirmed: offline reads are sent afterwards.
        if !recovering { try settleOfflineState() }
    }
}

extension RemoteStore: DeviceGroups {
    /// The file's derivation, from the class key's group key mixed with the
    /// access group's own key, which this device holds only if it was granted the group.
    func sealingKey(_ classGroupKey: SecureBytes, group: String) throws -> SecureBytes {
        let groupKey = try groupKey(group)
        return try classGroupKey.withUnsafeBytes { try KeyDerivation.derive(groupKey, KeyDerivation.Context("locket.remote.group.v1").with($0)) }
    }

    func canOpen(group: String) throws -> Bool { try holdsKey(group) }

    /// ThisDeviceOnly items belong to one device; a shared keychain refuses them
    /// (before the server's CHECK would).
    func admit(_ pclass: ProtectionClass) throws {
        guard pclass.thisDeviceOnly else { return }
        throw KeychainError(.param, "\(pclass.name) items belong to one device and can't be stored in a remote keychain",
                            reason: .thisDeviceOnlyRemote)
    }
}

extension RemoteStore: ReadAudit {
    func recordRead(_ ref: [UInt8]) throws { try audit([ref], "read") }
}

extension StoragePolicy {
    /// What a keychain in a database decides (for the locator, which asks before it opens one).
    package static var remote: StoragePolicy { RemoteStore.policy }
}
