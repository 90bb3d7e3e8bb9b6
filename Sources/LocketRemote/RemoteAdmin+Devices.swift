import LocketCore
import LocketSupport

/// Devices of a remote keychain (SPEC §17): enroll, list, approve for access
/// groups, revoke. An item's field key needs both its class key (the password,
/// as in a file) and its group's key, which the database holds only sealed to
/// each approved device's X25519 public key: a device opens only its groups.
/// Who is approved, with which keys, and each group's generation and
/// members are the signed membership (`Roster`), not the server's tables:
/// an approval needs the new device's fingerprint, compared out of band.
/// The statements are RemoteStore+Devices'.
extension RemoteAdmin {
    /// One device as `keychain devices` lists it.
    public struct Device: Sendable, Equatable {
        public let id: Int64
        public let name: String
        /// approved or revoked as the signed membership says; pending for a
        /// device it doesn't name yet.
        public let state: String
        /// The access groups it holds a current key for, by the signed membership.
        public let groups: [String]
        /// Whether it is this machine.
        public let isThisMachine: Bool
        /// `3f9a-0c12-77e0-a41b-9c03`: of the keys the signed membership
        /// holds for an approved or revoked device (so the ones its approver
        /// checked), of the keys in the server's table for a pending one.
        public let fingerprint: String
        /// The same as ten words.
        public let fingerprintWords: String
    }

    /// What `enroll` tells the user: this device's id and fingerprint (to
    /// read to an admin), and who signed the membership it now trusts.
    public struct Enrolment: Sendable, Equatable {
        public let id: Int64
        public let fingerprint: String
        public let fingerprintWords: String
        public let signer: Int64
        public let signerFingerprint: String
    }

    /// Asks to join: new X25519 and Ed25519 key pairs, the public keys in
    /// the database as a pending device named `name`, the secret keys in this
    /// machine's device state. The membership verified now is the one this
    /// device trusts from here on (its signer's fingerprint is shown to compare).
    @discardableResult
    public func enroll(name: String) throws -> Enrolment {
        if let device = store.device { throw KeychainError(.duplicateItem, "this machine is already device \(device.id)") }
        let keys = try DeviceIdentity.generate(id: 0)
        let id = try store.transaction { _ in try store.enrollDevice(keys, name: name) }
        let device = try keys.with(id: id)
        try device.save(keychainID: grant.keychainID, environment: grant.environment)
        store.device = device
        guard let roster = store.verifiedRoster else { throw KeychainError(.io, "the membership was not read") }
        store.trust = RemoteTrust(roster: roster, state: store.verifiedState)
        try store.trust.save(keychainID: grant.keychainID, device: device, environment: grant.environment)
        let signer = roster.roster.device(roster.roster.signer).map(roster.roster.fingerprint)
        let mine = device.fingerprint(keychainID: grant.keychainID)
        return Enrolment(id: id, fingerprint: mine.hex, fingerprintWords: mine.words, signer: roster.roster.signer,
                         signerFingerprint: signer?.hex ?? "")
    }

    /// Every device, in enrolment order.
    public func devices() throws -> [Device] {
        try store.transaction { _ in
            let roster = store.verifiedRoster?.roster
            return try store.listedDevices().map { listed in
                let signed = roster?.device(listed.id)
                let fingerprint = signed.map { roster!.fingerprint($0) }
                    ?? DeviceFingerprint(keychainID: grant.keychainID, encryptionKey: listed.encryptionKey, signingKey: listed.signingKey)
                let state = signed.map { $0.revokedAt == 0 ? "approved" : "revoked" } ?? "pending"
                let groups = roster?.groups.filter { $0.members.contains(listed.id) && signed?.revokedAt == 0 }.map(\.name) ?? []
                return Device(id: listed.id, name: listed.name, state: state, groups: groups, isThisMachine: listed.id == store.device?.id,
                              fingerprint: fingerprint.hex, fingerprintWords: fingerprint.words)
            }
        }
    }

    /// Grants device `id` the current keys of `groups`, each wrapped to its
    /// public key by this device, which must hold them and be approved; the
    /// device's keys must have `fingerprint` (either form, as `enroll`
    /// printed it on that device), or nothing is granted: a key the server
    /// swapped in is never approved. The next membership epoch names the
    /// device and its keys. All or nothing.
    public func approve(device id: Int64, groups: [String], fingerprint: String) throws {
        try grant.requireOwner("approving a device")
        guard !groups.isEmpty else { throw KeychainError(.param, "name the access groups to approve the device for") }
        guard let expected = DeviceFingerprint.parse(fingerprint) else {
            throw KeychainError(.param, "'\(Printable.clip(fingerprint))' is not a device fingerprint (5 groups of 4 hex digits, or 10 words)")
        }
        try store.transaction { _ in
            guard let target = try store.lockedDevice(id) else { throw KeychainError(.itemNotFound, "no device \(id)") }
            let found = DeviceFingerprint(keychainID: grant.keychainID, encryptionKey: target.encryptionKey, signingKey: target.signingKey)
            guard found == expected else {
                throw KeychainError(.authFailed, """
                    device \(id)'s keys have fingerprint \(found.hex), not \(expected.hex): not approved. \
                    Compare again with what 'keychain enroll' printed on that device; if they differ, its key was replaced
                    """)
            }
            var keys: [String: SecureBytes] = [:]
            for group in groups { keys[group] = try store.groupKey(group) }
            // groupKey may have made a group: the membership to extend is the newest.
            guard var next = store.verifiedRoster?.roster else { throw KeychainError(.io, "the membership was not read") }
            if let known = next.device(id) {
                guard known.revokedAt == 0 else { throw KeychainError(.param, "device \(id) was revoked; it enrolls again as a new device") }
            } else {
                next.devices.append(Roster.Device(id: id, encryptionKey: target.encryptionKey, signingKey: target.signingKey, revokedAt: 0))
            }
            for (index, group) in next.groups.enumerated() {
                guard let key = keys[group.name] else { continue }
                if !group.members.contains(id) { next.groups[index].members.append(id) }
                try store.storeWrappedKey(group: group.name, generation: group.generation, device: id,
                                          wrapped: DeviceIdentity.seal(key, to: target.encryptionKey))
            }
            try store.publish(next)
            try store.markApproved(id)
        }
    }

    /// Revokes device `id`: in one transaction, the next membership epoch
    /// marks it revoked, each group it held gets a new key generation
    /// wrapped to the remaining members' keys as the signed membership holds
    /// them (never the server's table), every item of the group is re-sealed
    /// under it, and the older wraps are dropped, so nothing written after
    /// this is readable with what the device kept. This device must be
    /// approved, hold those groups and have their items' classes unlocked.
    /// A membership that approves `id` again after this device saw it
    /// revoked (a failover lost the revocation) is refused by every other
    /// command, not by this one, which repairs it.
    public func revoke(device id: Int64) throws {
        try rekey(revoking: id, groups: [])
    }

    /// The next membership epoch: device `revoking` (if any) revoked, and
    /// each group it held and each of `groups` given a new key, its items
    /// re-sealed (`keychain recover` gives new keys to the groups a device
    /// revoked in a lost history still holds the key of). Returns the epoch.
    @discardableResult
    func rekey(revoking id: Int64?, groups named: Set<String>) throws -> Int64 {
        try grant.requireOwner("revoking a device")
        store.rekeying = true
        defer { store.rekeying = false }
        // A server that puts back the keys from before the revocation puts back an older header too: it moves on with them.
        return try grant.writeAdvancingHeader {
            let (me, current) = try store.approvedDevice("revoking a device")
            var next = current.roster
            if let id {
                guard let target = current.roster.device(id), target.revokedAt == 0 else {
                    throw KeychainError(.itemNotFound, "no approved device \(id)")
                }
                guard id != me.id else { throw KeychainError(.param, "a device can't revoke itself: revoke it from another approved device") }
                next.devices = next.devices.map { device in
                    var device = device
                    if device.id == id { device.revokedAt = current.roster.epoch + 1 }
                    return device
                }
            }
            // Every item of the groups it held, opened under the current keys before they change.
            var opened: [OpenedItem] = []
            var newKeys: [String: SecureBytes] = [:]
            for (index, group) in next.groups.enumerated() where id.map(group.members.contains) == true || named.contains(group.name) {
                opened += try open(group: group.name)
                let key = try SecureBytes(copying: Sodium.random(32))
                newKeys[group.name] = key
                next.groups[index].generation += 1
                next.groups[index].members.removeAll { $0 == id }
                next.groups[index].keyCheck = Roster.keyCheck(keychainID: grant.keychainID, group: group.name,
                                                              generation: next.groups[index].generation, key: key)
            }
            // Nothing to give a new key to (the groups are gone, or moved on since): no new epoch.
            guard id != nil || !newKeys.isEmpty else { return current.roster.epoch }
            if let id { try store.markRevoked(id) }
            try store.publish(next)
            for group in next.groups {
                guard let key = newKeys[group.name] else { continue }
                try store.replaceGroupKey(group, with: key, members: next)
            }
            store.forgetGroupKeys()
            for item in opened { try reseal(item) }
            return store.verifiedRoster?.roster.epoch ?? 0
        }
    }

    /// An item of a group being given a new key, opened under the key it has now.
    private struct OpenedItem {
        let id: Int64
        let identity: Sealing.RowIdentity
        let attributes: SecureBytes
        let data: SecureBytes
    }

    /// Every item of `group`, opened (unpadded and unsealed) under the keys this device holds now.
    private func open(group: String) throws -> [OpenedItem] {
        try store.lockedItems(of: group).map { row in
            guard let itemClass = row.itemClass, let pclass = ProtectionClass(rawValue: row.protectionClassCode) else {
                throw KeychainError(.decode, "an item of the group could not be read for re-sealing")
            }
            let identity = Sealing.RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: group, ref: row.ref)
            let attributes = try row.withAttributes {
                try SecretBox.open($0, key: try grant.fieldKey(identity, .attributes), what: "an item's attributes")
            }
            let data = try row.withData { try SecretBox.open($0, key: try grant.fieldKey(identity, .data), what: "an item's secret") }
            return OpenedItem(id: row.id, identity: identity, attributes: attributes, data: data)
        }
    }

    /// One item sealed again under its group's new key, its version hash with it.
    private func reseal(_ item: OpenedItem) throws {
        try store.resealItem(id: item.id, ref: item.identity.ref, group: item.identity.accessGroup,
                             attributes: SecretBox.seal(item.attributes, key: try grant.fieldKey(item.identity, .attributes)),
                             data: SecretBox.seal(item.data, key: try grant.fieldKey(item.identity, .data)))
    }
}
