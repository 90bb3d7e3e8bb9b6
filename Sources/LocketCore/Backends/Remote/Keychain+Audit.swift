/// The audit of a remote keychain (SPEC §17): every read of a secret appends
/// (device, item reference, operation, time) to `locket.audit`, in the
/// reading transaction, and the table is append-only (RemoteSchema). The
/// server learns which device read which item, never what it holds.
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

    /// The audit rows since `since` (microseconds since 1970), oldest first; the owner's.
    public func audit(since: Int64) throws -> [AuditEntry] {
        guard let remote = remoteStore else { throw KeychainError(.notAvailable, "the audit is a remote keychain's") }
        try requireOwner("reading the audit")
        return try remote.transaction { _ in
            try remote.execute("""
                SELECT a.id, a.device, d.name, a.item, a.operation, a.at FROM locket.audit a
                JOIN locket.devices d ON d.id = a.device
                WHERE a.at >= to_timestamp($1::float8 / 1000000) ORDER BY a.id
                """, [.int(since)]).map { row in
                AuditEntry(id: row[0].int ?? 0, device: row[1].int ?? 0, deviceName: row[2].text ?? "", item: row[3].bytes ?? [],
                           operation: row[4].text ?? "", at: row[5].int ?? 0)
            }
        }
    }
}
