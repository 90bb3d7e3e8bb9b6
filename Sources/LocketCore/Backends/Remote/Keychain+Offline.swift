import Glibc
import LocketSupport

/// The offline cache of a remote keychain (SPEC §17 "Offline",
/// docs/REMOTE.md): `keychain sync` writes it, a read whose server is
/// unreachable comes from it when the caller allows data that old
/// (`--max-stale`), and the next contact with the server appends the reads
/// it answered to the audit and wipes it if this device was revoked.
extension Keychain {
    /// Seconds a server is given to answer (libpq's `connect_timeout`) when
    /// the offline cache stands by (`--max-stale`): a host that drops
    /// packets would otherwise hold the read for the helper's default 10 s.
    /// A URL's own `connect_timeout` wins.
    public static let offlineConnectTimeout = 2

    /// When the snapshot this keychain reads was taken (µs since 1970), nil when it reads the server.
    public var offlineSince: Int64? { remoteStore?.offline?.syncedAt }

    /// The offline cache's file for this remote keychain.
    public var offlineCachePath: String? {
        guard let remote = remoteStore else { return nil }
        return try? RemoteCache.path(url: remote.location.url, environment: engine.environment)
    }

    /// `keychain sync`: a snapshot, in one transaction, of the
    /// after-first-unlock items of every group this device holds, written
    /// sealed to the offline cache. Needs this machine's session (the
    /// sealing key derives from the blind-index key). A revoked device's
    /// cache is deleted instead (errSecAuthFailed). Returns how many items it holds.
    @discardableResult
    public func syncOfflineCache() throws -> Int {
        guard let remote = remoteStore, remote.offline == nil else { throw KeychainError(.notAvailable, "sync is for a remote keychain whose server is reachable") }
        guard let device = remote.device else {
            throw KeychainError(.interactionNotAllowed, "this machine is not enrolled in \(remote.location.url)", reason: .notEnrolled)
        }
        let key = try RemoteCache.key(indexKey: try engine.indexKey(), keychainID: engine.keybag.keychainID)
        let path = try RemoteCache.path(url: remote.location.url, environment: engine.environment)
        let started = engine.environment.time.milliseconds() * 1000
        let snapshot: RemoteCache? = try remote.transaction { transaction in
            // Approved by the signed membership, not by the server's state column.
            guard let roster = remote.verifiedRoster?.roster, roster.isApproved(device.id) else { return nil }
            var cache = RemoteCache(syncedAt: started, deviceID: device.id, meta: try remote.readMeta(transaction), wrappedKeys: [], rows: [])
            for group in roster.groups where group.members.contains(device.id) {
                // Checked against the membership (generation and key check) before it is kept.
                guard try remote.holdsKey(group.name), let wrapped = try remote.execute("""
                    SELECT wrapped FROM locket.group_keys WHERE agrp = $1 AND generation = $2 AND device = $3
                    """, [.text(group.name), .int(group.generation), .int(device.id)]).first?[0].bytes else { continue }
                cache.wrappedKeys.append((group.name, wrapped))
            }
            for (group, _) in cache.wrappedKeys {
                let rows = try remote.execute(RemoteStatements.cachedItems, [.text(group)])
                try remote.prove(rows.compactMap { $0[0].int })
                for row in rows {
                    guard let id = row[0].int, let ref = row[1].bytes, let cls = row[2].text, let pdmn = row[3].text,
                          let pk = row[5].bytes, let attrs = row[6].bytes, let data = row[7].bytes else {
                        throw KeychainError(.decode, "an item row of \(remote.location.url) could not be read for the offline cache")
                    }
                    try remote.checkVersion(id: id, ref: ref, primaryKey: pk, attributes: attrs, dataHash: SignedState.dataHash(data))
                    let digests = (row[8].text ?? "").split(separator: ",").compactMap { Int64($0) }
                    cache.rows.append(RemoteCache.Row(id: id, ref: ref, itemClass: cls, protectionClass: pdmn, group: group,
                                                      primaryKey: pk, attributes: attrs, data: data, digests: Set(digests)))
                }
            }
            return cache
        }
        guard let snapshot else {
            unlink(path)
            throw KeychainError(.authFailed, "this device was revoked from \(remote.location.url); its offline cache was deleted")
        }
        try FileIO.makeDirectories(FileIO.directory(of: path))
        try snapshot.sealed(keychainID: engine.keybag.keychainID, key: key).withUnsafeBytes { try FileIO.writeAtomically(path, $0) }
        return snapshot.rows.count
    }
}

extension RemoteStore {
    /// Opens the offline cache of `location` for a read while its server is
    /// unreachable (`cause`), when the snapshot is at most `maxStale`
    /// microseconds old; errSecNotAvailable otherwise, naming why.
    static func openOffline(_ location: RemoteLocation, environment: Environment, maxStale: Int64,
                            cause: KeychainError) throws -> (RemoteStore, StoredHeader) {
        let path = try RemoteCache.path(url: location.url, environment: environment)
        func refused(_ why: String) -> KeychainError { KeychainError(.notAvailable, "\(cause.message); \(why)") }
        guard let file = try RemoteCache.read(path) else {
            throw refused("no offline cache of it on this machine")
        }
        let id: [UInt8]
        do { id = try RemoteCache.keychainID(of: file) } catch { throw refused("the offline cache \(path) is not one locket wrote; ignored") }
        let session = try SessionStore(environment: environment, keychainID: id)
        guard let indexKey = (try? session.load(.afterFirstUnlock, extend: false))??.0[Keybag.indexKeyName] else {
            throw KeychainError(.interactionNotAllowed, "\(cause.message); its offline cache opens only once this machine has unlocked the keychain since boot")
        }
        let snapshot: RemoteCache
        do {
            snapshot = try RemoteCache.open(file, key: RemoteCache.key(indexKey: indexKey, keychainID: id))
        } catch {
            throw refused("the offline cache \(path) does not open (altered, damaged or sealed with other keys); ignored")
        }
        guard snapshot.meta[MetaKey.id.rawValue] == id, let kdf = snapshot.meta[MetaKey.kdf.rawValue].flatMap(KDFParameters.init(encoded:)) else {
            throw refused("the offline cache \(path) is another keychain's; ignored")
        }
        let age = max(0, environment.time.milliseconds() * 1000 - snapshot.syncedAt)
        guard age <= maxStale else {
            throw refused("its offline cache is \(age / 60_000_000) min old, older than allowed (\(maxStale / 60_000_000) min)")
        }
        let store = RemoteStore(location, offline: snapshot)
        store.keychainID = id
        store.environment = environment
        guard let device = try DeviceIdentity.load(keychainID: id, environment: environment), device.id == snapshot.deviceID else {
            throw refused("this machine's device is not the one the offline cache was made for; ignored")
        }
        store.device = device
        // Not authenticated at open: this machine sealed the snapshot, and its age is what `maxStale` bounds.
        let header = RemoteStore.header(snapshot.meta)
        return (store, StoredHeader(keybag: Keybag(keychainID: id, kdf: kdf, rows: header.keybag), meta: header.meta, checkedByStorage: true))
    }

    /// On contact with the server, when this machine has offline state: the
    /// reads answered from the cache are appended to the audit (with the
    /// time they happened), and a revoked device's cache is deleted. Costs
    /// nothing (two failed `access` calls) for a machine that never synced.
    func settleOfflineState() throws {
        guard let device, let keychainID else { return }
        let cachePath = try RemoteCache.path(url: location.url, environment: environment)
        let pendingPath = try RemoteCache.pendingAuditPath(keychainID: keychainID, environment: environment)
        let sending = pendingPath + ".sending"
        let hasCache = access(cachePath, F_OK) == 0
        // Records appended while these are sent go to a new file: the one being sent is renamed first
        // (a leftover from a failed attempt is sent before anything newer).
        if access(sending, F_OK) != 0 && access(pendingPath, F_OK) == 0 { rename(pendingPath, sending) }
        let pending = try RemoteCache.pendingAudit(at: sending)
        guard hasCache || pending != nil else { return }
        let state = try transaction { _ in
            for (ref, at) in pending ?? [] {
                try appendAudit(ref, "read", at: at)
            }
            return verifiedRoster?.roster.isApproved(device.id) == true ? "approved" : "revoked"
        }
        if pending != nil { unlink(sending) }
        if hasCache && state != "approved" { unlink(cachePath) }
    }
}
