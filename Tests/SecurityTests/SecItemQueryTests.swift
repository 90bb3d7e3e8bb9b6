import Foundation
import Security
import XCTest

/// SecItemCopyMatching, SecItemUpdate and SecItemDelete as Apple documents
/// them (SPEC §4): match limits and result shapes, persistent references,
/// updates all or nothing, deletes of every match, and their error paths.
final class SecItemQueryTests: SecurityTestCase {
    private func add(_ account: String, service: String = "svc", comment: String? = nil) {
        var item: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                   kSecAttrAccount as String: account, kSecValueData as String: Data("secret-\(account)".utf8)]
        item[kSecAttrComment as String] = comment
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecSuccess)
    }

    private func find(_ query: [String: Any]) -> (OSStatus, CFTypeRef?) {
        var result: CFTypeRef?
        var full = query
        full[kSecClass as String] = full[kSecClass as String] ?? kSecClassGenericPassword
        let status = SecItemCopyMatching(full as CFDictionary, &result)
        return (status, result)
    }

    // MARK: - SecItemCopyMatching

    func testTheMatchLimitAndTheShapeOfResults() throws {
        for account in ["one", "two", "three"] { add(account) }
        // Without a limit: the oldest match, alone.
        XCTAssertEqual(find([kSecAttrService as String: "svc", kSecReturnData as String: true]).1 as? Data, Data("secret-one".utf8))
        // kSecMatchLimitAll: an array, even of one.
        let all = find([kSecAttrService as String: "svc", kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll])
        XCTAssertEqual(all.1 as? [Data], ["one", "two", "three"].map { Data("secret-\($0)".utf8) })
        let single = find([kSecAttrAccount as String: "two", kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll])
        XCTAssertEqual((single.1 as? [[String: Any]])?.count, 1)
        // A number.
        let two = find([kSecAttrService as String: "svc", kSecReturnPersistentRef as String: true, kSecMatchLimit as String: 2])
        XCTAssertEqual((two.1 as? [Data])?.count, 2)
        // Attributes and data: one dictionary with kSecValueData in it.
        let both = try XCTUnwrap(find([kSecAttrAccount as String: "three", kSecReturnAttributes as String: true,
                                       kSecReturnData as String: true]).1 as? [String: Any])
        XCTAssertEqual(both[kSecValueData as String] as? Data, Data("secret-three".utf8))
        XCTAssertEqual(both[kSecAttrService as String] as? String, "svc")
        XCTAssertNil(both[kSecClass as String], "attributes carry no class unless a ref is asked for")
        // Nothing to return: success, and no result.
        let none = find([kSecAttrAccount as String: "one"])
        XCTAssertEqual(none.0, errSecSuccess)
        XCTAssertNil(none.1)
    }

    func testNotFoundAndLockedAreTold() throws {
        add("here")
        XCTAssertEqual(find([kSecAttrAccount as String: "absent", kSecReturnData as String: true]).0, errSecItemNotFound)
        try lock()
        XCTAssertEqual(find([kSecAttrAccount as String: "here", kSecReturnData as String: true]).0, errSecInteractionNotAllowed)
        XCTAssertEqual(find([kSecAttrAccount as String: "absent", kSecReturnData as String: true]).0, errSecItemNotFound)
        try unlock()
        XCTAssertEqual(find([kSecAttrAccount as String: "here", kSecReturnData as String: true]).0, errSecSuccess)
    }

    func testAPersistentReferenceFindsItsItemWithoutAClass() throws {
        add("a")
        var result: CFTypeRef?
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassInternetPassword, kSecAttrServer: "example.com", kSecValueData: Data("web".utf8),
                                   kSecReturnPersistentRef: true] as CFDictionary, &result), errSecSuccess)
        let ref = try XCTUnwrap(result as? Data)
        XCTAssertEqual(SecItemCopyMatching([kSecValuePersistentRef: ref, kSecReturnData: true] as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(result as? Data, Data("web".utf8))
        // Also among the attributes, and as a query term, under kSecAttrPersistentReference.
        XCTAssertEqual(SecItemCopyMatching([kSecAttrPersistentReference: ref, kSecReturnAttributes: true] as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [String: Any])?[kSecAttrPersistentReference as String] as? Data, ref)
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecValuePersistentRef: ref] as CFDictionary, nil),
                       errSecItemNotFound, "the reference is an internet password's")
        XCTAssertEqual(SecItemCopyMatching([kSecValuePersistentRef: Data("not a reference".utf8)] as CFDictionary, nil), errSecParam)
    }

    func testQueryParameterErrors() {
        add("a")
        XCTAssertEqual(find([kSecMatchCaseInsensitive as String: true]).0, errSecParam)
        XCTAssertEqual(find([kSecMatchCaseInsensitive as String: false]).0, errSecSuccess)
        XCTAssertEqual(find([kSecValueData as String: Data()]).0, errSecParam)
        XCTAssertEqual(find([kSecMatchLimit as String: 0]).0, errSecParam)
        XCTAssertEqual(find([kSecMatchIssuers as String: []]).0, errSecParam)
        XCTAssertEqual(find([kSecAttrKeySizeInBits as String: 256]).0, errSecNoSuchAttr)
    }

    // MARK: - SecItemUpdate

    func testUpdateChangesEveryMatchAndKeepsItsIdentity() throws {
        add("a", comment: "old")
        add("b", comment: "old")
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a", kSecReturnAttributes: true,
                                            kSecReturnPersistentRef: true] as CFDictionary, &result), errSecSuccess)
        let before = try XCTUnwrap(result as? [String: Any])
        Thread.sleep(forTimeInterval: 0.01)
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassGenericPassword, kSecAttrComment: "old"] as CFDictionary,
                                     [kSecAttrComment: "new", kSecValueData: Data("rotated".utf8)] as CFDictionary), errSecSuccess)
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecAttrComment: "new", kSecMatchLimit: kSecMatchLimitAll,
                                            kSecReturnData: true] as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(result as? [Data], [Data("rotated".utf8), Data("rotated".utf8)])
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a", kSecReturnAttributes: true,
                                            kSecReturnPersistentRef: true] as CFDictionary, &result), errSecSuccess)
        let after = try XCTUnwrap(result as? [String: Any])
        XCTAssertEqual(after[kSecValuePersistentRef as String] as? Data, before[kSecValuePersistentRef as String] as? Data)
        XCTAssertEqual(after[kSecAttrCreationDate as String] as? Date, before[kSecAttrCreationDate as String] as? Date)
        XCTAssertGreaterThan(try XCTUnwrap(after[kSecAttrModificationDate as String] as? Date),
                             try XCTUnwrap(before[kSecAttrModificationDate as String] as? Date))
    }

    func testAnUpdateThatWouldMakeADuplicateChangesNothing() throws {
        add("a", service: "s1", comment: "batch")
        add("a", service: "s2", comment: "batch")
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassGenericPassword, kSecAttrComment: "batch"] as CFDictionary,
                                     [kSecAttrService: "same", kSecAttrComment: "moved"] as CFDictionary), errSecDuplicateItem)
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecAttrComment: "batch", kSecMatchLimit: kSecMatchLimitAll,
                                            kSecReturnAttributes: true] as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [[String: Any]])?.compactMap { $0[kSecAttrService as String] as? String }, ["s1", "s2"])
    }

    func testUpdateErrors() throws {
        add("a")
        let query = [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"] as CFDictionary
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "zz"] as CFDictionary,
                                     [kSecAttrComment: "x"] as CFDictionary), errSecItemNotFound)
        XCTAssertEqual(SecItemUpdate(query, [kSecAttrAccessControl: SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil)!]
                                     as CFDictionary), errSecParam, "add-only")
        XCTAssertEqual(SecItemUpdate(query, [:] as CFDictionary), errSecParam, "nothing to change")
        XCTAssertEqual(SecItemUpdate(query, [kSecClass: kSecClassInternetPassword] as CFDictionary), errSecParam)
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassGenericPassword, kSecReturnData: true] as CFDictionary,
                                     [kSecAttrComment: "x"] as CFDictionary), errSecParam)
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitOne] as CFDictionary,
                                     [kSecAttrComment: "x"] as CFDictionary), errSecParam)
        XCTAssertEqual(SecItemUpdate(query, [kSecAttrServer: "x"] as CFDictionary), errSecNoSuchAttr)
        try lock()
        XCTAssertEqual(SecItemUpdate(query, [kSecAttrComment: "x"] as CFDictionary), errSecInteractionNotAllowed)
    }

    func testUpdateMovesAnItemToAnotherGroup() {
        add("a")
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"] as CFDictionary,
                                     [kSecAttrAccessGroup: "team"] as CFDictionary), errSecSuccess)
        XCTAssertEqual(find([kSecAttrAccount as String: "a", kSecAttrAccessGroup as String: "team"]).0, errSecSuccess)
        XCTAssertEqual(find([kSecAttrAccount as String: "a", kSecAttrAccessGroup as String: "default"]).0, errSecItemNotFound)
    }

    // MARK: - SecItemDelete

    func testDeleteRemovesEveryMatchAndWorksLocked() throws {
        for account in ["a", "b", "c"] { add(account) }
        add("other", service: "keep")
        try lock()
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrService: "svc"] as CFDictionary), errSecSuccess)
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrService: "svc"] as CFDictionary), errSecItemNotFound)
        try unlock()
        XCTAssertEqual(find([kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]).1.map { ($0 as! NSArray).count }, 1)
    }

    func testDeleteErrors() {
        add("a")
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitOne] as CFDictionary), errSecParam)
        XCTAssertEqual(SecItemDelete([kSecAttrAccount: "a"] as CFDictionary), errSecParam, "no class")
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll] as CFDictionary), errSecSuccess)
    }
}
