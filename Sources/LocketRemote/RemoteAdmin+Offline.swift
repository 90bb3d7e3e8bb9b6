import Glibc
import LocketCore
import LocketSupport

/// The offline cache of a remote keychain (SPEC §17 "Offline",
/// docs/REMOTE.md): `keychain sync` writes it, a read whose server is
/// unreachable comes from it when the caller allows data that old
/// (`--max-stale`), and the next contact with the server appends the reads
/// it answered to the audit and wipes it if this device was revoked
/// (RemoteStore+Offline).
extension RemoteAdmin {
    /// Seconds a server is given to answer (libpq's `connect_timeout`) when
    /// the offline cache stands by (`--max-stale`): a host that drops
    /// packets would otherwise hold the read for the helper's default 10 s.
    /// A URL's own `connect_timeout` wins.
    public static let offlineConnectTimeout = 2

    /// When the snapshot this keychain reads was taken (µs since 1970), nil when it reads the server.
    public var offlineSince: Int64? { store.offline?.syncedAt }

    /// The offline cache's file for this remote keychain.
    public var offlineCachePath: String? { try? RemoteCache.path(url: store.location.url, environment: grant.environment) }

    /// `keychain sync`: a snapshot, in one transaction, of the
    /// after-first-unlock items of every group this device holds, written
    /// sealed to the offline cache. Needs this machine's session (the
    /// sealing key derives from the blind-index key). A revoked device's
    /// cache is deleted instead (errSecAuthFailed). Returns how many items it holds.
    @discardableResult
    public func syncOfflineCache() throws -> Int {
        try requireOnline(.sync)
        guard let device = store.device else {
            throw KeychainError(.interactionNotAllowed, "this machine is not enrolled in \(store.location.url)", reason: .notEnrolled)
        }
        let key = try RemoteCache.key(indexKey: try grant.indexKey(), keychainID: grant.keychainID)
        let path = try RemoteCache.path(url: store.location.url, environment: grant.environment)
        let started = grant.environment.time.milliseconds() * 1000
        let snapshot = try store.transaction { transaction in try store.offlineSnapshot(device, at: started, transaction) }
        guard let snapshot else {
            unlink(path)
            throw KeychainError(.authFailed, "this device was revoked from \(store.location.url); its offline cache was deleted")
        }
        try FileIO.makeDirectories(FileIO.directory(of: path))
        try snapshot.sealed(keychainID: grant.keychainID, key: key).withUnsafeBytes { try FileIO.writeAtomically(path, $0) }
        return snapshot.rows.count
    }
}
