import Foundation
@testable import LocketCore
@testable import LocketRemote
import XCTest

/// Access control (SPEC §14) on a remote keychain (SPEC §17): an item added
/// with user presence or an application password on one machine asks for
/// its proof when read on another, and opens with it. The presence key pairs
/// come with the keychain's header (made at init, wrapped by the password,
/// covered by the header MAC). Before this suite, `add --access-control`
/// with user presence on a remote keychain crashed (a file's statement on
/// the remote backend).
final class RemoteAccessControlTests: XCTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    /// A keychain made on a first machine, and a second one unlocked, enrolled and approved.
    func twoMachines() throws -> (TemporaryKeychain, TemporaryKeychain) {
        let (first, location, _) = try machines.created()
        return (first, try machines.enrolled(location, name: "second", approvedBy: first).machine)
    }

    func add(_ machine: TemporaryKeychain, _ account: String, _ control: AccessControl, applicationPassword: String? = nil) throws {
        var item = try genp("svc", account)
        item.accessControl = control
        let keychain = try machine.open()
        keychain.session.applicationPassword = try applicationPassword.map(secret)
        try keychain.add(item, data: secret("guarded-\(account)"))
    }

    func read(_ keychain: Keychain, _ account: String) throws -> String? {
        try keychain.search(query(.genericPassword, [.account: account]), returnData: true).first?.secretString
    }


    func testUserPresenceAsksForItsProofOnTheSecondMachine() throws {
        let (first, second) = try twoMachines()
        try add(first, "up", AccessControl(protection: .whenUnlocked, flags: [.userPresence]))
        let keychain = try second.open()
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "up"])).count, 1, "attributes need no proof")
        XCTAssertEqual(proofRequest(try read(keychain, "up")), AccessRequest(keychainPassword: true, applicationPassword: false, label: "svc"))
        XCTAssertThrowsError(try keychain.session.provePresence(password: secret("wrong horse"))) {
            XCTAssertEqual(($0 as? KeychainError)?.code, .authFailed, "\($0)")
        }
        try keychain.session.provePresence(password: secret("correct horse"))
        XCTAssertEqual(try read(keychain, "up"), "guarded-up")
        // The proof is this process's: the next command asks again, on either machine.
        XCTAssertNotNil(proofRequest(try read(second.open(), "up")))
        XCTAssertNotNil(proofRequest(try read(first.open(), "up")))
    }

    func testAnApplicationPasswordIsAskedForOnTheSecondMachine() throws {
        let (first, second) = try twoMachines()
        try add(first, "app", AccessControl(protection: .afterFirstUnlock, flags: [.applicationPassword]), applicationPassword: "app pw")
        let keychain = try second.open()
        XCTAssertEqual(proofRequest(try read(keychain, "app")), AccessRequest(keychainPassword: false, applicationPassword: true, label: "svc"))
        keychain.session.applicationPassword = try secret("not it")
        XCTAssertThrowsError(try read(keychain, "app")) { XCTAssertEqual(($0 as? KeychainError)?.code, .authFailed, "\($0)") }
        keychain.session.applicationPassword = try secret("app pw")
        XCTAssertEqual(try read(keychain, "app"), "guarded-app")
    }

    func testThePresenceKeysAreInTheAuthenticatedHeader() throws {
        let (first, _) = try twoMachines()
        let keychain = try first.open()
        for name in PresenceKeys.names {
            XCTAssertEqual(keychain.engine.meta[PresenceKeys.publicKeyRow(name)]?.count, 32, name)
            XCTAssertNotNil(keychain.engine.header.keybag[name]?.kek, "the wrapped secret key of \(name)")
        }
        XCTAssertTrue(keychain.engine.headerChecked)
    }
}
