import LocketCore
import Glibc
import LocketSupport

/// The newest entry of this device's own audit chain (issue 44), kept beside
/// its trust record (`$XDG_STATE_HOME/locket/remote-ID.audit-head`, 0600):
/// its sequence and hash, and the references of the newest entries, for
/// `keychain recover` to name the reads a server lost. At its next contact
/// the device checks that the server still holds that entry, so its chain
/// can't be deleted whole, or cut short, unseen (nothing signed by another
/// device refers to a chain's tail).
///
/// Written after each transaction that appended to the chain, without a
/// sync: a lost update leaves an older entry, still in the chain, so it
/// only weakens the check; and like the generation record, a file that is
/// missing or does not authenticate counts as absent (whoever can edit it
/// can delete it; the operator this guards against can do neither).
struct OwnAuditRecord: Equatable {
    struct Entry: Equatable {
        let sequence: Int64
        let item: [UInt8]
    }

    var head: RemoteTrust.AuditHead?
    /// The newest entries appended, oldest first (at most `limit`).
    var recent: [Entry] = []

    static let magic = "LKAH1"
    static let limit = 64

    static func path(keychainID: [UInt8], environment: Environment) throws -> String {
        try environment.stateDirectory() + "/locket/remote-" + Hex.encode(keychainID) + ".audit-head"
    }

    mutating func appended(_ entry: SignedAuditEntry) {
        head = RemoteTrust.AuditHead(sequence: entry.sequence, hash: entry.hash)
        recent.removeAll { $0.sequence >= entry.sequence }
        recent.append(Entry(sequence: entry.sequence, item: entry.item))
        if recent.count > Self.limit { recent.removeFirst(recent.count - Self.limit) }
    }

    private static func macKey(_ device: DeviceIdentity) throws -> SecureBytes {
        try KeyDerivation.derive(device.secretKey, KeyDerivation.Context("locket.remote.audit-head.v1").with(BigEndian.bytes(device.id)))
    }

    private static func mac(_ body: [UInt8], key: SecureBytes) -> [UInt8] {
        key.withUnsafeBytes { DeviceSigning.hash("locket.remote.audit-head-mac.v1", [Array($0), body]) }
    }

    func encode() -> [UInt8] {
        var w = RecordWriter(Self.magic)
        w.int(head?.sequence ?? 0)
        w.data(head?.hash ?? [])
        w.int(Int64(recent.count))
        for entry in recent {
            w.int(entry.sequence)
            w.data(entry.item)
        }
        return w.bytes
    }

    /// This device's record; empty when there is none or it does not authenticate.
    static func load(keychainID: [UInt8], device: DeviceIdentity, environment: Environment) -> OwnAuditRecord {
        guard let file = try? path(keychainID: keychainID, environment: environment),
              let opened = try? FileIO.openPrivate(file, what: "this device's audit head") else { return OwnAuditRecord() }
        let size = opened.size
        var stored = [UInt8](repeating: 0, count: size)
        guard size > 32, size <= 1 << 20, opened.closeAfter({ file in stored.withUnsafeMutableBytes { raw in (try? file.read(into: raw).get()) == raw.count } }),
              let key = try? macKey(device) else { return OwnAuditRecord() }
        let body = Array(stored.dropLast(32)), found = Array(stored.suffix(32)), expected = mac(body, key: key)
        guard expected.withUnsafeBytes({ e in found.withUnsafeBytes { Sodium.equal(e, $0) } }),
              var r = try? RecordReader(body, magic: magic, what: "this device's audit head") else { return OwnAuditRecord() }
        var record = OwnAuditRecord()
        do {
            let sequence = try r.int(), hash = try r.data(limit: 32)
            if sequence > 0 && hash.count == 32 { record.head = RemoteTrust.AuditHead(sequence: sequence, hash: hash) }
            for _ in 0..<(try r.count(limit: limit)) { record.recent.append(Entry(sequence: try r.int(), item: try r.data(limit: 64))) }
            try r.end()
        } catch {
            return OwnAuditRecord()
        }
        return record
    }

    func save(keychainID: [UInt8], device: DeviceIdentity, environment: Environment) throws {
        let file = try Self.path(keychainID: keychainID, environment: environment)
        try FileIO.makeDirectories(FileIO.directory(of: file))
        let body = encode()
        try (body + Self.mac(body, key: Self.macKey(device))).withUnsafeBytes {
            try FileIO.writeAtomically(file, in: AT_FDCWD, $0, path: file, durable: false)
        }
    }
}

extension RemoteStore {
    /// At this command's first contact: the server must still hold the
    /// newest entry this device appended to its own chain (issue 44), so a
    /// chain deleted whole, or cut short, is seen by the device that signed it.
    func checkOwnAudit() throws {
        guard !ownAuditChecked, let device, let kept = ownAudit.head else { return }
        let rows = try execute("""
            SELECT seq, body, signature FROM locket.audit WHERE device = $1
            AND (seq = $2 OR seq = (SELECT max(seq) FROM locket.audit WHERE device = $1)) ORDER BY seq
            """, [.int(device.id), .int(kept.sequence)])
        let newest = rows.last?[0].int ?? 0
        guard let row = rows.first(where: { $0[0].int == kept.sequence }) else { throw ownAuditGone(after: newest, kept: kept) }
        let entry = try SignedAuditEntry(body: row[1].bytes ?? [], signature: row[2].bytes ?? [])
        guard entry.hash == kept.hash else {
            throw KeychainError(.decode, """
                \(location.url) holds another entry \(kept.sequence) of this device's audit chain than this device appended: \
                the database was altered, or another history replaced it (a failover, a restore)
                """, reason: .remoteRolledBack)
        }
        ownAuditChecked = true
    }

    func ownAuditGone(after newest: Int64, kept: RemoteTrust.AuditHead) -> KeychainError {
        KeychainError(.decode, """
            \(location.url) no longer holds this device's audit entries after \(newest) (it appended up to \(kept.sequence)): \
            they were deleted, or the database was rolled back (a failover, a restore)
            """, reason: .remoteRolledBack)
    }

    /// After the commit: the newest entry this transaction appended is the one this device keeps.
    func saveOwnAudit() {
        guard !appendedAudit.isEmpty, let device, let keychainID else { return }
        for entry in appendedAudit { ownAudit.appended(entry) }
        appendedAudit = []
        // The read or write is committed: a record not kept only weakens the next check.
        try? ownAudit.save(keychainID: keychainID, device: device, environment: environment)
    }
}
