import Foundation
import LocketCore
import LocketSystem
import XCTest

/// Failures the machine rarely gives on demand, injected through the system-
/// call wrapper's test hook (issue 25 item 5): each is reported with its
/// errno's text and leaves nothing half made; an interrupted call is made
/// again in the one place that retries.
final class SystemCallFailureTests: KeychainTestCase {
    override func tearDown() {
        systemCallFailureTestHook = nil
        super.tearDown()
    }

    func testAFailedSyncWhileMakingAKeychainIsErrSecIOAndLeavesNoKeychain() throws {
        let path = temporary.directory + "/data/locket/second.keychain"
        // A new environment, so that `create` has a device secret to write (and sync) first.
        let fresh = Environment(["HOME": temporary.directory + "/other", "XDG_DATA_HOME": temporary.directory + "/other/data",
                                 "XDG_STATE_HOME": temporary.directory + "/other/state", "XDG_RUNTIME_DIR": temporary.directory + "/other/run",
                                 "LOCKET_SESSION": "dir"])
        systemCallFailureTestHook = { "\($0)" == "fsync" ? EIO : nil }
        do {
            try Keychain.create(at: path, password: secret("pw"), kdf: .weakForTests, environment: fresh)
            XCTFail("created despite a failed fsync")
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .io, "\(error)")
            XCTAssertTrue(error.message.hasSuffix(": Input/output error"), error.message)
        }
        systemCallFailureTestHook = nil
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "a keychain was left behind")
        XCTAssertNoThrow(try Keychain.create(at: path, password: secret("pw"), kdf: .weakForTests, environment: fresh),
                         "nothing left in the way of a second try")
    }

    func testReadsInterruptedBySignalsAreMadeAgain() throws {
        try addGenp("svc", "alice", secret: "kept")
        keychain = nil
        // Every read the engine makes through the wrapper (device secret, session) is interrupted twice first.
        nonisolated(unsafe) var interruptions = 0
        nonisolated(unsafe) var pending = 2
        systemCallFailureTestHook = { name in
            guard "\(name)" == "read" else { return nil }
            if pending > 0 { pending -= 1; interruptions += 1; return EINTR }
            pending = 2
            return nil
        }
        let items = try temporary.open().search(Query(itemClass: .genericPassword), limit: .all, returnData: true)
        XCTAssertEqual(items.map { $0.data?.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }, ["kept"])
        XCTAssertGreaterThan(interruptions, 0, "the open read nothing through the wrapper")
    }
}
