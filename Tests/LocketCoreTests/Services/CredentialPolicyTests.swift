import Foundation
@testable import LocketCore
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 29: the credential socket's policy (which unit gets which
/// credential, from which item, with which access groups) and the address
/// systemd binds to name them (systemd.exec(5), LoadCredential=).
final class CredentialPolicyTests: XCTestCase {
    static let policy = """
        {
          "units": {
            "deploy.service": {
              "access-groups": ["deploy", "shared"],
              "credentials": {
                "github-token": "github/deploy",
                "registry": "https://ci@registry.example.com:5000/v2"
              }
            },
            "backup@.service": { "access-groups": ["backup"], "credentials": { "s3": "s3%2Fbucket/backup" } },
            "backup@special.service": { "access-groups": ["special"], "credentials": { "s3": "s3/special" } }
          }
        }
        """

    func parse(_ text: String, server: Caller = .owner) throws -> CredentialPolicy {
        try CredentialPolicy.parse(Array(text.utf8), name: "policy.json", server: server)
    }

    func assertRefused(_ text: String, _ message: String, server: Caller = .owner, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try parse(text, server: server), file: file, line: line) { error in
            let error = error as? KeychainError
            XCTAssertEqual(error?.code, .param, file: file, line: line)
            XCTAssertTrue(error?.message.hasPrefix("policy.json: ") == true, "\(String(describing: error))", file: file, line: line)
            XCTAssertTrue(error?.message.contains(message) == true, "\(String(describing: error)) lacks \(message)", file: file, line: line)
        }
    }

    func testGrantsGiveTheReferenceAndTheUnitsGroups() throws {
        let policy = try parse(Self.policy)
        let token = try XCTUnwrap(policy.grant(unit: "deploy.service", credential: "github-token"))
        XCTAssertEqual(token.reference, "github/deploy")
        XCTAssertEqual(token.query.itemClass, .genericPassword)
        XCTAssertEqual(token.query.attributes.map { $0.0 }, [.service, .account])
        XCTAssertEqual(token.caller.accessGroups, ["deploy", "shared"])
        let registry = try XCTUnwrap(policy.grant(unit: "deploy.service", credential: "registry"))
        XCTAssertEqual(registry.query.itemClass, .internetPassword)
        // Nothing else: another ID, another unit, a name that only resembles one.
        XCTAssertNil(policy.grant(unit: "deploy.service", credential: "github"))
        XCTAssertNil(policy.grant(unit: "deploy", credential: "github-token"))
        XCTAssertNil(policy.grant(unit: "Deploy.service", credential: "github-token"))
        XCTAssertNil(policy.grant(unit: "deploy.service ", credential: "github-token"))
        XCTAssertNil(policy.grant(unit: "other.service", credential: "github-token"))
    }

    /// A template's entry covers its instances; an instance's own entry wins.
    func testTemplatesCoverTheirInstances() throws {
        let policy = try parse(Self.policy)
        XCTAssertEqual(policy.grant(unit: "backup@daily.service", credential: "s3")?.caller.accessGroups, ["backup"])
        XCTAssertEqual(policy.grant(unit: "backup@daily.service", credential: "s3")?.reference, "s3%2Fbucket/backup")
        XCTAssertEqual(policy.grant(unit: "backup@special.service", credential: "s3")?.reference, "s3/special")
        XCTAssertEqual(policy.grant(unit: "backup@special.service", credential: "s3")?.caller.accessGroups, ["special"])
        // The template itself is no instance; another type or prefix is not covered.
        XCTAssertNil(policy.grant(unit: "backup@.timer", credential: "s3"))
        XCTAssertNil(policy.grant(unit: "backup@daily.timer", credential: "s3"))
        XCTAssertNil(policy.grant(unit: "nobackup@daily.service", credential: "s3"))
        XCTAssertEqual(CredentialPolicy.template(of: "getty@tty1.service"), "getty@.service")
        XCTAssertNil(CredentialPolicy.template(of: "getty.service"))
        XCTAssertNil(CredentialPolicy.template(of: "getty@.service"))
    }

    func testMalformedPoliciesAreRefusedNamingTheProblem() {
        assertRefused("", "malformed")
        assertRefused("[]", "the top level must be an object")
        assertRefused(#"{"unit": {}}"#, #"unknown key "unit""#)
        assertRefused(#"{"units": []}"#, #""units" must be an object"#)
        assertRefused(#"{"units": {}, "units": {}}"#, #"gives "units" twice"#)
        assertRefused(#"{"units": {"a.service": {"credentials": {"x": "s/a"}}}}"#, #"needs "access-groups""#)
        assertRefused(#"{"units": {"a.service": {"access-groups": [], "credentials": {"x": "s/a"}}}}"#, #"needs "access-groups""#)
        assertRefused(#"{"units": {"a.service": {"access-groups": [1], "credentials": {}}}}"#, "must be strings")
        assertRefused(#"{"units": {"a.service": {"access-groups": [""], "credentials": {}}}}"#, "empty, too long or has control characters")
        assertRefused(#"{"units": {"a.service": {"access-groups": ["g"]}}}"#, #"needs "credentials""#)
        assertRefused(#"{"units": {"a.service": {"access-groups": ["g"], "credentials": {}, "groups": []}}}"#, #"unknown key "groups""#)
        assertRefused(#"{"units": {"a.service": {"access-groups": ["g"], "credentials": {"x": "no-slash"}}}}"#, "not a secret reference")
        assertRefused(#"{"units": {"a.service": {"access-groups": ["g"], "credentials": {"x": 7}}}}"#, "must be a secret reference")
        assertRefused(#"{"units": {"a.service": {"access-groups": ["g"], "credentials": {"x": "s/a", "x": "s/b"}}}}"#, "given twice")
        assertRefused(#"{"units": {"a.service": {"access-groups": ["g"], "credentials": {"a/b": "s/a"}}}}"#, "not a credential ID")
        assertRefused(#"{"units": {"a.service": {"access-groups": ["g"], "credentials": {"..": "s/a"}}}}"#, "not a credential ID")
        assertRefused(#"{"units": {"a.service": {"access-groups": ["g"], "credentials": {}}, "a.service": {"access-groups": ["g"], "credentials": {}}}}"#, "given twice")
        for name in ["", "deploy", "a/b.service", "a b.service", "a\\u0001.service"] {
            assertRefused(#"{"units": {"\#(name)": {"access-groups": ["g"], "credentials": {}}}}"#, "is not a unit name")
        }
    }

    /// A credential socket run with entitlements can hand out only its own groups.
    func testAnAppServerGrantsOnlyItsOwnGroups() throws {
        let entitlements = try Entitlements.parse(Array(#"{"keychain-access-groups": ["deploy", "shared"]}"#.utf8), name: "e")
        let own = #"{"units": {"deploy.service": {"access-groups": ["deploy", "shared"], "credentials": {"t": "github/deploy"}}}}"#
        XCTAssertEqual(try parse(own, server: .app(entitlements)).grant(unit: "deploy.service", credential: "t")?.caller.accessGroups, ["deploy", "shared"])
        assertRefused(Self.policy, "not in the credential socket's own entitlements", server: .app(entitlements))
    }

    /// The file is checked as an entitlements file is: a policy anyone else
    /// could rewrite would let them hand out the keychain.
    func testThePolicyFileIsCheckedLikeAnEntitlementsFile() throws {
        var template = Array("/tmp/locket-policy.XXXXXX".utf8CString)
        let directory = String(cString: try XCTUnwrap(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/credentials.json"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(Self.policy.utf8), attributes: [.posixPermissions: 0o644]))
        XCTAssertNotNil(try CredentialPolicy.load(path: path, server: .owner).grant(unit: "deploy.service", credential: "github-token"))
        chmod(path, 0o664)
        XCTAssertThrowsError(try CredentialPolicy.load(path: path, server: .owner)) { error in
            XCTAssertEqual((error as? KeychainError)?.message, "\(path): writable by other users (mode 664); run chmod 644 on it")
        }
        chmod(path, 0o644)
        chmod(directory, 0o777)
        XCTAssertThrowsError(try CredentialPolicy.load(path: path, server: .owner)) { error in
            XCTAssertTrue((error as? KeychainError)?.message.contains("locket refuses a credential policy file there") == true, "\(error)")
        }
        chmod(directory, 0o700)
        let fifo = directory + "/fifo.json"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertThrowsError(try CredentialPolicy.load(path: fifo, server: .owner)) { error in
            XCTAssertEqual((error as? KeychainError)?.message, "\(fifo): not a regular file (a FIFO)")
        }
        XCTAssertThrowsError(try CredentialPolicy.load(path: directory + "/missing.json", server: .owner)) { error in
            XCTAssertEqual((error as? KeychainError)?.message, "\(directory)/missing.json: cannot read the credential policy file: No such file or directory")
        }
    }

    // MARK: - The address systemd binds

    func address(_ text: String) -> [UInt8] { [0] + Array(text.utf8) }

    func testTheAbstractAddressNamesTheUnitAndCredential() {
        let parsed = CredentialServer.parse(address: address("5f2a9c01d3e4b6a7/unit/deploy.service/github-token"))
        XCTAssertEqual(parsed?.unit, "deploy.service")
        XCTAssertEqual(parsed?.credential, "github-token")
        // PRIx64: no leading zeros, so as short as one digit.
        XCTAssertEqual(CredentialServer.parse(address: address("0/unit/a@b.service/x"))?.unit, "a@b.service")
        for bad in ["", "5f/unit/deploy.service", "5f/unit/deploy.service/id/more", "5g/unit/a.service/id", "/unit/a.service/id",
                    "12345678901234567/unit/a.service/id", "5f/units/a.service/id", "5f/unit//id", "5f/unit/a.service/",
                    "5f/unit/a\u{1}.service/id", "5f/unit/a.service/i\u{7f}d"] {
            XCTAssertNil(CredentialServer.parse(address: address(bad)), bad)
        }
        // A path the peer bound, not an abstract name; an unnamed peer; bytes that are not UTF-8.
        XCTAssertNil(CredentialServer.parse(address: Array("/tmp/5f/unit/a.service/id".utf8)))
        XCTAssertNil(CredentialServer.parse(address: []))
        XCTAssertNil(CredentialServer.parse(address: [0] + Array("5f/unit/".utf8) + [0xff] + Array(".service/id".utf8)))
    }
}
