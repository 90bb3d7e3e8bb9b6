@testable import LocketCore
@testable import LocketRemote
import XCTest

/// Issue 28: the remote keychain attacked as its operator would (SQL as the
/// server's superuser, `session_replication_role = replica` where triggers
/// would stop it) together with a revoked device that kept its state and
/// knows the keychain password. Each test is one attack of the issue; each
/// failed on main (eaf6ff3) before the signed membership, state and audit.
final class RemoteOperatorAttackTests: PostgresTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    private func read(_ machine: TemporaryKeychain, _ account: String) throws -> String? {
        try machine.open().search(query(.genericPassword, [.account: account]), returnData: true).first?.secretString
    }

    /// An admin, a device approved for g1 then revoked (its state kept), and the operator's connection.
    private func revokedDevice() throws -> (admin: TemporaryKeychain, location: RemoteLocation, kept: KeptDevice, revoked: Int64,
                                           sql: RemoteConnection) {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one", group: "g1"), data: secret("before-revoke"))
        let (revoked, id) = try machines.enrolled(location, name: "revoked", approvedBy: admin, groups: ["g1"])
        XCTAssertEqual(try read(revoked, "one"), "before-revoke")
        let sql = try running().connect(database: database)
        let kept = try KeptDevice.keep(revoked, sql)
        // The check reads what such a device can: while approved, the item.
        XCTAssertEqual(try kept.readable(sql, markers: ["before-revoke"]), ["before-revoke"])
        try admin.open().remote!.revoke(device: id)
        return (admin, location, kept, id, sql)
    }

    // MARK: 1. Public-key substitution at approve

    func testAKeySwappedInBeforeApproveIsRefusedByItsFingerprint() throws {
        let (admin, location, kept, revoked, sql) = try revokedDevice()
        let (newcomer, id) = try machines.enrolled(location, name: "newcomer")
        // The operator gives the pending device the revoked device's keys.
        try Operator.giveKeys(of: kept, revoked: revoked, to: id, sql)
        // The admin approves with the fingerprint the newcomer printed: refused.
        XCTAssertThrowsError(try machines.approveAsEnrolled(admin, id, groups: ["g1"])) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .authFailed, "\(error)")
        }
        try admin.open().add(genp("s", "two", group: "g1"), data: secret("after-approve"))
        XCTAssertEqual(try kept.readable(sql, markers: ["before-revoke", "after-approve"]), [], "the revoked device reads nothing")
        XCTAssertThrowsError(try read(newcomer, "two"))
    }

    // MARK: 2. Public-key substitution at revoke

    func testAKeySwappedInBeforeRevokeGetsNoNewGroupKey() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one", group: "g1"), data: secret("before-revoke"))
        let (member, memberID) = try machines.enrolled(location, name: "member", approvedBy: admin, groups: ["g1"])
        let (revoked, revokedID) = try machines.enrolled(location, name: "revoked", approvedBy: admin, groups: ["g1"])
        let sql = try running().connect(database: database)
        let kept = try KeptDevice.keep(revoked, sql)
        // The operator lists the revoked device's key as the remaining member's.
        try sql.execute("UPDATE locket.devices SET public_key = $2 WHERE id = $1", [.int(revokedID), .bytes(Array(repeating: 9, count: 32))])
        try sql.execute("UPDATE locket.devices SET public_key = $2 WHERE id = $1", [.int(memberID), .bytes(kept.identity.publicKey)])
        try admin.open().remote!.revoke(device: revokedID)
        try admin.open().add(genp("s", "two", group: "g1"), data: secret("after-revoke"))
        XCTAssertEqual(try kept.readable(sql, markers: ["after-revoke"]), [], "nothing written after the revocation opens for the revoked device")
        XCTAssertEqual(try read(member, "two"), "after-revoke", "the member's own key got the new generation")
    }

    // MARK: 3. Group generation put back

    func testAGroupGenerationPutBackIsRefusedBeforeAnythingIsSealed() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one", group: "g1"), data: secret("before-revoke"))
        let (member, _) = try machines.enrolled(location, name: "member", approvedBy: admin, groups: ["g1"])
        let (revoked, revokedID) = try machines.enrolled(location, name: "revoked", approvedBy: admin, groups: ["g1"])
        let sql = try running().connect(database: database)
        let kept = try KeptDevice.keep(revoked, sql)
        try sql.execute("CREATE TABLE public.old_keys AS SELECT * FROM locket.group_keys")
        try admin.open().remote!.revoke(device: revokedID)
        // The operator restores generation 1 and its wraps, and drops generation 2's.
        try sql.execute("DELETE FROM locket.group_keys")
        try sql.execute("UPDATE locket.groups SET generation = 1")
        try sql.execute("INSERT INTO locket.group_keys SELECT * FROM public.old_keys")
        XCTAssertThrowsError(try member.open().add(genp("s", "two", group: "g1"), data: secret("after-rollback"))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)")
        }
        XCTAssertEqual(try kept.readable(sql, markers: ["after-rollback"]), [])
    }

    // MARK: 4. Whole-database rollback, seen by a device that missed the revoke

    func testAWholeDatabaseRollbackIsCaughtWhenTwoDevicesCompare() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one", group: "g1"), data: secret("before-revoke"))
        let (stale, _) = try machines.enrolled(location, name: "stale", approvedBy: admin, groups: ["g1"])
        let (revoked, revokedID) = try machines.enrolled(location, name: "revoked", approvedBy: admin, groups: ["g1"])
        XCTAssertEqual(try read(stale, "one"), "before-revoke")
        let sql = try running().connect(database: database)
        _ = try KeptDevice.keep(revoked, sql)
        try Operator.snapshot(sql, as: "before_revoke")
        try admin.open().remote!.revoke(device: revokedID)
        let adminView = try Views.view(try admin.open())
        try Operator.restore(sql, from: "before_revoke")
        // The admin, who saw the revocation, is refused the older database.
        XCTAssertThrowsError(try read(admin, "one")) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, "\($0)") }
        // The stale device never saw anything newer: alone it can't tell
        // (docs/REMOTE.md "Freshness"). Compared with the admin's view, it can.
        XCTAssertEqual(try read(stale, "one"), "before-revoke")
        XCTAssertThrowsError(try Views.verify(try stale.open(), against: adminView)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)")
            XCTAssertTrue("\(error)".contains("rolled back"), "\(error)")
        }
    }

    // MARK: 5. Old row versions and deleted items replayed

    func testAnOlderVersionOfAnItemPutBackIsRefused() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one"), data: secret("version-1"))
        let (other, _) = try machines.enrolled(location, name: "other", approvedBy: admin)
        let sql = try running().connect(database: database)
        try sql.execute("CREATE TABLE public.old_items AS SELECT * FROM locket.items")
        try admin.open().update(query(.genericPassword, [.account: "one"]), changes: [:], data: secret("version-2"))
        XCTAssertEqual(try read(other, "one"), "version-2")
        try sql.execute("UPDATE locket.items i SET attrs = o.attrs, data = o.data FROM public.old_items o WHERE o.ref = i.ref")
        for machine in [admin, other] {
            XCTAssertThrowsError(try read(machine, "one")) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, "\($0)") }
        }
        // The version hashes put back too: the root of the signed state no longer matches.
        try sql.execute("UPDATE locket.items i SET vh = o.vh, dh = o.dh FROM public.old_items o WHERE o.ref = i.ref")
        XCTAssertThrowsError(try read(other, "one")) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, "\($0)") }
    }

    func testADeletedItemPutBackIsRefused() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "gone"), data: secret("deleted-secret"))
        let (other, _) = try machines.enrolled(location, name: "other", approvedBy: admin)
        let sql = try running().connect(database: database)
        try admin.open().add(genp("s", "stays"), data: secret("kept"))
        try sql.execute("CREATE TABLE public.old_items AS SELECT * FROM locket.items WHERE id = (SELECT min(id) FROM locket.items)")
        try sql.execute("CREATE TABLE public.old_blind AS SELECT b.* FROM locket.blind b JOIN public.old_items i ON i.id = b.item")
        XCTAssertEqual(try admin.open().delete(query(.genericPassword, [.account: "gone"])), 1)
        XCTAssertEqual(try read(other, "stays"), "kept", "the other device sees the state after the delete")
        try sql.execute("INSERT INTO locket.items OVERRIDING SYSTEM VALUE SELECT * FROM public.old_items")
        try sql.execute("INSERT INTO locket.blind SELECT * FROM public.old_blind")
        for machine in [admin, other] {
            XCTAssertThrowsError(try read(machine, "gone")) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, "\($0)") }
        }
        // The whole state chain put back with it: a rollback for both devices, which saw the delete.
        try sql.execute("DELETE FROM locket.states WHERE seq = (SELECT max(seq) FROM locket.states)")
        for machine in [admin, other] {
            XCTAssertThrowsError(try read(machine, "gone")) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, "\($0)") }
        }
    }

    // MARK: 6. Audit rewritten

    func testAnAuditRewrittenByTheOwnerIsReportedAtItsFirstBrokenLink() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one"), data: secret("x"))
        let (other, otherID) = try machines.enrolled(location, name: "other", approvedBy: admin)
        for _ in 0..<3 { _ = try read(other, "one") }
        _ = try read(admin, "one")
        XCTAssertEqual(try admin.open().remote!.audit(since: 0).count, 4)
        let sql = try running().connect(database: database)
        // Re-attributed: the other device's last read made the admin's (as the owner, triggers off).
        let row = try XCTUnwrap(sql.execute("SELECT id FROM locket.audit WHERE device = $1 AND seq = 3", [.int(otherID)]).first?[0].int)
        func attribute(to device: Int64) throws {
            try sql.transaction { transaction in
                try transaction.execute("SET LOCAL session_replication_role = replica")
                try transaction.execute("UPDATE locket.audit SET device = $2, seq = 99 WHERE id = $1", [.int(row), .int(device)])
            }
        }
        try attribute(to: 1)
        XCTAssertThrowsError(try admin.open().remote!.audit(since: 0)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)")
            XCTAssertTrue("\(error)".contains("the audit is broken at device"), "\(error)")
        }
        try sql.transaction { transaction in
            try transaction.execute("SET LOCAL session_replication_role = replica")
            try transaction.execute("UPDATE locket.audit SET device = $2, seq = 3 WHERE id = $1", [.int(row), .int(otherID)])
        }
        // Deleted: the other device's middle read.
        try sql.transaction { transaction in
            try transaction.execute("SET LOCAL session_replication_role = replica")
            try transaction.execute("DELETE FROM locket.audit WHERE device = $1 AND seq = 2", [.int(otherID)])
        }
        XCTAssertThrowsError(try admin.open().remote!.audit(since: 0)) { error in
            XCTAssertTrue("\(error)".contains("device \(otherID)'s entry 3"), "\(error)")
        }
    }

    func testTheAuditsLatestEntriesDeletedAreNoticedByADeviceThatCheckedThem() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one"), data: secret("x"))
        let (other, otherID) = try machines.enrolled(location, name: "other", approvedBy: admin)
        for _ in 0..<2 { _ = try read(other, "one") }
        XCTAssertEqual(try admin.open().remote!.audit(since: 0).count, 2)
        let sql = try running().connect(database: database)
        try sql.execute("ALTER TABLE locket.audit DISABLE TRIGGER audit_no_update_delete")
        try sql.execute("DELETE FROM locket.audit WHERE device = $1 AND seq = 2", [.int(otherID)])
        XCTAssertThrowsError(try admin.open().remote!.audit(since: 0)) { error in
            XCTAssertTrue("\(error)".contains("are gone"), "\(error)")
        }
    }

    // MARK: 7. A pending device creates access groups

    func testAPendingDeviceCanNotMakeAGroupAndTheOwnersAddStillWorks() throws {
        let (admin, location, database) = try machines.created()
        let (pending, _) = try machines.enrolled(location, name: "pending")
        XCTAssertThrowsError(try pending.open().add(genp("s", "squat", group: "squatted"), data: secret("pending-secret"))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .interactionNotAllowed, "\(error)")
        }
        // The operator squats another name in the server's tables for the pending device.
        let sql = try running().connect(database: database)
        try sql.execute("INSERT INTO locket.groups(agrp, generation) VALUES ('taken', 1)")
        let pendingKey = try XCTUnwrap(try DeviceIdentity.load(keychainID: try pending.open().engine.keybag.keychainID, environment: pending.environment))
        try sql.execute("INSERT INTO locket.group_keys SELECT 'taken', 1, id, $2 FROM locket.devices WHERE name = $1",
                        [.text("pending"), .bytes(try DeviceIdentity.seal(try secret(String(repeating: "k", count: 32)), to: pendingKey.publicKey))])
        for group in ["squatted", "taken"] {
            try admin.open().add(genp("s", group, group: group), data: secret("owner-\(group)"))
            XCTAssertEqual(try read(admin, group), "owner-\(group)")
        }
        XCTAssertThrowsError(try read(pending, "taken"))
    }

    // MARK: 8. Lengths

    func testSealedLengthsAreHiddenWithinABucket() throws {
        let (admin, _, database) = try machines.created(kdf: .weakForTests)
        try admin.open().add(genp("s", "a"), data: secret("x"))
        try admin.open().add(genp("s", String(repeating: "b", count: 40)), data: secret(String(repeating: "y", count: 60)))
        let sql = try running().connect(database: database)
        let lengths = try sql.execute("SELECT octet_length(attrs), octet_length(data) FROM locket.items ORDER BY id")
        XCTAssertEqual(Set(lengths.map { $0[0].int }).count, 1, "names of 1 and 40 bytes: one bucket")
        XCTAssertEqual(Set(lengths.map { $0[1].int }).count, 1, "secrets of 1 and 60 bytes: one bucket")
        try admin.open().add(genp("s", "c"), data: secret(String(repeating: "z", count: 300)))
        XCTAssertEqual(try read(admin, "c"), String(repeating: "z", count: 300))
    }
}
