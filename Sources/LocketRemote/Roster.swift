import LocketCore
import LocketSupport

/// The signed membership of a remote keychain (docs/REMOTE.md "What each
/// key proves"): every approved or revoked device with its two public keys,
/// and every access group with its generation, a check of its current key
/// and its members. Each change (a device approved or revoked, a group
/// made) is a new epoch that names the hash of the one before and is signed
/// with the Ed25519 key of a device approved in the one before (epoch 1 by
/// the creating device), kept in `locket.roster`. A device seals to a group
/// key only when the key matches the latest epoch it verified, and
/// remembers that epoch (`RemoteTrust`): the server can hold these records
/// back or drop them, never make or alter one, and a revoked device signs
/// nothing a device accepts.
struct Roster: Equatable {
    struct Device: Equatable {
        let id: Int64
        let encryptionKey: [UInt8]
        let signingKey: [UInt8]
        /// The epoch that revoked it, 0 while approved.
        var revokedAt: Int64
    }

    struct Group: Equatable {
        let name: String
        var generation: Int64
        /// `Roster.keyCheck` of the generation's key.
        var keyCheck: [UInt8]
        var members: [Int64]
    }

    let keychainID: [UInt8]
    var epoch: Int64
    var previous: [UInt8]
    var signer: Int64
    var devices: [Device]
    var groups: [Group]

    static let magic = "LKRS1"
    static let what = "the keychain's signed membership"

    func device(_ id: Int64) -> Device? { devices.first { $0.id == id } }
    func isApproved(_ id: Int64) -> Bool { device(id).map { $0.revokedAt == 0 } ?? false }
    func group(_ name: String) -> Group? { groups.first { $0.name == name } }

    /// What binds a group key to its group and generation without revealing it.
    static func keyCheck(keychainID: [UInt8], group: String, generation: Int64, key: SecureBytes) -> [UInt8] {
        key.withUnsafeBytes { DeviceSigning.hash("locket.remote.group-key-check.v1", [keychainID, Array(group.utf8), BigEndian.bytes(generation), Array($0)]) }
    }

    /// The fingerprint a device with these keys shows.
    func fingerprint(_ device: Device) -> DeviceFingerprint {
        DeviceFingerprint(keychainID: keychainID, encryptionKey: device.encryptionKey, signingKey: device.signingKey)
    }

    func encode() -> [UInt8] {
        var w = RecordWriter(Roster.magic)
        w.data(keychainID)
        w.int(epoch)
        w.data(previous)
        w.int(signer)
        w.int(Int64(devices.count))
        for device in devices.sorted(by: { $0.id < $1.id }) {
            w.int(device.id)
            w.data(device.encryptionKey)
            w.data(device.signingKey)
            w.int(device.revokedAt)
        }
        w.int(Int64(groups.count))
        for group in groups.sorted(by: { $0.name < $1.name }) {
            w.string(group.name)
            w.int(group.generation)
            w.data(group.keyCheck)
            w.int(Int64(group.members.count))
            for member in group.members.sorted() { w.int(member) }
        }
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> Roster {
        var r = try RecordReader(bytes, magic: magic, what: what)
        let keychainID = try r.data(exactly: 16)
        let epoch = try r.int()
        let previous = try r.data(exactly: 32)
        let signer = try r.int()
        var devices: [Device] = []
        for _ in 0..<(try r.count(limit: 1 << 16)) {
            devices.append(Device(id: try r.int(), encryptionKey: try r.data(exactly: 32), signingKey: try r.data(exactly: 32), revokedAt: try r.int()))
        }
        var groups: [Group] = []
        for _ in 0..<(try r.count(limit: 1 << 16)) {
            let name = try r.string()
            let generation = try r.int()
            let check = try r.data(exactly: 32)
            var members: [Int64] = []
            for _ in 0..<(try r.count(limit: 1 << 16)) { members.append(try r.int()) }
            groups.append(Group(name: name, generation: generation, keyCheck: check, members: members))
        }
        try r.end()
        return Roster(keychainID: keychainID, epoch: epoch, previous: previous, signer: signer, devices: devices, groups: groups)
    }
}

/// A roster as stored: its bytes and its signer's signature over them.
struct SignedRoster: Equatable {
    let body: [UInt8]
    let signature: [UInt8]
    let roster: Roster

    init(body: [UInt8], signature: [UInt8]) throws {
        self.body = body
        self.signature = signature
        roster = try Roster.decode(body)
    }

    static func message(_ body: [UInt8]) -> [UInt8] { Array("locket.remote.roster.v1".utf8) + body }

    /// What the next epoch names as `previous`.
    var hash: [UInt8] { DeviceSigning.hash("locket.remote.roster-link.v1", [body, signature]) }

    /// Made and signed by `device`.
    static func sign(_ roster: Roster, by device: DeviceIdentity) throws -> SignedRoster {
        let body = roster.encode()
        return try SignedRoster(body: body, signature: device.sign(message(body)))
    }

    /// Checks that this epoch follows `previous` (nil: it is epoch 1 of
    /// `keychainID`): the link, a signer approved in `previous` (epoch 1:
    /// in itself, the creating device alone), its signature, and that no
    /// device's keys changed and no revocation was undone.
    func verify(after previous: SignedRoster?, keychainID: [UInt8]) throws {
        func altered(_ why: String) -> KeychainError {
            KeychainError(.decode, "\(Roster.what) at epoch \(roster.epoch) \(why): the database was altered")
        }
        guard roster.keychainID == keychainID else { throw altered("belongs to another keychain") }
        let authority = previous?.roster ?? roster
        guard roster.epoch == (previous?.roster.epoch ?? 0) + 1 else { throw altered("does not follow epoch \(authority.epoch)") }
        guard roster.previous == (previous?.hash ?? [UInt8](repeating: 0, count: 32)) else { throw altered("does not follow the epoch before it") }
        if previous == nil, roster.devices.count != 1 || !roster.groups.isEmpty { throw altered("is not a new keychain's") }
        guard let signer = authority.device(roster.signer), signer.revokedAt == 0,
              DeviceSigning.verify(signature, SignedRoster.message(body), publicKey: signer.signingKey) else {
            throw altered("is not signed by a device approved before it")
        }
        for device in authority.devices {
            guard let now = roster.device(device.id), now.encryptionKey == device.encryptionKey, now.signingKey == device.signingKey,
                  device.revokedAt == 0 || now.revokedAt == device.revokedAt else {
                throw altered("changes device \(device.id)'s keys or undoes its revocation")
            }
        }
    }
}
