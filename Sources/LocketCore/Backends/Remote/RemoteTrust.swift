import Glibc
import LocketSupport

/// What this device has verified of a remote keychain, kept beside its
/// device key (`$XDG_STATE_HOME/locket/remote-ID.trust`, 0600): the latest
/// signed membership (so the fingerprints of every device it saw approved,
/// and each group's generation), the latest signed state of the items, and
/// the head of each device's audit chain it has checked. Anything older
/// that the server shows later is refused as a rollback; anything that
/// does not descend from it is a fork. The record is authenticated with a
/// key derived from the device's own secret key (a copy edited elsewhere
/// does not open); deleting it makes the device trust the server's newest
/// records again as at enrolment (docs/REMOTE.md "Threat model").
struct RemoteTrust: Equatable {
    var roster: SignedRoster?
    var state: SignedState?
    /// device id -> (sequence, hash) of the latest audit entry checked.
    var auditHeads: [Int64: AuditHead] = [:]

    struct AuditHead: Equatable {
        let sequence: Int64
        let hash: [UInt8]
    }

    static let magic = "LKTR1"

    static func path(keychainID: [UInt8], environment: Environment) throws -> String {
        try environment.stateDirectory() + "/locket/remote-" + Hex.encode(keychainID) + ".trust"
    }

    private static func macKey(_ device: DeviceIdentity) throws -> SecureBytes {
        try KeyDerivation.derive(device.secretKey, KeyDerivation.Context("locket.remote.trust.v1").with(BigEndian.bytes(device.id)))
    }

    private static func mac(_ body: [UInt8], key: SecureBytes) -> [UInt8] {
        key.withUnsafeBytes { DeviceSigning.hash("locket.remote.trust-mac.v1", [Array($0), body]) }
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
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> RemoteTrust {
        var r = try RecordReader(bytes, magic: magic, what: "this device's trust record")
        var trust = RemoteTrust()
        let rosterBody = try r.data(), rosterSignature = try r.data()
        if !rosterBody.isEmpty { trust.roster = try SignedRoster(body: rosterBody, signature: rosterSignature) }
        let stateBody = try r.data(), stateSignature = try r.data()
        if !stateBody.isEmpty { trust.state = try SignedState(body: stateBody, signature: stateSignature) }
        for _ in 0..<(try r.count(limit: 1 << 16)) {
            let device = try r.int()
            trust.auditHeads[device] = AuditHead(sequence: try r.int(), hash: try r.data(exactly: 32))
        }
        try r.end()
        return trust
    }

    /// This device's record, empty when it has none yet.
    static func load(keychainID: [UInt8], device: DeviceIdentity, environment: Environment) throws -> RemoteTrust {
        let file = try path(keychainID: keychainID, environment: environment)
        // O_NOFOLLOW, the user's own, not open to others (FileIO.openPrivate).
        guard let (fd, size) = try FileIO.openPrivate(file, what: "this device's trust record") else { return RemoteTrust() }
        defer { close(fd) }
        var stored = [UInt8](repeating: 0, count: size)
        guard size >= 32, size <= 16 << 20, stored.withUnsafeMutableBytes({ FileIO.readExactly(fd, into: $0) }) else {
            throw KeychainError(.decode, "this device's trust record \(file) is truncated")
        }
        let body = Array(stored.dropLast(32))
        let expected = mac(body, key: try macKey(device)), found = Array(stored.suffix(32))
        guard expected.withUnsafeBytes({ e in found.withUnsafeBytes { Sodium.equal(e, $0) } }) else {
            throw KeychainError(.decode, "this device's trust record \(file) was altered")
        }
        return try decode(body)
    }

    func save(keychainID: [UInt8], device: DeviceIdentity, environment: Environment) throws {
        let file = try RemoteTrust.path(keychainID: keychainID, environment: environment)
        try FileIO.makeDirectories(FileIO.directory(of: file))
        let body = encode()
        try (body + RemoteTrust.mac(body, key: RemoteTrust.macKey(device))).withUnsafeBytes { try FileIO.writeAtomically(file, $0) }
    }
}
