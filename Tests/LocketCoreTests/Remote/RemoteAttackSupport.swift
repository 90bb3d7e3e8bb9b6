@testable import LocketCore
@testable import LocketRemote
import XCTest

/// What the operator-attack tests share (issue 28, `RemoteOperatorAttackTests`):
/// the operator's SQL (as the server's superuser), and a revoked device's
/// view of the database with everything it kept: its device key, the group
/// keys it unwrapped while it was approved, and its machine's class keys
/// (it knows the keychain password). `readable` is what such a device,
/// working with the operator, can open of what the database holds now.
struct KeptDevice {
    let identity: DeviceIdentity
    /// The machine's keychain as it was opened while approved (its session's class keys are in memory).
    let keychain: Keychain
    var groupKeys: [SecureBytes]

    /// Everything `machine` holds now, with every wrap its device key opens in the database.
    static func keep(_ machine: TemporaryKeychain, _ connection: RemoteConnection) throws -> KeptDevice {
        let keychain = try machine.open()
        let identity = try XCTUnwrap(try DeviceIdentity.load(keychainID: keychain.engine.keybag.keychainID, environment: machine.environment))
        var kept = KeptDevice(identity: identity, keychain: keychain, groupKeys: [])
        try kept.collect(connection)
        return kept
    }

    /// Adds every group key sealed to this device in the database now.
    mutating func collect(_ connection: RemoteConnection) throws {
        for row in try connection.execute("SELECT wrapped FROM locket.group_keys") {
            if let key = try? identity.open(row[0].bytes ?? []) { groupKeys.append(key) }
        }
    }

    /// The markers among `markers` found in any item of the database that a
    /// key this device kept, or a wrap to it in the database now, opens.
    func readable(_ connection: RemoteConnection, markers: [String]) throws -> Set<String> {
        var kept = self
        try kept.collect(connection)
        var found: Set<String> = []
        for row in try connection.execute("SELECT ref, cls, pdmn, agrp, data FROM locket.items") {
            guard let ref = row[0].bytes, let itemClass = row[1].text.flatMap(ItemClass.init(rawValue:)),
                  let pclass = row[2].text.flatMap(ProtectionClass.init(rawValue:)), let group = row[3].text, let data = row[4].bytes else { continue }
            let identity = Sealing.RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: group, ref: ref)
            let classGroupKey = try keychain.engine.cache.groupKey(pclass, group)
            for key in kept.groupKeys {
                let mixed = try classGroupKey.withUnsafeBytes { try KeyDerivation.derive(key, KeyDerivation.Context("locket.remote.group.v1").with($0)) }
                let fieldKey = try Sealing.fieldKey(mixed, identity, .data)
                var candidates = [data]
                if let inner = try? RemotePadding.open(data, key: RemotePadding.key(groupKey: key)) { candidates.append(inner) }
                for candidate in candidates {
                    guard let opened = try? SecretBox.open(candidate, key: fieldKey, what: "attack") else { continue }
                    let bytes = opened.withUnsafeBytes { Array($0) }
                    for marker in markers where contains(bytes, Array(marker.utf8)) { found.insert(marker) }
                }
            }
        }
        return found
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}

/// The operator's hand on the database.
enum Operator {
    /// Every table of the schema, copied aside (a dump the operator keeps).
    static func snapshot(_ connection: RemoteConnection, as name: String) throws {
        try connection.execute("CREATE SCHEMA \(name)")
        for table in try tables(connection) {
            try connection.execute("CREATE TABLE \(name).\(table) AS SELECT * FROM locket.\(table)")
        }
    }

    /// The snapshot put back over every table, triggers and foreign keys
    /// off (`session_replication_role = replica`, a superuser's setting).
    static func restore(_ connection: RemoteConnection, from name: String) throws {
        try connection.transaction { transaction in
            try transaction.execute("SET LOCAL session_replication_role = replica")
            for table in try tables(connection, transaction) {
                try transaction.execute("DELETE FROM locket.\(table)")
                try transaction.execute("INSERT INTO locket.\(table) OVERRIDING SYSTEM VALUE SELECT * FROM \(name).\(table)")
            }
        }
    }

    /// The pending device `id` listed with the revoked device's keys (its own row given others first: keys are UNIQUE).
    static func giveKeys(of kept: KeptDevice, revoked: Int64, to id: Int64, _ sql: RemoteConnection) throws {
        try sql.execute("UPDATE locket.devices SET public_key = $2, signing_key = $3 WHERE id = $1",
                        [.int(revoked), .bytes(Array(repeating: 7, count: 32)), .bytes(Array(repeating: 8, count: 32))])
        try sql.execute("UPDATE locket.devices SET public_key = $2, signing_key = $3 WHERE id = $1",
                        [.int(id), .bytes(kept.identity.publicKey), .bytes(kept.identity.signingKey)])
    }

    static func tables(_ connection: RemoteConnection, _ transaction: RemoteConnection.Transaction? = nil) throws -> [String] {
        let sql = "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'locket' ORDER BY table_name"
        let rows = try transaction.map { try $0.execute(sql) } ?? connection.execute(sql)
        return rows.compactMap { $0[0].text }
    }
}

extension RemoteMachines {
    /// An approval as the admin makes it, with the fingerprint the device's enrolment printed.
    func approveAsEnrolled(_ admin: TemporaryKeychain, _ id: Int64, groups: [String]) throws {
        try approve(admin, id, groups: groups)
    }
}

/// `keychain verify`, through the engine.
enum Views {
    static func view(_ keychain: Keychain) throws -> String { try keychain.remote!.view() }
    static func verify(_ keychain: Keychain, against view: String) throws { _ = try keychain.remote!.verify(against: view) }
}
