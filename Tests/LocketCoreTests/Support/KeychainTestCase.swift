import Foundation
import LocketCore
import XCTest

/// A test case with a fresh, unlocked, password-protected keychain per test.
class KeychainTestCase: XCTestCase {
    var temporary: TemporaryKeychain!
    var keychain: Keychain!

    /// The Argon2id cost of the test's keychain: the minimum, unless the test
    /// opens it where its header can't be authenticated before the hash
    /// (another device, a lost device secret), where locket's floor applies.
    class var kdf: KDFCost { .weakForTests }

    /// Whether the suite's tests are the conformance of remote keychains
    /// (SPEC §17): with LOCKET_TEST_BACKEND=remote (`make test` runs these
    /// suites a second time so), every test runs against a remote keychain in
    /// the PostgreSQL server the tests start, one database per test, instead
    /// of a file. The suite itself is the conformance test, not a copy.
    class var alsoRemote: Bool { false }

    /// Whether this run is against a remote keychain.
    var isRemoteRun: Bool { Self.alsoRemote && ProcessInfo.processInfo.environment["LOCKET_TEST_BACKEND"] == "remote" }

    override func setUpWithError() throws {
        if isRemoteRun {
            // A remote keychain is opened where its header can't be checked before the hash: locket's floor applies.
            temporary = try TemporaryKeychain(remote: try Postgres.newKeychainLocation(), kdf: .interactive)
            keychain = try temporary.open()
            return
        }
        temporary = try TemporaryKeychain(kdf: Self.kdf)
        keychain = try temporary.open()
    }

    override func tearDown() {
        keychain = nil
        temporary?.remove()
        temporary = nil
    }

    /// Adds a generic password and returns it.
    @discardableResult
    func addGenp(_ service: String?, _ account: String?, _ more: [Attribute: String] = [:], secret text: String = "s3cret",
                 group: String? = nil, accessible: ProtectionClass? = nil, in target: Keychain? = nil) throws -> Item {
        try (target ?? keychain).add(genp(service, account, more, group: group, accessible: accessible), data: secret(text))
    }

    /// Every generic password, oldest first, with data.
    func allGenp(in target: Keychain? = nil) throws -> [Item] {
        do {
            return try (target ?? keychain).search(Query(itemClass: .genericPassword), limit: .all, returnData: true)
        } catch let error as KeychainError where error.code == .itemNotFound {
            return []
        }
    }
}
