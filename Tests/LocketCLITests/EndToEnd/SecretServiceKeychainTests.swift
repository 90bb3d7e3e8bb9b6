import Foundation
import XCTest

/// `locket secret-service` names its keychains through the one locator
/// (issue 25), as every command does: a keychain in PostgreSQL, by its URL
/// or by a registered name, is refused before the provider starts (a
/// collection is a file, and a remote keychain stores no free-form attributes).
final class SecretServiceKeychainTests: EndToEndCase {
    override class var inProcess: Bool { true }

    func testARemoteKeychainIsRefusedByURLAndByRegisteredName() throws {
        let url = "postgres://ci@db.example/keys"
        var run = expect(53, "secret-service", "-k", url)
        XCTAssertTrue(run.err.contains("serves keychain files, not a remote keychain (\(url))"), run.summary)
        run = expect(53, "secret-service", environment: ["LOCKET_KEYCHAIN": url])
        XCTAssertTrue(run.err.contains("not a remote keychain"), run.summary)
        expect(0, "keychain", "add-remote", "team", url)
        run = expect(53, "secret-service", "-k", "team")
        XCTAssertTrue(run.err.contains("not a remote keychain (\(url))"), run.summary)
    }
}
