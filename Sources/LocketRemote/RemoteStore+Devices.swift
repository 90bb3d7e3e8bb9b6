import LocketCore
import LocketSupport

/// The statements behind a remote keychain's devices (RemoteAdmin+Devices),
/// in the open transaction.
extension RemoteStore {
    /// A device as the server's table holds it.
    struct ListedDevice {
        let id: Int64
        let name: String
        let encryptionKey: [UInt8]
        let signingKey: [UInt8]
    }

    /// A new pending device with these public keys; returns its id.
    func enrollDevice(_ keys: DeviceIdentity, name: String) throws -> Int64 {
        guard let id = try execute(RemoteStatements.enrollDevice, [.bytes(keys.publicKey), .text(name), .bytes(keys.signingKey)])
            .first?[0].int else {
            throw KeychainError(.io, "the database returned no device id")
        }
        return id
    }

    /// Every device in the server's table, in enrolment order.
    func listedDevices() throws -> [ListedDevice] {
        try execute(RemoteStatements.listDevices, []).map { row in
            ListedDevice(id: row[0].int ?? 0, name: row[2].text ?? "", encryptionKey: row[1].bytes ?? [], signingKey: row[5].bytes ?? [])
        }
    }

    /// Device `id`'s public keys, its row locked until the transaction ends; nil when there is none.
    func lockedDevice(_ id: Int64) throws -> ListedDevice? {
        guard let row = try execute(RemoteStatements.lockDevice, [.int(id)]).first,
              let encryptionKey = row[0].bytes, let signingKey = row[2].bytes else { return nil }
        return ListedDevice(id: id, name: "", encryptionKey: encryptionKey, signingKey: signingKey)
    }

    /// The server's state column follows the signed membership (pending -> approved).
    func markApproved(_ id: Int64) throws { try execute(RemoteStatements.approveDevice, [.int(id)]) }

    /// The server's state column follows the signed membership (approved -> revoked).
    func markRevoked(_ id: Int64) throws { try execute(RemoteStatements.revokeDevice, [.int(id)]) }

    /// `group`'s next generation, as `members` (the next membership) has it:
    /// `key` wrapped to each member it does not revoke, and every older wrap dropped.
    func replaceGroupKey(_ group: Roster.Group, with key: SecureBytes, members: Roster) throws {
        try execute("UPDATE locket.groups SET generation = $2 WHERE agrp = $1", [.text(group.name), .int(group.generation)])
        for member in group.members {
            guard let device = members.device(member), device.revokedAt == 0 else { continue }
            try storeWrappedKey(group: group.name, generation: group.generation, device: member,
                                wrapped: DeviceIdentity.seal(key, to: device.encryptionKey))
        }
        try execute("DELETE FROM locket.group_keys WHERE agrp = $1 AND generation <> $2", [.text(group.name), .int(group.generation)])
    }

    /// Every item row of `group`, locked, proven against the signed state and
    /// unpadded (the engine's sealed values), for re-sealing under a new key.
    func lockedItems(of group: String) throws -> [RemoteItemStore.Row] {
        let rows = try execute("SELECT id, ref, cls, pdmn, agrp, attrs, data, pk, dh FROM locket.items WHERE agrp = $1 ORDER BY id FOR UPDATE",
                               [.text(group)])
        try prove(rows.compactMap { $0[0].int })
        return try rows.map { try opened($0) }
    }

    /// An item's values sealed again (under its group's new key), padded and
    /// stored with their version hash, which the next signed state covers.
    func resealItem(id: Int64, ref: [UInt8], group: String, attributes: [UInt8], data: [UInt8]) throws {
        let pk = try execute("SELECT pk FROM locket.items WHERE id = $1", [.int(id)]).first?[0].bytes ?? []
        let stored = try padded(group: group, primaryKey: pk, attributes: attributes, data: data)
        try execute(RemoteStatements.updateItem, [.int(id), .bytes(stored.attributes), .bytes(stored.data),
                                                  .bytes(stored.version), .bytes(stored.dataHash)])
        try wrote(id: id, ref: ref, version: stored.version, inserted: false, recorded: false)
    }
}
