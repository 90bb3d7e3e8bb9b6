import LocketCore
import Glibc
import LocketSupport

/// What this device has verified of a remote keychain, kept beside its
/// device key (`$XDG_STATE_HOME/locket/remote-ID.trust`, 0600): the latest
/// signed membership (so the fingerprints of every device it saw approved,
/// and each group's generation), the latest signed state of the items, the
/// head of each device's audit chain it has checked, every revocation it
/// performed or saw (kept whatever the server shows later), and the newest
/// links it saw (`RemoteJournal`, for `keychain recover`'s report). Anything
/// older that the server shows later is refused as a rollback; anything
/// that does not descend from it is a fork. The record is authenticated
/// with a key derived from the device's own secret key (a copy edited
/// elsewhere does not open). `keychain recover` pins it to the server's
/// history again, revocations carried over (docs/REMOTE.md "Replication
/// and failover").
struct RemoteTrust: Equatable {
    var roster: SignedRoster?
    var state: SignedState?
    /// device id -> (sequence, hash) of the latest audit entry checked.
    var auditHeads: [Int64: AuditHead] = [:]
    /// Every revocation this device performed or verified.
    var revocations: [KeptRevocation] = []
    var journal = RemoteJournal()

    struct AuditHead: Equatable {
        let sequence: Int64
        let hash: [UInt8]
    }

    static let magic = "LKTR2"
    /// The record before issue 42: no revocations, no journal.
    static let firstMagic = "LKTR1"

    static func path(keychainID: [UInt8], environment: Environment) throws -> String {
        try environment.stateDirectory() + "/locket/remote-" + Hex.encode(keychainID) + ".trust"
    }

    private static func macKey(_ device: DeviceIdentity) throws -> SecureBytes {
        try KeyDerivation.derive(device.secretKey, KeyDerivation.Context("locket.remote.trust.v1").with(BigEndian.bytes(device.id)))
    }

    private static func mac(_ body: [UInt8], key: SecureBytes) -> [UInt8] {
        key.withUnsafeBytes { DeviceSigning.hash("locket.remote.trust-mac.v1", [Array($0), body]) }
    }

    /// `next` verified after `previous` (nil: the first epoch): its
    /// revocations kept, the link in the journal.
    mutating func note(_ next: SignedRoster, after previous: SignedRoster?) {
        if let before = previous?.roster {
            for device in next.roster.devices where device.revokedAt != 0 {
                guard let was = before.device(device.id), was.revokedAt == 0 else { continue }
                let held = before.groups.filter { $0.members.contains(device.id) }
                    .map { KeptRevocation.HeldGroup(name: $0.name, generation: $0.generation) }
                keep(KeptRevocation(device: device.id, encryptionKey: device.encryptionKey, signingKey: device.signingKey,
                                    epoch: next.roster.epoch, signer: next.roster.signer, groups: held))
            }
        }
        journal.record(epoch: RemoteJournal.Link(number: next.roster.epoch, hash: next.hash, signer: next.roster.signer,
                                                 notes: RemoteJournal.changes(from: previous?.roster, to: next.roster), refs: [], moreRefs: 0))
    }

    /// A state verified, or written by this device (`refs`: the items it changed in it).
    mutating func note(_ state: SignedState, refs: [[UInt8]] = []) {
        journal.record(state: RemoteJournal.Link(number: state.sequence, hash: state.hash, signer: state.writer, notes: [],
                                                 refs: Array(refs.prefix(RemoteJournal.refLimit)),
                                                 moreRefs: Int64(max(0, refs.count - RemoteJournal.refLimit))))
    }

    /// A revocation kept once per device and keys.
    mutating func keep(_ revocation: KeptRevocation) {
        guard !revocations.contains(where: { $0.device == revocation.device && $0.signingKey == revocation.signingKey }) else { return }
        revocations.append(revocation)
    }

    func encode() -> [UInt8] {
        var w = RecordWriter(RemoteTrust.magic)
        w.data(roster?.body ?? [])
        w.data(roster?.signature ?? [])
        w.data(state?.body ?? [])
        w.data(state?.signature ?? [])
        w.int(Int64(auditHeads.count))
        for (device, head) in auditHeads.sorted(by: { $0.key < $1.key }) {
            w.int(device)
            w.int(head.sequence)
            w.data(head.hash)
        }
        w.int(Int64(revocations.count))
        for revocation in revocations { revocation.encode(into: &w) }
        journal.encode(into: &w)
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> RemoteTrust {
        let first = bytes.starts(with: Array(firstMagic.utf8))
        var r = try RecordReader(bytes, magic: first ? firstMagic : magic, what: "this device's trust record")
        var trust = RemoteTrust()
        let rosterBody = try r.data(), rosterSignature = try r.data()
        if !rosterBody.isEmpty { trust.roster = try SignedRoster(body: rosterBody, signature: rosterSignature) }
        let stateBody = try r.data(), stateSignature = try r.data()
        if !stateBody.isEmpty { trust.state = try SignedState(body: stateBody, signature: stateSignature) }
        for _ in 0..<(try r.count(limit: 1 << 16)) {
            let device = try r.int()
            trust.auditHeads[device] = AuditHead(sequence: try r.int(), hash: try r.data(exactly: 32))
        }
        if first {
            // Kept before revocations were: those of the membership it holds, without the groups.
            for device in trust.roster?.roster.devices ?? [] where device.revokedAt != 0 {
                trust.keep(KeptRevocation(device: device.id, encryptionKey: device.encryptionKey, signingKey: device.signingKey,
                                          epoch: device.revokedAt, signer: 0, groups: nil))
            }
        } else {
            for _ in 0..<(try r.count(limit: 1 << 16)) { trust.keep(try KeptRevocation.decode(&r)) }
            trust.journal = try RemoteJournal.decode(&r)
        }
        try r.end()
        return trust
    }

    /// This device's record, empty when it has none yet.
    static func load(keychainID: [UInt8], device: DeviceIdentity, environment: Environment) throws -> RemoteTrust {
        let file = try path(keychainID: keychainID, environment: environment)
        // O_NOFOLLOW, the user's own, not open to others (FileIO.openPrivate).
        guard let record = try FileIO.openPrivate(file, what: "this device's trust record") else { return RemoteTrust() }
        let size = record.size
        var stored = [UInt8](repeating: 0, count: size)
        guard size >= 32, size <= 16 << 20, record.closeAfter({ file in stored.withUnsafeMutableBytes { raw in (try? file.read(into: raw).get()) == raw.count } }) else {
            throw KeychainError(.decode, "this device's trust record \(file) is truncated", reason: .remoteTrustDamaged)
        }
        let body = Array(stored.dropLast(32))
        let expected = mac(body, key: try macKey(device)), found = Array(stored.suffix(32))
        guard expected.withUnsafeBytes({ e in found.withUnsafeBytes { Sodium.equal(e, $0) } }) else {
            throw KeychainError(.decode, "this device's trust record \(file) was altered", reason: .remoteTrustDamaged)
        }
        do {
            return try decode(body)
        } catch {
            throw KeychainError(.decode, "this device's trust record \(file) is malformed", reason: .remoteTrustDamaged)
        }
    }

    func save(keychainID: [UInt8], device: DeviceIdentity, environment: Environment) throws {
        let file = try RemoteTrust.path(keychainID: keychainID, environment: environment)
        try FileIO.makeDirectories(FileIO.directory(of: file))
        let body = encode()
        try (body + RemoteTrust.mac(body, key: RemoteTrust.macKey(device))).withUnsafeBytes { try FileIO.writeAtomically(file, $0) }
    }
}
