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

    override func setUpWithError() throws {
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
