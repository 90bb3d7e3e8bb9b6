@testable import LocketCore
@testable import LocketRemote
import XCTest

/// Issue 42 items 2 and 3, issue 44 items 15 and 16, through the engine on
/// the run's shared server: the database put back as it was (the operator's
/// snapshot, as a restore or an asynchronous failover leaves it), a
/// revocation lost with it, and `Keychain.recover`; a device's audit chain
/// deleted whole or cut short.
final class RemoteRecoveryTests: PostgresTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    private func read(_ machine: TemporaryKeychain, _ account: String) throws -> String? {
        try machine.open().search(query(.genericPassword, [.account: account]), returnData: true).first?.secretString
    }

    private func recovering(_ machine: TemporaryKeychain) throws -> Keychain {
        try XCTUnwrap(try Keychain.openForRecovery(.remote(try XCTUnwrap(machine.remote)), environment: machine.environment))
    }

    private func reason(_ error: Error) -> KeychainError.Reason? { (error as? KeychainError)?.reason }

    /// Every device that saw a revocation keeps it through a restore of the
    /// database that lost it: refused until it is revoked again; recovery
    /// re-applies it where the device can (approved, holding its groups)
    /// and finishes only then where it can't; the revoked device reads
    /// nothing written after; what was lost is named.
    func testARevocationLostWithTheDatabaseIsKeptAndReappliedByRecovery() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one"), data: secret("before"))
        try admin.open().add(genp("s", "ops-one", group: "ops"), data: secret("ops-before"))
        let (member, _) = try machines.enrolled(location, name: "member", approvedBy: admin)
        let (operations, _) = try machines.enrolled(location, name: "ops", approvedBy: admin, groups: ["ops"])
        let (leaver, leaverID) = try machines.enrolled(location, name: "leaver", approvedBy: admin)
        let (latecomer, latecomerID) = try machines.enrolled(location, name: "latecomer")
        XCTAssertEqual(try read(leaver, "one"), "before")
        let sql = try running().connect(database: database)
        let kept = try KeptDevice.keep(leaver, sql)
        try Operator.snapshot(sql, as: "before_revoke")

        try admin.open().remote!.revoke(device: leaverID)
        try machines.approve(admin, latecomerID, groups: [Keychain.defaultAccessGroup])
        try admin.open().add(genp("s", "lost"), data: secret("written-then-lost"))
        XCTAssertEqual(try read(member, "lost"), "written-then-lost")
        XCTAssertEqual(try read(operations, "ops-one"), "ops-before")
        XCTAssertEqual(try read(latecomer, "one"), "before")
        try Operator.restore(sql, from: "before_revoke")

        // Every device that saw the revocation refuses the older history, naming the recovery.
        for machine in [admin, member, operations] {
            XCTAssertThrowsError(try read(machine, "one")) { error in
                XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)")
                XCTAssert([.remoteRolledBack, .rolledBack].contains(reason(error)), "\(error)")
            }
        }
        // The operations device can't revoke it (it holds no key of its group): it keeps refusing.
        var plan = try recovering(operations).remote!.recoveryPlan()
        XCTAssertEqual(plan.revocations.map(\.device), [leaverID], "\(plan)")
        let partial = try recovering(operations).remote!.recover(password: secret("correct horse"))
        guard case .failed? = partial.revocations.first?.outcome else { return XCTFail("\(partial.revocations)") }
        XCTAssertThrowsError(try read(operations, "ops-one")) { XCTAssertEqual(self.reason($0), .revocationLost(device: leaverID), "\($0)") }

        // The member can, and does.
        plan = try recovering(member).remote!.recoveryPlan()
        XCTAssertTrue(plan.isNeeded)
        XCTAssertTrue(plan.lostMembership.contains { $0.changes.contains("revoked device \(leaverID)") }, "\(plan.lostMembership)")
        XCTAssertTrue(plan.lostApprovals.contains(latecomerID), "\(plan.lostApprovals)")
        XCTAssertGreaterThan(plan.lostReadCount, 0, "the member's read of the lost item went with the database")
        XCTAssertNotNil(plan.header, "the revocation's header went back too")
        let done = try recovering(member).remote!.recover(password: secret("correct horse"))
        guard case .reapplied? = done.revocations.first?.outcome else { return XCTFail("\(done.revocations)") }
        XCTAssertEqual(try read(member, "one"), "before")
        XCTAssertEqual(try read(operations, "ops-one"), "ops-before", "revoked again elsewhere: the operations device goes on")

        // The admin's own lost write is named by reference; nothing left to re-apply.
        let adminPlan = try recovering(admin).remote!.recoveryPlan()
        XCTAssertTrue(adminPlan.lostStates.contains { $0.signer == adminPlan.device && !$0.items.isEmpty }, "\(adminPlan.lostStates)")
        XCTAssertEqual(adminPlan.revocations.count, 0)
        _ = try recovering(admin).remote!.recover(password: secret("correct horse"))
        try admin.open().add(genp("s", "after"), data: secret("after-recovery"))
        XCTAssertEqual(try read(admin, "after"), "after-recovery")
        XCTAssertEqual(try kept.readable(sql, markers: ["before", "after-recovery"]), [],
                       "everything re-sealed, nothing written after opens with what the revoked device kept")
        XCTAssertThrowsError(try read(leaver, "one"))
        XCTAssertThrowsError(try read(latecomer, "one"), "its approval went with the database")
        XCTAssertFalse(try recovering(member).remote!.recoveryPlan().isNeeded, "recovered: nothing more to do")
    }

    /// Issue 44 item 15: a device's audit chain deleted whole before anyone
    /// ran `keychain audit` is noticed by the device that signed it at its
    /// next contact (main: the chain started again at 1, unseen), and so is
    /// one cut short. Only the API main has, so it runs against main too.
    func testADeviceNoticesItsOwnAuditChainDeletedWholeOrCutShort() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one"), data: secret("v"))
        let (reader, readerID) = try machines.enrolled(location, name: "reader", approvedBy: admin)
        for _ in 0..<3 { XCTAssertEqual(try read(reader, "one"), "v") }
        let sql = try running().connect(database: database)
        try deleteAudit(of: readerID, from: 3, sql)
        XCTAssertThrowsError(try reader.open().search(query(.genericPassword, [.account: "one"]))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)")
            XCTAssertTrue("\(error)".contains("audit entries after 2"), "\(error)")
        }
        try deleteAudit(of: readerID, from: 1, sql)
        XCTAssertThrowsError(try read(reader, "one")) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)")
            XCTAssertTrue("\(error)".contains("no longer holds this device's audit entries after 0"), "\(error)")
        }
    }

    /// Issue 44 item 16 for that case: `recover` names the reads that went and the chain goes on from what the server holds.
    func testRecoveryNamesTheReadsAnAuditChainLost() throws {
        let (admin, location, database) = try machines.created()
        try admin.open().add(genp("s", "one"), data: secret("v"))
        let (reader, readerID) = try machines.enrolled(location, name: "reader", approvedBy: admin)
        for _ in 0..<3 { XCTAssertEqual(try read(reader, "one"), "v") }
        try deleteAudit(of: readerID, from: 2, try running().connect(database: database))
        XCTAssertThrowsError(try read(reader, "one")) { XCTAssertEqual(self.reason($0), .remoteRolledBack, "\($0)") }
        let plan = try recovering(reader).remote!.recoveryPlan()
        XCTAssertEqual(plan.lostReadCount, 2, "\(plan)")
        XCTAssertEqual(plan.lostReads.map(\.sequence), [2, 3])
        XCTAssertEqual(plan.lostMembership.count + plan.lostStates.count, 0, "only the audit went")
        _ = try recovering(reader).remote!.recover(password: secret("correct horse"))
        XCTAssertEqual(try read(reader, "one"), "v")
        let chain = try admin.open().remote!.audit(since: 0).filter { $0.device == readerID }
        XCTAssertEqual(chain.count, 2, "the chain goes on from entry 1, which the server holds")

        // A trust record that no longer reads is refused, with the way back that is not a deletion.
        let keychainID = try reader.open().engine.keybag.keychainID
        let trust = try RemoteTrust.path(keychainID: keychainID, environment: reader.environment)
        var bytes = try XCTUnwrap(FileManager.default.contents(atPath: trust))
        bytes[bytes.count / 2] ^= 1
        try bytes.write(to: URL(fileURLWithPath: trust))
        XCTAssertThrowsError(try read(reader, "one")) { XCTAssertEqual(self.reason($0), .remoteTrustDamaged, "\($0)") }
        let damaged = try recovering(reader).remote!.recoveryPlan()
        XCTAssertNotNil(damaged.trustDamage)
        _ = try recovering(reader).remote!.recover(password: secret("correct horse"))
        XCTAssertEqual(try read(reader, "one"), "v")
    }

    private func deleteAudit(of device: Int64, from sequence: Int64, _ sql: RemoteConnection) throws {
        try sql.transaction { transaction in
            try transaction.execute("SET LOCAL session_replication_role = replica")
            try transaction.execute("DELETE FROM locket.audit WHERE device = $1 AND seq >= $2", [.int(device), .int(sequence)])
        }
    }
}
