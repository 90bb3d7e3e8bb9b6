import LocketCore
import LocketSupport

/// One entry of a device's audit chain (docs/REMOTE.md "Audit"): the device,
/// its sequence number in that device's chain, the hash of its entry before,
/// the item's reference, the operation and the time, signed by the device.
/// Each device's entries are a chain of their own, so readers on different
/// devices never wait for each other; `keychain audit` checks every chain
/// and names the first broken link: an entry deleted, edited, re-attributed
/// to another device, or put in by someone without that device's key.
struct SignedAuditEntry: Equatable {
    let body: [UInt8]
    let signature: [UInt8]
    let keychainID: [UInt8]
    let device: Int64
    let sequence: Int64
    let previous: [UInt8]
    let item: [UInt8]
    let operation: String
    /// Microseconds since 1970, the reading device's clock.
    let at: Int64

    static let magic = "LKAU1"
    static let what = "an audit entry"

    init(body: [UInt8], signature: [UInt8]) throws {
        self.body = body
        self.signature = signature
        var r = try RecordReader(body, magic: SignedAuditEntry.magic, what: SignedAuditEntry.what)
        keychainID = try r.data(exactly: 16)
        device = try r.int()
        sequence = try r.int()
        previous = try r.data(exactly: 32)
        item = try r.data(limit: 64)
        operation = try r.string()
        at = try r.int()
        try r.end()
    }

    static func message(_ body: [UInt8]) -> [UInt8] { Array("locket.remote.audit.v1".utf8) + body }

    var hash: [UInt8] { DeviceSigning.hash("locket.remote.audit-link.v1", [body, signature]) }

    static func sign(after previous: RemoteTrust.AuditHead?, keychainID: [UInt8], device: DeviceIdentity, item: [UInt8],
                     operation: String, at: Int64) throws -> SignedAuditEntry {
        var w = RecordWriter(magic)
        w.data(keychainID)
        w.int(device.id)
        w.int((previous?.sequence ?? 0) + 1)
        w.data(previous?.hash ?? [UInt8](repeating: 0, count: 32))
        w.data(item)
        w.string(operation)
        w.int(at)
        return try SignedAuditEntry(body: w.bytes, signature: device.sign(message(w.bytes)))
    }
}

extension RemoteStore {
    /// Appends one signed entry to this device's chain, in the open transaction.
    func appendAudit(_ ref: [UInt8], _ operation: String, at: Int64) throws {
        guard let device, let keychainID else {
            throw KeychainError(.interactionNotAllowed, "this machine is not enrolled in \(location.url)", reason: .notEnrolled)
        }
        var head = auditHead
        if head == nil, let last = try execute("SELECT body, signature FROM locket.audit WHERE device = $1 ORDER BY seq DESC LIMIT 1",
                                                [.int(device.id)]).first {
            let entry = try SignedAuditEntry(body: last[0].bytes ?? [], signature: last[1].bytes ?? [])
            guard entry.device == device.id, entry.keychainID == keychainID,
                  DeviceSigning.verify(entry.signature, SignedAuditEntry.message(entry.body), publicKey: device.signingKey) else {
                throw KeychainError(.decode, "this device's latest audit entry is not its own: the database was altered")
            }
            head = RemoteTrust.AuditHead(sequence: entry.sequence, hash: entry.hash)
        }
        // The chain can't restart below the entry this device kept (checked at this command's first contact).
        if let kept = ownAudit.head, (head?.sequence ?? 0) < kept.sequence { throw ownAuditGone(after: head?.sequence ?? 0, kept: kept) }
        let entry = try SignedAuditEntry.sign(after: head, keychainID: keychainID, device: device, item: ref, operation: operation, at: at)
        // Reading the key first: a concurrent append by this device is a serialization failure (retried).
        _ = try execute("SELECT 1 FROM locket.audit WHERE device = $1 AND seq = $2", [.int(device.id), .int(entry.sequence)])
        try execute("""
            INSERT INTO locket.audit(device, seq, item, operation, at, body, signature)
            VALUES ($1, $2, $3, $4, to_timestamp($5::float8 / 1000000), $6, $7)
            """, [.int(device.id), .int(entry.sequence), .bytes(ref), .text(operation), .int(at), .bytes(entry.body), .bytes(entry.signature)])
        auditHead = RemoteTrust.AuditHead(sequence: entry.sequence, hash: entry.hash)
        appendedAudit.append(entry)
    }

    /// Every device's chain checked link by link and against the heads this
    /// device remembered from earlier checks; the entries in order of their
    /// rows. The first broken link is errSecDecode naming it.
    func verifiedAudit() throws -> [(entry: SignedAuditEntry, row: Int64, name: String)] {
        guard let keychainID, let roster = verifiedRoster?.roster else {
            throw KeychainError(.notAvailable, "the audit needs the server")
        }
        let rows = try execute("""
            SELECT a.id, a.device, a.seq, a.body, a.signature, coalesce(d.name, '') FROM locket.audit a
            LEFT JOIN locket.devices d ON d.id = a.device ORDER BY a.device, a.seq
            """, [])
        var heads: [Int64: RemoteTrust.AuditHead] = [:]
        var out: [(entry: SignedAuditEntry, row: Int64, name: String)] = []
        for row in rows {
            let id = row[0].int ?? 0, device = row[1].int ?? 0, sequence = row[2].int ?? 0
            func broken(_ why: String) -> KeychainError {
                KeychainError(.decode, "the audit is broken at device \(device)'s entry \(sequence) (row \(id)): \(why)")
            }
            let entry: SignedAuditEntry
            do { entry = try SignedAuditEntry(body: row[3].bytes ?? [], signature: row[4].bytes ?? []) } catch { throw broken("it is malformed") }
            guard entry.keychainID == keychainID, entry.device == device, entry.sequence == sequence else {
                throw broken("its columns do not match what was signed (re-attributed or renumbered)")
            }
            guard let signer = roster.device(device),
                  DeviceSigning.verify(entry.signature, SignedAuditEntry.message(entry.body), publicKey: signer.signingKey) else {
                throw broken("it is not signed by that device")
            }
            let before = heads[device]
            guard entry.sequence == (before?.sequence ?? 0) + 1, entry.previous == (before?.hash ?? [UInt8](repeating: 0, count: 32)) else {
                throw broken("the entry before it, \(sequence - 1), is missing or altered")
            }
            let head = RemoteTrust.AuditHead(sequence: entry.sequence, hash: entry.hash)
            if let kept = working.auditHeads[device], kept.sequence == entry.sequence, kept.hash != head.hash {
                throw broken("it is not the entry this device checked before")
            }
            heads[device] = head
            out.append((entry, id, row[5].text ?? ""))
        }
        for (device, kept) in working.auditHeads where (heads[device]?.sequence ?? 0) < kept.sequence {
            // Deleted, or lost with the database (a failover, a restore): recover keeps what the server holds.
            throw KeychainError(.decode, "the audit is broken: device \(device)'s entries after \(heads[device]?.sequence ?? 0) are gone (this device checked up to \(kept.sequence))",
                                reason: .remoteRolledBack)
        }
        if self.device != nil { working.auditHeads = heads }
        return out.sorted { $0.row < $1.row }
    }
}
