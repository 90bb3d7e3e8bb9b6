import LocketSupport

/// Devices of a remote keychain (SPEC §17): enroll, list, approve for access
/// groups, revoke. An item's field key needs both its class key (the password,
/// as in a file) and its group's key, which the database holds only sealed to
/// each approved device's X25519 public key: a device opens only its groups.
extension Keychain {
    /// One device as `keychain devices` lists it.
    public struct RemoteDevice: Sendable, Equatable {
        public let id: Int64
        public let name: String
        public let state: String
        /// The access groups it holds a current key for.
        public let groups: [String]
        /// Whether it is this machine.
        public let isThisMachine: Bool
    }

    private func requireRemote(_ what: String) throws -> RemoteStore {
        guard let remote = remoteStore else { throw KeychainError(.notAvailable, "\(what) is for a remote keychain") }
        return remote
    }

    /// This machine's device id, nil before it enrolls.
    public var deviceID: Int64? { remoteStore?.device?.id }

    /// Asks to join: a new X25519 key pair, the public key in the database as
    /// a pending device named `name`, the secret key in this machine's device
    /// state. Returns the device id an approved device approves.
    @discardableResult
    public func enroll(name: String) throws -> Int64 {
        let remote = try requireRemote("enrolling")
        if let device = remote.device { throw KeychainError(.duplicateItem, "this machine is already device \(device.id)") }
        let secretKey = try DeviceIdentity.generateSecretKey()
        let publicKey = try BackupRecipients.publicKey(secretKey: secretKey)
        let id: Int64 = try remote.transaction { _ in
            guard let id = try remote.execute(RemoteStatements.enrollDevice, [.bytes(publicKey), .text(name)]).first?[0].int else {
                throw KeychainError(.io, "the database returned no device id")
            }
            return id
        }
        let device = try DeviceIdentity(id: id, secretKey: secretKey)
        try device.save(keychainID: keybag.keychainID, environment: environment)
        remote.device = device
        return id
    }

    /// Every device, in enrolment order.
    public func devices() throws -> [RemoteDevice] {
        let remote = try requireRemote("listing devices")
        return try remote.transaction { _ in
            try remote.execute(RemoteStatements.listDevices, []).map { row in
                let id = row[0].int ?? 0
                let groups = try remote.execute(RemoteStatements.deviceGroups, [.int(id)]).compactMap { $0[0].text }
                return RemoteDevice(id: id, name: row[2].text ?? "", state: row[3].text ?? "", groups: groups,
                                    isThisMachine: id == remote.device?.id)
            }
        }
    }

    /// Grants device `id` the current keys of `groups`, each wrapped to its
    /// public key by this device, which must hold them; a pending device
    /// becomes approved. All or nothing.
    public func approve(device id: Int64, groups: [String]) throws {
        let remote = try requireRemote("approving a device")
        try requireOwner("approving a device")
        guard !groups.isEmpty else { throw KeychainError(.param, "name the access groups to approve the device for") }
        try remote.transaction { _ in
            guard let target = try remote.execute(RemoteStatements.lockDevice, [.int(id)]).first,
                  let publicKey = target[0].bytes, let state = target[1].text else {
                throw KeychainError(.itemNotFound, "no device \(id)")
            }
            guard state != "revoked" else { throw KeychainError(.param, "device \(id) was revoked; it enrolls again as a new device") }
            for group in groups {
                let key = try remote.groupKey(group)
                try remote.execute(RemoteStatements.wrapGroupKey + " ON CONFLICT DO NOTHING",
                                   [.text(group), .int(id), .bytes(DeviceIdentity.seal(key, to: publicKey))])
            }
            if state == "pending" { try remote.execute(RemoteStatements.approveDevice, [.int(id)]) }
        }
    }

    /// Revokes device `id`: in one transaction, each group it held gets a new
    /// key generation, every item of the group is re-sealed under it, the
    /// other members get the new key, and the older wraps are dropped, so
    /// nothing written after this is readable with what the device kept.
    /// This device must hold those groups and have their items' classes unlocked.
    public func revoke(device id: Int64) throws {
        let remote = try requireRemote("revoking a device")
        try requireOwner("revoking a device")
        // A server that puts back the keys from before the revocation puts back an older header too: it moves on with them.
        try write(advancingHeader: true) {
            let groups = try remote.execute(RemoteStatements.deviceGroups, [.int(id)]).compactMap { $0[0].text }
            guard try !remote.execute(RemoteStatements.revokeDevice, [.int(id)]).isEmpty else {
                throw KeychainError(.itemNotFound, "no approved device \(id)")
            }
            for group in groups { try rotate(group: group, remote) }
        }
    }

    /// A new generation of `group`'s key, its items re-sealed, inside the caller's transaction.
    private func rotate(group: String, _ remote: RemoteStore) throws {
        _ = try remote.execute(RemoteStatements.lockGroup, [.text(group)])
        // The members before the generation moves (the revoked device is no longer approved).
        let members = try remote.execute(RemoteStatements.groupMembers, [.text(group)])
        let rows = try remote.execute("SELECT id, ref, cls, pdmn, attrs, data FROM locket.items WHERE agrp = $1 ORDER BY id FOR UPDATE",
                                      [.text(group)])
        var opened: [(Int64, Sealing.RowIdentity, SecureBytes, SecureBytes)] = []
        for row in rows {
            guard let itemClass = row[2].text.flatMap(ItemClass.init(rawValue:)),
                  let pclass = row[3].text.flatMap(ProtectionClass.init(rawValue:)),
                  let id = row[0].int, let ref = row[1].bytes, let attrs = row[4].bytes, let data = row[5].bytes else {
                throw KeychainError(.decode, "an item of the group could not be read for re-sealing")
            }
            let identity = Sealing.RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: group, ref: ref)
            opened.append((id, identity, try SecretBox.open(attrs, key: try fieldKey(identity, .attributes), what: "an item's attributes"),
                           try SecretBox.open(data, key: try fieldKey(identity, .data), what: "an item's secret")))
        }
        _ = try remote.execute(RemoteStatements.advanceGroup, [.text(group)])
        let key = try SecureBytes(copying: Sodium.random(32))
        for member in members {
            guard let device = member[0].int, let publicKey = member[1].bytes else { continue }
            try remote.execute(RemoteStatements.wrapGroupKey, [.text(group), .int(device), .bytes(DeviceIdentity.seal(key, to: publicKey))])
        }
        try remote.execute(RemoteStatements.dropOldGroupKeys, [.text(group)])
        remote.forgetGroupKeys()
        for (id, identity, attrs, data) in opened {
            try remote.execute(RemoteStatements.updateItem, [.int(id), .bytes(SecretBox.seal(attrs, key: try fieldKey(identity, .attributes))),
                                                             .bytes(SecretBox.seal(data, key: try fieldKey(identity, .data)))])
        }
    }
}
