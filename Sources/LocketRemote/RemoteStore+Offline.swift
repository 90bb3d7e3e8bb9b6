import Glibc
import LocketCore
import LocketSupport

/// The offline cache as the store reads and writes it: the snapshot `keychain sync`
/// takes, a read while the server is unreachable, and what the next contact settles.
extension RemoteStore {
    /// The after-first-unlock items of every group `device` holds, with the
    /// header and its group keys, read in `transaction` and each checked
    /// against the signed state; nil when the signed membership does not
    /// approve the device (it was revoked).
    func offlineSnapshot(_ device: DeviceIdentity, at started: Int64, _ transaction: RemoteConnection.Transaction) throws -> RemoteCache? {
        // Approved by the signed membership, not by the server's state column.
        guard let roster = verifiedRoster?.roster, roster.isApproved(device.id) else { return nil }
        var cache = RemoteCache(syncedAt: started, deviceID: device.id, meta: try readMeta(transaction), wrappedKeys: [], rows: [])
        for group in roster.groups where group.members.contains(device.id) {
            // Checked against the membership (generation and key check) before it is kept.
            guard try holdsKey(group.name), let wrapped = try execute("""
                SELECT wrapped FROM locket.group_keys WHERE agrp = $1 AND generation = $2 AND device = $3
                """, [.text(group.name), .int(group.generation), .int(device.id)]).first?[0].bytes else { continue }
            cache.wrappedKeys.append((group.name, wrapped))
        }
        for (group, _) in cache.wrappedKeys {
            let rows = try execute(RemoteStatements.cachedItems, [.text(group)])
            try prove(rows.compactMap { $0[0].int })
            for row in rows {
                guard let id = row[0].int, let ref = row[1].bytes, let cls = row[2].text, let pdmn = row[3].text,
                      let pk = row[5].bytes, let attrs = row[6].bytes, let data = row[7].bytes else {
                    throw KeychainError(.decode, "an item row of \(location.url) could not be read for the offline cache")
                }
                try checkVersion(id: id, ref: ref, primaryKey: pk, attributes: attrs, dataHash: SignedState.dataHash(data))
                let digests = (row[8].text ?? "").split(separator: ",").compactMap { Int64($0) }
                cache.rows.append(RemoteCache.Row(id: id, ref: ref, itemClass: cls, protectionClass: pdmn, group: group,
                                                  primaryKey: pk, attributes: attrs, data: data, digests: Set(digests)))
            }
        }
        return cache
    }

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
