/// The audit of a remote keychain (SPEC §17): every read of a secret appends
/// (device, item reference, operation, time) to `locket.audit`, in the
/// reading transaction, as the next link of the reading device's signed
/// chain (`SignedAuditEntry`); the table is also append-only by trigger
/// (RemoteSchema) against mistakes. The server learns which device read
/// which item, never what it holds.
extension Keychain {
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
    public func audit(since: Int64) throws -> [AuditEntry] {
        guard let remote = remoteStore else { throw KeychainError(.notAvailable, "the audit is a remote keychain's") }
        try engine.requireOwner("reading the audit")
        return try remote.transaction { _ in
            try remote.verifiedAudit().filter { $0.entry.at >= since }.map { entry, row, name in
                AuditEntry(id: row, device: entry.device, deviceName: name, item: entry.item, operation: entry.operation, at: entry.at)
            }
        }
    }
}
