import LocketCore
import LocketSupport

/// A remote keychain's connection, the transaction the engine is in, and
/// its header: the meta rows (format, identity, password-hash parameters)
/// and the keybag, stored in `locket.meta` as `keybag.NAME` rows, each class
/// key wrapped by the password's KEK exactly as a file wraps it. There are
/// no device-wrapped rows: every machine shares one database, so a key that
/// opens without the password would open for whoever reads the database.
final class RemoteStore {
    private let link: RemoteConnection?
    let location: RemoteLocation
    /// The snapshot this command reads instead of the server, which it could
    /// not reach (`--max-stale`, docs/REMOTE.md "The offline cache"); nil online.
    let offline: RemoteCache?
    private var current: RemoteConnection.Transaction?
    /// This machine's device in the keychain, nil before it enrolls.
    var device: DeviceIdentity?
    /// The keychain's identity and the environment: the local files of an offline read, the time of an audited read.
    var keychainID: [UInt8]?
    var environment = Environment([:])
    /// The group keys this device holds, read once per transaction (a
    /// revocation elsewhere replaces them).
    private var groupKeys: [String: SecureBytes]?
    /// What this device verified before (`RemoteTrust`), and whether this
    /// transaction moved it on (saved once the transaction committed).
    var trust = RemoteTrust()
    var working = RemoteTrust()
    /// Verified at the start of each online transaction (RemoteStore+Trust):
    /// the newest membership, the newest state and the item tree under its
    /// root (the nodes proven so far, the leaves changed, what each change
    /// found before); and whether the transaction changed an item or the membership.
    var verifiedRoster: SignedRoster?
    var verifiedState: SignedState?
    var itemTree: ItemTree?
    var expectations: [Int64: Expectation] = [:]
    var changedItems = false
    /// A keychain of schema 2, whose signed root is over every item, not yet
    /// upgraded to the tree (RemoteStore+Upgrade); and whether this
    /// transaction upgraded it (so once it commits, it is not).
    var linearRoot = false
    var upgradedTree = false
    /// This device's latest audit entry, once this transaction has read or appended it.
    var auditHead: RemoteTrust.AuditHead?
    /// This device's own newest audit entry as it last kept it (`OwnAuditRecord`),
    /// whether this command checked it against the server yet, and what
    /// this transaction appended (kept once it commits).
    var ownAudit = OwnAuditRecord()
    var ownAuditChecked = false
    var appendedAudit: [SignedAuditEntry] = []
    /// The items this transaction added, changed or deleted, for the journal.
    var writtenRefs: [[UInt8]] = []
    /// `keychain recover` (RemoteStore+Recovery): the server's history is
    /// verified as a new device verifies it and compared with what this
    /// device kept, instead of refused; nothing is kept until `applying`.
    var recovering = false
    var applyingRecovery = false
    var recovery: RecoveryFindings?
    /// Why this device's trust record could not be read, when recovering starts without it.
    var trustDamage: String?
    /// A revocation or a group's new key under way: a membership that lets a
    /// revoked device back in is what it repairs, so it is not refused.
    var rekeying = false
    /// The padding keys of the groups this transaction has opened.
    var paddingKeys: [String: SecureBytes] = [:]

    /// The prefix of a keybag row's name in `locket.meta`.
    static let keybagPrefix = "keybag."
    /// The classes a remote keychain has keys for: no ThisDeviceOnly one.
    static let keyNames = ProtectionClass.allCases.filter { !$0.thisDeviceOnly }.map(\.rawValue) + [Keybag.indexKeyName]

    /// Starts the helper and connects; errSecNotAvailable when the server can't be reached.
    init(_ location: RemoteLocation, password: [UInt8]?, environment: Environment) throws {
        guard let helper = location.helper ?? CompanionExecutable.find("locket-postgres") else {
            throw KeychainError(.notAvailable, "locket-postgres is not installed next to locket: remote keychains need it (make install)")
        }
        link = try RemoteConnection(helper: helper, parameters: location.parameters, password: password, environment: environment)
        self.location = location
        self.environment = environment
        offline = nil
    }

    /// A store that answers reads from `snapshot` and refuses the rest.
    init(_ location: RemoteLocation, offline snapshot: RemoteCache) {
        link = nil
        self.location = location
        offline = snapshot
    }

    /// The connection; offline, errSecNotAvailable: whatever needs the server
    /// (every write, the audit list, devices) is refused.
    var connection: RemoteConnection {
        get throws {
            guard let link else { throw KeychainError(.notAvailable, "\(location.url) is unreachable: this needs the server (offline, only reads of after-first-unlock items come from the local cache)") }
            return link
        }
    }

    var items: RemoteItemStore { RemoteItemStore(store: self) }

    /// Runs `body` in one serializable transaction, run again on a
    /// serialization failure (so `body` must have no effect outside the
    /// database). Nested calls join the transaction already open.
    /// Never inlined: a file keychain's read path must not carry this one's generic code.
    @inline(never)
    func transaction<T>(_ body: (RemoteConnection.Transaction) throws -> T) throws -> T {
        if let current { return try body(current) }
        let result = try connection.transaction(isolation: .serializable) { transaction in
            current = transaction
            groupKeys = nil
            paddingKeys = [:]
            auditHead = nil
            appendedAudit = []
            writtenRefs = []
            defer { current = nil; groupKeys = nil; paddingKeys = [:]; auditHead = nil }
            try verifyOnBegin()
            let result = try body(transaction)
            if changedItems { try advanceState() }
            return result
        }
        if upgradedTree { linearRoot = false }
        try saveTrust()
        saveOwnAudit()
        return result
    }

    /// One statement inside the open transaction.
    @discardableResult
    func execute(_ sql: String, _ parameters: [RemoteValue]) throws -> [RemoteRow] {
        guard let current else { return try connection.execute(sql, parameters) }
        return try current.execute(sql, parameters)
    }

    /// Every meta row, keybag rows included, read in `transaction`.
    func readMeta(_ transaction: RemoteConnection.Transaction) throws -> [String: [UInt8]] {
        var meta: [String: [UInt8]] = [:]
        for row in try transaction.execute("SELECT name, value FROM locket.meta", []) {
            if let name = row[0].text, let value = row[1].bytes { meta[name] = value }
        }
        return meta
    }

    /// Writes meta rows (insert or replace).
    func writeMeta(_ values: [(String, [UInt8])]) throws {
        for (name, value) in values {
            try execute("""
                INSERT INTO locket.meta(name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value
                """, [.text(name), .bytes(value)])
        }
    }
}

extension RemoteStore {
    /// The key of access group `group` this device holds, read in the open
    /// transaction. A group nobody has made yet is made here, its first key
    /// wrapped to this device. A group that exists without a key for this
    /// device is refused: a device opens only the groups it was granted, by
    /// the keys it can unwrap, not by a WHERE clause.
    func groupKey(_ group: String) throws -> SecureBytes {
        guard let device else {
            throw KeychainError(.interactionNotAllowed, "this machine is not enrolled in \(location.url)", reason: .notEnrolled)
        }
        if let key = try heldGroupKeys(device)[group] { return key }
        if offline == nil, let roster = verifiedRoster, roster.roster.group(group) == nil, let keychainID {
            // A group the signed membership doesn't have yet: made here, by an
            // approved device, in the next epoch. A row someone put in the
            // server's table first is overwritten: the membership decides.
            let (device, _) = try approvedDevice("making an access group")
            let key = try SecureBytes(copying: Sodium.random(32))
            var next = roster.roster
            next.groups.append(Roster.Group(name: group, generation: 1,
                                            keyCheck: Roster.keyCheck(keychainID: keychainID, group: group, generation: 1, key: key),
                                            members: [device.id]))
            try publish(next)
            try execute("DELETE FROM locket.group_keys WHERE agrp = $1", [.text(group)])
            try execute("INSERT INTO locket.groups(agrp, generation) VALUES ($1, 1) ON CONFLICT (agrp) DO UPDATE SET generation = 1", [.text(group)])
            try storeWrappedKey(group: group, generation: 1, device: device.id, wrapped: DeviceIdentity.seal(key, to: device.publicKey))
            groupKeys?[group] = key
            return key
        }
        throw KeychainError(.interactionNotAllowed, "this device was not approved for the access group '\(Printable.clip(group))'",
                            reason: .notApproved(group: group))
    }

    func storeWrappedKey(group: String, generation: Int64, device: Int64, wrapped: [UInt8]) throws {
        try execute("INSERT INTO locket.group_keys(agrp, generation, device, wrapped) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    [.text(group), .int(generation), .int(device), .bytes(wrapped)])
    }

    /// The group keys this device holds, read once per transaction, each
    /// checked against the verified membership: the generation it names
    /// and the key's check. A wrap of another generation or key (an older
    /// one put back, one copied from another row) is refused, not used.
    private func heldGroupKeys(_ device: DeviceIdentity) throws -> [String: SecureBytes] {
        if let groupKeys { return groupKeys }
        var keys: [String: SecureBytes] = [:]
        if let offline {
            for (group, wrapped) in offline.wrappedKeys { keys[group] = try device.open(wrapped) }
            groupKeys = keys
            return keys
        }
        let roster = verifiedRoster?.roster
        for row in try execute("SELECT agrp, generation, wrapped FROM locket.group_keys WHERE device = $1 ORDER BY agrp, generation", [.int(device.id)]) {
            guard let name = row[0].text, let generation = row[1].int, let wrapped = row[2].bytes else { continue }
            guard let roster else {
                keys[name] = try device.open(wrapped)
                continue
            }
            // Wraps the membership does not grant this device are no key of its.
            guard let granted = roster.group(name), granted.members.contains(device.id), roster.isApproved(device.id) else { continue }
            if generation < granted.generation { continue }
            guard generation == granted.generation else {
                throw KeychainError(.decode, "the key of access group '\(Printable.clip(name))' is offered at generation \(generation), beyond the signed membership's \(granted.generation): the database was altered")
            }
            let key = try device.open(wrapped)
            guard Roster.keyCheck(keychainID: roster.keychainID, group: name, generation: generation, key: key) == granted.keyCheck else {
                throw KeychainError(.decode, "the key of access group '\(Printable.clip(name))' is not the one its signed membership names: the database was altered")
            }
            keys[name] = key
        }
        if let roster, roster.isApproved(device.id) {
            for group in roster.groups where group.members.contains(device.id) && keys[group.name] == nil {
                throw KeychainError(.decode, "this device's key of access group '\(Printable.clip(group.name))' at generation \(group.generation) is missing (an older one put back, or removed): the database was altered")
            }
        }
        groupKeys = keys
        return keys
    }

    /// The key that pads and seals again `group`'s values, nil when this device doesn't hold the group.
    func paddingKey(_ group: String) throws -> SecureBytes? {
        if let key = paddingKeys[group] { return key }
        guard let device, let groupKey = try heldGroupKeys(device)[group] else { return nil }
        let key = try RemotePadding.key(groupKey: groupKey)
        paddingKeys[group] = key
        return key
    }

    /// Whether this device holds the key of `group`: what a listing
    /// (`dump`, the ssh-agent's keys) shows of a group it was not approved
    /// for is nothing, as a caller's listing leaves out groups outside its
    /// entitlements. errSecInteractionNotAllowed before the machine enrolls.
    func holdsKey(_ group: String) throws -> Bool {
        guard let device else {
            throw KeychainError(.interactionNotAllowed, "this machine is not enrolled in \(location.url)", reason: .notEnrolled)
        }
        return try heldGroupKeys(device)[group] != nil
    }

    /// Forgets the group keys read in this transaction (after a rotation).
    func forgetGroupKeys() {
        groupKeys = nil
        paddingKeys = [:]
    }

    /// Appends (this device, `ref`, `operation`) to the audit, in the open
    /// transaction: a secret is read only if its reading is recorded.
    func audit(_ refs: [[UInt8]], _ operation: String) throws {
        guard device != nil else {
            throw KeychainError(.interactionNotAllowed, "this machine is not enrolled in \(location.url)", reason: .notEnrolled)
        }
        if offline != nil, let keychainID {
            // Kept locally and appended on the next contact (Keychain.contactServer).
            return try RemoteCache.appendPendingAudit(refs, keychainID: keychainID, environment: environment)
        }
        let now = environment.time.milliseconds() * 1000
        for ref in refs { try appendAudit(ref, operation, at: now) }
    }
}

extension Keybag {
    /// The keybag rows of a remote keychain's meta (KEK-wrapped only).
    static func remoteRows(_ meta: [String: [UInt8]]) -> [String: KeybagRow] {
        var rows: [String: KeybagRow] = [:]
        for (name, value) in meta where name.hasPrefix(RemoteStore.keybagPrefix) {
            rows[String(name.dropFirst(RemoteStore.keybagPrefix.count))] = KeybagRow(kek: value)
        }
        return rows
    }

    /// This keybag as meta rows of a remote keychain.
    var remoteMeta: [(String, [UInt8])] {
        rows.compactMap { name, row in row.kek.map { (RemoteStore.keybagPrefix + name, $0) } }
    }
}
