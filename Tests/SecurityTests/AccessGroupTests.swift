import Foundation
import LocalAuthentication
import Security
import XCTest

/// Access groups from the app's entitlements (SPEC §6): `LOCKET_ENTITLEMENTS`
/// names the file, as for the command line; without it the app is the owner.
final class AccessGroupTests: SecurityTestCase {
    private func writeEntitlements(_ groups: [String]) throws -> String {
        let path = sandbox.root + "/app.entitlements"
        let list = groups.map { "\"\($0)\"" }.joined(separator: ", ")
        try Data(#"{"keychain-access-groups": [\#(list)]}"#.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func add(_ account: String, group: String) -> OSStatus {
        SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrAccount: account, kSecAttrAccessGroup: group,
                    kSecValueData: Data(account.utf8)] as CFDictionary, nil)
    }

    private func accounts() -> [String] {
        var result: CFTypeRef?
        guard SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll, kSecReturnAttributes: true]
                                  as CFDictionary, &result) == errSecSuccess else { return [] }
        return (result as! [[String: Any]]).compactMap { $0[kSecAttrAccount as String] as? String }
    }

    func testAnAppSeesOnlyItsGroupsAndAddsToTheFirst() throws {
        XCTAssertEqual(add("theirs", group: "T.other"), errSecSuccess, "the owner names any group")
        XCTAssertEqual(add("ours", group: "T.app"), errSecSuccess)
        setenv("LOCKET_ENTITLEMENTS", try writeEntitlements(["T.app", "T.shared"]), 1)
        defer { unsetenv("LOCKET_ENTITLEMENTS") }
        XCTAssertEqual(accounts(), ["ours"])
        var result: CFTypeRef?
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "new", kSecValueData: Data(),
                                   kSecReturnAttributes: true] as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [String: Any])?[kSecAttrAccessGroup as String] as? String, "T.app")
        XCTAssertEqual(add("x", group: "T.other"), errSecMissingEntitlement)
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "theirs"] as CFDictionary), errSecItemNotFound)
        unsetenv("LOCKET_ENTITLEMENTS")
        XCTAssertEqual(accounts(), ["theirs", "ours", "new"], "the owner again")
    }

    func testAChangedEntitlementsFileIsReadAgain() throws {
        XCTAssertEqual(add("shared", group: "T.shared"), errSecSuccess)
        let path = try writeEntitlements(["T.app"])
        setenv("LOCKET_ENTITLEMENTS", path, 1)
        defer { unsetenv("LOCKET_ENTITLEMENTS") }
        XCTAssertEqual(accounts(), [])
        _ = try writeEntitlements(["T.app", "T.shared"])
        XCTAssertEqual(accounts(), ["shared"])
        try Data("not json".utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword] as CFDictionary, nil), errSecParam)
    }

    /// kSecUseAuthenticationUISkip: the items whose access control needs a proof are left out.
    func testSkipLeavesOutWhatNeedsAProof() throws {
        let access = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .applicationPassword, nil)!
        let context = LAContext()
        context.setCredential(Data("pw".utf8), type: .applicationPassword)
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "guarded", kSecValueData: Data("g".utf8),
                                   kSecAttrAccessControl: access, kSecUseAuthenticationContext: context] as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(add("plain", group: "default"), errSecSuccess)
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll, kSecReturnData: true,
                                            kSecUseAuthenticationUI: kSecUseAuthenticationUISkip] as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(result as? [Data], [Data("plain".utf8)])
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll, kSecReturnData: true,
                                            kSecUseAuthenticationUI: kSecUseAuthenticationUIFail] as CFDictionary, &result),
                       errSecInteractionNotAllowed)
    }
}
