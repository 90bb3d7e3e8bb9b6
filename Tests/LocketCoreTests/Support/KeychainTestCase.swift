import Foundation
import LocketCore
import LocketTestSupport
import XCTest

/// A test case with a fresh, unlocked, password-protected keychain per test.
class KeychainTestCase: XCTestCase {
    var temporary: TemporaryKeychain!
    var keychain: Keychain!
    /// The time the test's keychain runs on: it moves only when the test
    /// moves it (`tick`) or the engine sleeps (issue 38).
    let clock = VirtualClock()

    /// The Argon2id cost of the test's keychain, in every storage: the
    /// minimum, unless the test unlocks it where its header can't be
    /// authenticated before the hash (another device, a lost device secret, a
    /// remote keychain after `lock(all: true)`: a `lock` that keeps the
    /// blind-index key leaves it checkable), where locket's floor applies and
    /// the minimum is refused as tampering.
    class var kdf: KDFCost { .weakForTests }

    /// Whether the suite is one of the storage conformance suites (issue 38):
    /// the engine's behaviours every storage must show alike. With
    /// LOCKET_TEST_BACKEND=remote or =memory (`make test` runs these suites
    /// again so) every test runs against a remote keychain in the PostgreSQL
    /// server the tests start (one database per test, SPEC §17) or against
    /// one in this process's memory (`MemoryStorage`), instead of a file.
    /// The suite itself is the conformance test, not a copy.
    class var isConformanceSuite: Bool { false }

    /// The storage this run's keychain is in: "file", "remote" or "memory".
    var backend: String {
        guard Self.isConformanceSuite, let name = ProcessInfo.processInfo.environment["LOCKET_TEST_BACKEND"] else { return "file" }
        return name
    }

    /// Whether this run is against a remote keychain.
    var isRemoteRun: Bool { backend == "remote" }

    override func setUpWithError() throws {
        if backend == "memory" {
            temporary = try TemporaryKeychain(memory: "correct horse", kdf: Self.kdf)
            temporary.time = clock.source
            keychain = try temporary.open()
            return
        }
        if isRemoteRun {
            temporary = try TemporaryKeychain(remote: try Postgres.newKeychainLocation(), kdf: Self.kdf)
            temporary.time = clock.source
            keychain = try temporary.open()
            return
        }
        temporary = try TemporaryKeychain(kdf: Self.kdf)
        temporary.time = clock.source
        keychain = try temporary.open()
    }

    override func tearDown() {
        keychain = nil
        temporary?.remove()
        temporary = nil
    }

    /// Moves the keychain's clock on by 5 ms: what is written next has later dates.
    func tick() { clock.advance(milliseconds: 5) }

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
