import LocketCore
import LocketSupport

/// The signed state of a remote keychain's items (docs/REMOTE.md
/// "Freshness"): every transaction that changes an item or the membership
/// appends the next link of a hash chain (`locket.states`), signed by the
/// writing device: its sequence number, the hash of the link before, the
/// membership epoch it wrote under, and the root of the item tree over
/// every item's id, reference and version hash (`ItemTree`). A reader checks
/// the chain from the link it last saw to the newest, and each row it opens
/// against its leaf under the newest root: a row put back, a deleted item
/// returned or an older state shown is refused.
struct SignedState: Equatable {
    let body: [UInt8]
    let signature: [UInt8]
    let keychainID: [UInt8]
    let sequence: Int64
    let previous: [UInt8]
    let rosterEpoch: Int64
    let writer: Int64
    let root: [UInt8]

    static let magic = "LKST1"
    static let what = "the keychain's signed state"

    init(body: [UInt8], signature: [UInt8]) throws {
        self.body = body
        self.signature = signature
        var r = try RecordReader(body, magic: SignedState.magic, what: SignedState.what)
        keychainID = try r.data(exactly: 16)
        sequence = try r.int()
        previous = try r.data(exactly: 32)
        rosterEpoch = try r.int()
        writer = try r.int()
        root = try r.data(exactly: 32)
        try r.end()
    }

    static func message(_ body: [UInt8]) -> [UInt8] { Array("locket.remote.state.v1".utf8) + body }

    var hash: [UInt8] { DeviceSigning.hash("locket.remote.state-link.v1", [body, signature]) }

    /// The link after `previous` (nil: the first), written by `device` under `rosterEpoch`.
    static func sign(after previous: SignedState?, keychainID: [UInt8], rosterEpoch: Int64, root: [UInt8],
                     by device: DeviceIdentity) throws -> SignedState {
        var w = RecordWriter(magic)
        w.data(keychainID)
        w.int((previous?.sequence ?? 0) + 1)
        w.data(previous?.hash ?? [UInt8](repeating: 0, count: 32))
        w.int(rosterEpoch)
        w.int(device.id)
        w.data(root)
        return try SignedState(body: w.bytes, signature: device.sign(message(w.bytes)))
    }

    /// Checks that this link follows `previous` (nil: it is the first, or
    /// the first this device sees) and is signed by a device `roster`
    /// approved at the epoch it names.
    func verify(after previous: SignedState?, roster: Roster) throws {
        func altered(_ why: String) -> KeychainError {
            KeychainError(.decode, "\(SignedState.what) at \(sequence) \(why): the database was altered")
        }
        guard keychainID == roster.keychainID else { throw altered("belongs to another keychain") }
        if let previous {
            guard sequence == previous.sequence + 1, self.previous == previous.hash else { throw altered("does not follow the one before it") }
            guard rosterEpoch >= previous.rosterEpoch else { throw altered("names an older membership than the one before it") }
        }
        guard rosterEpoch >= 1, rosterEpoch <= roster.epoch else { throw altered("names a membership epoch that does not exist") }
        guard let device = roster.device(writer), device.revokedAt == 0 || device.revokedAt > rosterEpoch,
              DeviceSigning.verify(signature, SignedState.message(body), publicKey: device.signingKey) else {
            throw altered("is not signed by a device approved when it was written")
        }
    }

    /// Schema 2's root over the items, (id, ref, version hash) by id: checked
    /// once, when the item tree replaces it (RemoteStore+Upgrade).
    static func root(_ items: [(id: Int64, ref: [UInt8], version: [UInt8])]) -> [UInt8] {
        var parts: [[UInt8]] = []
        parts.reserveCapacity(items.count * 3)
        for item in items {
            parts.append(BigEndian.bytes(item.id))
            parts.append(item.ref)
            parts.append(item.version)
        }
        return DeviceSigning.hash("locket.remote.items-root.v1", parts)
    }

    /// An item's version hash: its primary-key digest, sealed attributes and
    /// `dataHash` of its sealed secret (so a listing that does not read the
    /// secret still checks the row). Reference, class, protection class and
    /// group are bound by the sealing itself (the field key derives from them).
    static func version(primaryKey: [UInt8], attributes: [UInt8], dataHash: [UInt8]) -> [UInt8] {
        DeviceSigning.hash("locket.remote.item-version.v1", [primaryKey, attributes, dataHash])
    }

    static func dataHash(_ data: [UInt8]) -> [UInt8] { DeviceSigning.hash("locket.remote.item-data.v1", [data]) }
}
