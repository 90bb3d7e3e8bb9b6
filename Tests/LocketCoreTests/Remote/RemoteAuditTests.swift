import Foundation
import LocketCore
import LocketRemote
import XCTest

/// The audit of a remote keychain (SPEC §17 "Audit"): every read of a secret,
/// and only those, appends (device, item reference, operation, time) in the
/// reading transaction; the owner lists it; the table refuses changes.
final class RemoteAuditTests: PostgresTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    func testEveryReadOfASecretAndOnlyThoseIsRecorded() throws {
        let (admin, _, database) = try machines.created(kdf: .weakForTests)
        let keychain = try admin.open()
        let one = try keychain.add(genp("s", "one"), data: secret("x"))
        let two = try keychain.add(genp("s", "two"), data: secret("y"))
        let start = Int64(Date().timeIntervalSince1970 * 1_000_000) - 5_000_000
        XCTAssertEqual(try keychain.remote!.audit(since: 0), [], "adding reads no secret")
        _ = try keychain.search(query(.genericPassword, [.service: "s"]), limit: .all)
        XCTAssertEqual(try keychain.remote!.audit(since: 0), [], "attributes are no secret")
        _ = try keychain.search(query(.genericPassword, [.account: "two"]), returnData: true)
        try keychain.dump(returnData: true) { _ in }
        let rows = try admin.open().remote!.audit(since: start)
        XCTAssertEqual(rows.map(\.item), [two.persistentRef, one.persistentRef, two.persistentRef])
        XCTAssertEqual(Set(rows.map(\.operation)), ["read"])
        XCTAssertEqual(Set(rows.map(\.device)), [try XCTUnwrap(keychain.remote?.deviceID)])
        XCTAssertEqual(try keychain.remote!.audit(since: Int64(Date().timeIntervalSince1970 * 1_000_000) + 60_000_000), [])
        // As the server holds it, the audit can't be rewritten by locket's role.
        let connection = try running().connect(database: database)
        XCTAssertThrowsError(try connection.execute("DELETE FROM locket.audit"))
        XCTAssertThrowsError(try connection.execute("UPDATE locket.audit SET operation = 'add'"))
        XCTAssertEqual(try connection.execute("SELECT count(*) FROM locket.audit")[0][0].int, 3)
        // A file keychain has none: it has no remote administration at all, and
        // what a caller says when asked for one is errSecNotAvailable.
        let file = try TemporaryKeychain()
        defer { file.remove() }
        XCTAssertNil(try file.open().remote)
        XCTAssertEqual(RemoteAdmin.refusal(.audit).code, .notAvailable)
    }
}
