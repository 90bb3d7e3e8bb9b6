import Foundation
import LocketCore
import LocketRemote
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A keychain in PostgreSQL through the engine (SPEC §17): several
/// "machines" (separate environments: device secret, session) sharing one
/// database, ThisDeviceOnly refused, what only a file does refused, and the
/// database, dumped as the server would hand it over, holding no name or
/// secret. The SecItem semantics themselves are the query, uniqueness and
/// update suites, run against a remote keychain (KeychainTestCase.isConformanceSuite).
final class RemoteKeychainTests: PostgresTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    func testASecondMachineIsLockedUntilThePasswordAndThenReadsTheFirstMachinesItems() throws {
        let (first, location, _) = try machines.created()
        try first.open().add(genp("svc", "alice"), data: secret("one"))
        let second = try machines.joining(location)
        XCTAssertThrowsError(try second.open().search(query(.genericPassword, [.service: "svc"]), returnData: true)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .interactionNotAllowed)
        }
        XCTAssertThrowsError(try second.open().session.unlock(password: secret("wrong horse"), timeout: nil)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .authFailed)
        }
        try second.unlock()
        // Unlocked, but not a device of the keychain: no group key, nothing opens.
        XCTAssertThrowsError(try second.open().search(query(.genericPassword, [.service: "svc"]), returnData: true)) { error in
            XCTAssertEqual((error as? KeychainError)?.reason, .notEnrolled)
        }
        let enrolment = try second.open().remote!.enroll(name: "second")
        XCTAssertThrowsError(try second.open().search(query(.genericPassword, [.service: "svc"]), returnData: true)) { error in
            XCTAssertEqual((error as? KeychainError)?.reason, .notApproved(group: Keychain.defaultAccessGroup))
        }
        try first.open().remote!.approve(device: enrolment.id, groups: [Keychain.defaultAccessGroup], fingerprint: enrolment.fingerprint)
        let found = try second.open().search(query(.genericPassword, [.service: "svc"]), returnData: true)
        XCTAssertEqual(found.map(\.secretString), ["one"])
        // Its writes are the first machine's reads, and the primary key is shared.
        try second.open().add(genp("svc", "bob"), data: secret("two"))
        XCTAssertThrowsError(try first.open().add(genp("svc", "bob"), data: secret("three"))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .duplicateItem)
        }
        XCTAssertEqual(try first.open().search(query(.genericPassword, [.service: "svc"]), limit: .all, returnData: true)
            .map(\.secretString), ["one", "two"])
    }

    func testThisDeviceOnlyClassesAreRefusedWithTheirReason() throws {
        let (first, _, _) = try machines.created(kdf: .weakForTests)
        let keychain = try first.open()
        for pclass in ProtectionClass.allCases where pclass.thisDeviceOnly {
            XCTAssertThrowsError(try keychain.add(genp("svc", pclass.name, accessible: pclass), data: secret("x"))) { error in
                XCTAssertEqual((error as? KeychainError)?.code, .param)
                XCTAssertEqual((error as? KeychainError)?.reason, .thisDeviceOnlyRemote)
            }
        }
        XCTAssertThrowsError(try keychain.search(Query(itemClass: .genericPassword))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .itemNotFound)
        }
        for pclass in ProtectionClass.allCases where !pclass.thisDeviceOnly {
            try keychain.add(genp("svc", pclass.name, accessible: pclass), data: secret("x"))
        }
    }

    func testWhatOnlyAFileDoesIsRefusedAndChangesNothing() throws {
        let (first, _, _) = try machines.created()
        let keychain = try first.open()
        try keychain.add(genp("svc", "a"), data: secret("one"))
        XCTAssertThrowsError(try keychain.session.changePassword(old: secret("correct horse"), new: secret("new horse"))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .notAvailable)
        }
        XCTAssertThrowsError(try keychain.session.setDefaultTimeout(10)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .notAvailable)
        }
        try first.lock(all: true)
        try first.unlock()
        XCTAssertEqual(try first.open().search(query(.genericPassword, [.account: "a"]), returnData: true)[0].secretString, "one")
    }

    /// Free-form attributes (SPEC §18) are a capability a remote keychain
    /// lacks (an item unique by reference sets a header row that its writes,
    /// which don't seal the header again, would leave outside the MAC): add
    /// and update refuse them before anything is written.
    func testFreeFormAttributesAreACapabilityItLacks() throws {
        let (first, _, _) = try machines.created(kdf: .weakForTests)
        let keychain = try first.open()
        XCTAssertFalse(keychain.capabilities.contains(.freeFormAttributes))
        var item = try genp("svc", "a")
        item.freeForm = FreeForm(attributes: ["xdg:schema": "org.example.Password"], uniqueByReference: true)
        XCTAssertThrowsError(try keychain.add(item, data: secret("one"))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .notAvailable)
        }
        try keychain.add(try genp("svc", "a"), data: secret("one"))
        XCTAssertThrowsError(try keychain.update(query(.genericPassword, [.service: "svc"]), changes: [:],
                                                 freeForm: FreeForm(attributes: ["application": "x"]))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .notAvailable)
        }
        let found = try first.open().search(query(.genericPassword, [.service: "svc"]), limit: .all)
        XCTAssertEqual(found.map(\.freeForm), [FreeForm()])
    }

    func testCreatingTwiceAndOpeningAnEmptyDatabaseAreRefused() throws {
        let (first, location, _) = try machines.created(kdf: .weakForTests)
        XCTAssertThrowsError(try Keychain.createRemote(location, password: secret("p"), kdf: .weakForTests, environment: first.environment)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .duplicateKeychain)
        }
        let nowhere = try RemoteMachines.newLocation(empty: true)
        XCTAssertThrowsError(try Keychain.open(remote: nowhere, environment: first.environment)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .noSuchKeychain)
        }
    }

    /// Writers on three machines at once, each adding its own items and
    /// rewriting one shared item, conflicting on it: every add is there, the
    /// shared item is whole (serializable transactions retried on conflict).
    func testConcurrentMachinesLoseNothing() throws {
        let (first, location, _) = try machines.created()
        try first.open().add(genp("shared", "last"), data: secret("none"))
        nonisolated(unsafe) let machines = [first] + (try (0..<2).map { _ in try self.machines.enrolled(location, approvedBy: first).machine })
        let rounds = 15
        nonisolated(unsafe) var failures: [String] = []
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: machines.count) { index in
            do {
                let keychain = try machines[index].open()
                for round in 0..<rounds {
                    try keychain.add(genp("m\(index)", "r\(round)"), data: secret("v\(round)"))
                    try keychain.update(query(.genericPassword, [.service: "shared"]), changes: [.comment: bytes("m\(index)")],
                                        data: secret("m\(index)-r\(round)"))
                }
            } catch {
                lock.lock(); failures.append("\(index): \(error)"); lock.unlock()
            }
        }
        XCTAssertEqual(failures, [])
        let keychain = try first.open()
        XCTAssertEqual(try keychain.search(Query(itemClass: .genericPassword), limit: .all).count, 1 + machines.count * rounds)
        for index in machines.indices {
            XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "m\(index)"]), limit: .all, returnData: true)
                .map(\.secretString), (0..<rounds).map { "v\($0)" })
        }
        // The shared item's comment and secret come from the same write.
        let shared = try keychain.search(query(.genericPassword, [.service: "shared"]), returnData: true)[0]
        let comment = shared.string(.comment)
        XCTAssertEqual(shared.secretString, "\(comment)-r\(rounds - 1)")
    }

    /// SPEC §17 "the database never sees a name or a secret": a pg_dump of
    /// the database, as its administrator (or a thief of a backup) has it,
    /// holds none of the names, attribute values, groups' items or secrets
    /// stored, plain or hex.
    func testADumpOfTheDatabaseHoldsNoNameAndNoSecret() throws {
        let (first, location, database) = try machines.created()
        let marker = "m\(UInt32.random(in: 0...UInt32.max))"
        let values = ["svc-\(marker)", "acct-\(marker)", "label-\(marker)", "comment-\(marker)", "secret-\(marker)",
                      "server-\(marker).example", "changed-\(marker)", "moved-secret-\(marker)"]
        let keychain = try first.open()
        try keychain.add(genp(values[0], values[1], [.label: values[2], .comment: values[3]]), data: secret(values[4]))
        try keychain.add(inet([.server: bytes(values[5]), .account: bytes(values[1])]), data: secret(values[4]))
        try keychain.update(query(.genericPassword, [.service: values[0]]), changes: [.comment: bytes(values[6])], data: secret(values[7]))
        try machines.joining(location).unlock()
        let dump = try running().dump(database)
        XCTAssertNotNil(dump.range(of: Data("locket.items".utf8)), "the dump holds the tables")
        for value in values {
            let hex = value.utf8.map { String(format: "%02x", $0) }.joined()
            XCTAssertNil(dump.range(of: Data(value.utf8)), "\(value) is in the dump")
            XCTAssertNil(dump.range(of: Data(hex.utf8)), "\(value) is in the dump as hex")
        }
    }
}
