import LocketCore
import LocketSupport

/// What only a remote keychain has (SPEC §17, docs/REMOTE.md): its devices
/// (RemoteAdmin+Devices), the audit of its reads, its offline cache
/// (+Offline), the view of its chains another device compares
/// (`keychain verify`), and recovery after a failover (+Recovery).
/// `Keychain.remote` gives one for a remote keychain and nil for any other:
/// nothing here is asked of a keychain that can't do it.
///
/// The engine lends it a `KeychainGrant` (the keychain's identity, the
/// caller's standing, field keys, the header's write path), never its
/// internals; the statements it needs are `RemoteStore`'s.
public struct RemoteAdmin {
    /// The keychain it administers, for what every caller may ask of it (accepting a rollback).
    let keychain: Keychain
    let store: RemoteStore
    let grant: KeychainGrant

    /// The remote-only operations, named in the refusal a keychain elsewhere gets (`refusal(_:)`).
    public enum Operation: Sendable {
        case enroll, devices, approve, revoke, audit, sync, verify, recover
    }

    /// What a caller says when a keychain that is not remote is asked for
    /// `operation` (errSecNotAvailable): `Keychain.remote` is nil there.
    public static func refusal(_ operation: Operation) -> KeychainError {
        let text = switch operation {
        case .enroll: "enrolling is for a remote keychain"
        case .devices: "listing devices is for a remote keychain"
        case .approve: "approving a device is for a remote keychain"
        case .revoke: "revoking a device is for a remote keychain"
        case .audit: "the audit is a remote keychain's"
        case .sync: "sync is for a remote keychain whose server is reachable"
        case .verify: "verify is for a remote keychain whose server is reachable"
        case .recover: "recover is for a remote keychain; a file put back is accepted with restore --accept-rollback"
        }
        return KeychainError(.notAvailable, text)
    }

    /// This machine's device id, nil before it enrolls.
    public var deviceID: Int64? { store.device?.id }

    /// The server this keychain is in, as its URL (never with a password).
    public var url: String { store.location.url }

    // MARK: - The audit

    /// One audit row.
    public struct AuditEntry: Sendable, Equatable {
        public let id: Int64
        public let device: Int64
        public let deviceName: String
        /// The item's persistent reference.
        public let item: [UInt8]
        public let operation: String
        /// Microseconds since 1970.
        public let at: Int64
    }

    /// The audit rows since `since` (microseconds since 1970), in the order
    /// they were appended; the owner's. Every device's chain is checked
    /// first, whole (`RemoteStore.verifiedAudit`): the first broken link is
    /// errSecDecode naming the device, entry and row, and nothing is listed.
    /// Every read of a secret appends (device, item reference, operation,
    /// time) to `locket.audit` in the reading transaction, as the next link
    /// of the reading device's signed chain (`SignedAuditEntry`): the server
    /// learns which device read which item, never what it holds.
    public func audit(since: Int64) throws -> [AuditEntry] {
        try grant.requireOwner("reading the audit")
        return try store.transaction { _ in
            try store.verifiedAudit().filter { $0.entry.at >= since }.map { entry, row, name in
                AuditEntry(id: row, device: entry.device, deviceName: name, item: entry.item, operation: entry.operation, at: entry.at)
            }
        }
    }

    // MARK: - Freshness (`keychain verify`, docs/REMOTE.md "Freshness")

    /// What this device sees of the keychain as a short line another device
    /// can compare: the membership epoch and the state sequence, each with
    /// the start of its hash (`m4-1a2b3c4d.s17-9f8e7d6c`), verified as every
    /// transaction verifies it.
    public func view() throws -> String {
        try requireOnline(.verify)
        return try store.transaction { _ in try store.view() }
    }

    /// Checks `other` (another device's `view()`) against what this server
    /// shows, and returns this device's view. A line newer than what the
    /// server shows is a rollback (or a fork) this device could not see
    /// alone; the same number with another hash is a fork.
    public func verify(against other: String) throws -> String {
        try requireOnline(.verify)
        return try store.transaction { _ in
            guard let view = RemoteView(other) else {
                throw KeychainError(.param, "'\(Printable.clip(other))' is not a view 'keychain verify' printed (m4-1a2b3c4d.s17-9f8e7d6c)")
            }
            try store.check(view)
            return try store.view()
        }
    }

    /// Refuses `operation` while this keychain reads its offline cache.
    func requireOnline(_ operation: Operation) throws {
        if store.offline != nil { throw RemoteAdmin.refusal(operation) }
    }
}

extension Keychain {
    /// What only a remote keychain has (its devices, audit, offline cache,
    /// verification and recovery); nil for a keychain elsewhere.
    public var remote: RemoteAdmin? {
        let grant = self.grant
        guard let store = grant.storage as? RemoteStore else { return nil }
        return RemoteAdmin(keychain: self, store: store, grant: grant)
    }
}
