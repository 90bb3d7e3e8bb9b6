import Foundation
import LocalAuthentication
import Security
import XCTest

/// Keychain code written the way the seeds' snippets write it
/// (`../shared/reference/`: the iOS security guide's save/read/delete
/// helpers, the DevForums posts' NSDictionary literals and secCall helper,
/// the tutorial's keys by tag and access control, Apple's add/find/update/
/// delete flow): compiled unchanged against this module and run against a
/// keychain of the test's own.
final class SeedIdiomTests: SecurityTestCase {
    enum StoreError: Error, Equatable {
        case saveFailed(OSStatus), updateFailed(OSStatus), readFailed(OSStatus), deleteFailed(OSStatus)
    }

    // MARK: - [String: Any] with `as String` keys, bridged `as CFDictionary`

    func save(_ secret: Data, account: String, service: String) throws {
        let attributes: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecValueData as String: secret,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        let status = SecItemAdd(attributes as CFDictionary, nil)
        if status == errSecDuplicateItem {
            let match: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
            let changes: [String: Any] = [kSecValueData as String: secret]
            let updated = SecItemUpdate(match as CFDictionary, changes as CFDictionary)
            guard updated == errSecSuccess else { throw StoreError.updateFailed(updated) }
        } else if status != errSecSuccess {
            throw StoreError.saveFailed(status)
        }
    }

    func read(account: String, service: String) throws -> Data {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecReturnData as String: true,
            kSecMatchLimit as String: kSecMatchLimitOne,
        ]
        var found: AnyObject?
        let status = SecItemCopyMatching(query as CFDictionary, &found)
        guard status == errSecSuccess, let secret = found as? Data else { throw StoreError.readFailed(status) }
        return secret
    }

    func remove(account: String, service: String) throws {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        let status = SecItemDelete(query as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw StoreError.deleteFailed(status) }
    }

    func testSaveThenSaveAgainUpdatesThenReadThenRemove() throws {
        try save(Data("first token".utf8), account: "api", service: "com.example.app")
        XCTAssertEqual(try read(account: "api", service: "com.example.app"), Data("first token".utf8))
        try save(Data("second token".utf8), account: "api", service: "com.example.app")
        XCTAssertEqual(try read(account: "api", service: "com.example.app"), Data("second token".utf8))
        try remove(account: "api", service: "com.example.app")
        XCTAssertThrowsError(try read(account: "api", service: "com.example.app")) {
            XCTAssertEqual($0 as? StoreError, .readFailed(errSecItemNotFound))
        }
        // Removing what is not there is no failure to these helpers.
        try remove(account: "api", service: "com.example.app")
    }

    // MARK: - NSDictionary literals with CFString keys

    func testNSDictionaryLiteralsAndAReusedMutableDictionary() throws {
        var copyResult: CFTypeRef? = nil
        let query = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrService: "AYS",
            kSecAttrAccount: "mrgumby",
            kSecReturnData: true,
        ] as NSMutableDictionary
        var err = SecItemCopyMatching(query, &copyResult)
        XCTAssertEqual(err, errSecItemNotFound)
        XCTAssertNil(copyResult)
        if err == errSecItemNotFound {
            let add = [
                kSecClass: kSecClassGenericPassword,
                kSecAttrService: "AYS",
                kSecAttrAccount: "mrgumby",
                kSecValueData: Data("opendoor".utf8),
            ] as NSMutableDictionary
            err = SecItemAdd(add, nil)
        }
        XCTAssertEqual(err, errSecSuccess)
        XCTAssertEqual(SecItemCopyMatching(query, &copyResult), errSecSuccess)
        XCTAssertEqual(copyResult as? Data, Data("opendoor".utf8))

        // A query that reads up to ten items' attributes: an array.
        let ten = [kSecClass: kSecClassGenericPassword, kSecAttrService: "AYS", kSecMatchLimit: 10, kSecReturnAttributes: true] as NSDictionary
        XCTAssertEqual(SecItemCopyMatching(ten, &copyResult), errSecSuccess)
        let items = copyResult as! [[String: Any]]
        XCTAssertEqual(items.count, 1)
        XCTAssertEqual(items[0][kSecAttrAccount as String] as? String, "mrgumby")
    }

    /// A query with an attribute outside the primary key finds nothing, yet
    /// the add it leads to is a duplicate: uniqueness is by primary key.
    func testAQueryAttributeOutsideTheUniquenessConstraint() {
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrService: "AYS", kSecAttrAccount: "mrgumby",
                                   kSecValueData: Data("opendoor".utf8)] as NSDictionary, nil), errSecSuccess)
        var copyResult: CFTypeRef? = nil
        let query = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrService: "AYS",
            kSecAttrAccount: "mrgumby",
            kSecAttrGeneric: Data("SecItemHints".utf8),
        ] as NSMutableDictionary
        XCTAssertEqual(SecItemCopyMatching(query, &copyResult), errSecItemNotFound)
        query[kSecValueData] = Data("opendoor".utf8)
        XCTAssertEqual(SecItemAdd(query, nil), errSecDuplicateItem)
    }

    // MARK: - A secCall helper, and dumping every item

    func secCall<Result>(_ body: (_ resultPtr: UnsafeMutablePointer<CFTypeRef?>) -> OSStatus) throws -> Result {
        var result: CFTypeRef? = nil
        let err = body(&result)
        guard err == errSecSuccess else { throw NSError(domain: NSOSStatusErrorDomain, code: Int(err), userInfo: nil) }
        return result as! Result
    }

    func testDumpEveryGenericPasswordThroughSecCall() throws {
        for account in ["alpha", "beta", "gamma"] {
            try save(Data(account.utf8), account: account, service: "dump")
        }
        let itemDicts = try secCall {
            SecItemCopyMatching([
                kSecClass: kSecClassGenericPassword,
                kSecMatchLimit: kSecMatchLimitAll,
                kSecReturnAttributes: true,
            ] as NSDictionary, $0)
        } as [[String: Any]]
        XCTAssertEqual(itemDicts.compactMap { $0[kSecAttrAccount as String] as? String }, ["alpha", "beta", "gamma"])
        XCTAssertEqual(itemDicts[0][kSecAttrAccessible as String] as? String, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly as String)
        XCTAssertNotNil(itemDicts[0][kSecAttrCreationDate as String] as? Date)
        XCTAssertThrowsError(try secCall {
            SecItemCopyMatching([kSecClass: kSecClassInternetPassword, kSecReturnData: true] as NSDictionary, $0)
        } as Data) { XCTAssertEqual(($0 as NSError).code, Int(errSecItemNotFound)) }
    }

    // MARK: - Access groups from the entitlements

    func testAnAccessGroupTheEntitlementsList() throws {
        let entitlements = sandbox.root + "/app.entitlements"
        try Data("""
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict>
          <key>keychain-access-groups</key><array><string>TEAMID.com.company.shared</string></array>
          <key>application-identifier</key><string>TEAMID.com.company.app</string>
        </dict></plist>
        """.utf8).write(to: URL(fileURLWithPath: entitlements))
        setenv("LOCKET_ENTITLEMENTS", entitlements, 1)
        defer { unsetenv("LOCKET_ENTITLEMENTS") }
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrAccount as String: "shared-token",
            kSecAttrAccessGroup as String: "TEAMID.com.company.shared",
        ]
        query[kSecValueData as String] = Data("shared".utf8)
        XCTAssertEqual(SecItemAdd(query as CFDictionary, nil), errSecSuccess)
        query[kSecAttrAccessGroup as String] = "OTHERTEAM.elsewhere"
        XCTAssertEqual(SecItemAdd(query as CFDictionary, nil), errSecMissingEntitlement)
    }

    // MARK: - Locked is not missing

    func testLockedIsInteractionNotAllowedAndDeleteStillWorks() throws {
        // The helper's class is after-first-unlock: what `lock` leaves open, `lock --all` (a reboot) closes.
        try save(Data("s".utf8), account: "background", service: "fetch")
        try lock()
        XCTAssertEqual(try read(account: "background", service: "fetch"), Data("s".utf8))
        try lock(all: true)
        XCTAssertThrowsError(try read(account: "background", service: "fetch")) {
            XCTAssertEqual($0 as? StoreError, .readFailed(errSecInteractionNotAllowed))
        }
        XCTAssertNotEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "background",
                                               kSecReturnData: kCFBooleanTrue!] as CFDictionary, nil), errSecItemNotFound)
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "background"] as CFDictionary), errSecSuccess)
        try unlock()
        XCTAssertThrowsError(try read(account: "background", service: "fetch")) {
            XCTAssertEqual($0 as? StoreError, .readFailed(errSecItemNotFound))
        }
    }
}
