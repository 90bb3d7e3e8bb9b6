import Foundation
import XCTest
@testable import LocketCore
@testable import LocketLocator
@testable import LocketRemote

/// `KeychainLocator.resolve` (issue 25): the one answer to "which keychain"
/// for every command, the agent and in-process callers.
final class KeychainLocatorTests: XCTestCase {
    private var temporary: TemporaryKeychain!

    override func setUpWithError() throws { temporary = try TemporaryKeychain(name: "login") }
    override func tearDown() { temporary?.remove() }

    private var data: String { temporary.directory + "/data/locket" }

    private func resolve(_ spec: String?, _ extra: [String: String] = [:]) throws -> KeychainLocation {
        var variables = [
            "HOME": temporary.directory, "XDG_DATA_HOME": temporary.directory + "/data",
            "XDG_STATE_HOME": temporary.directory + "/state", "XDG_RUNTIME_DIR": temporary.directory + "/run", "LOCKET_SESSION": "dir",
        ]
        for (name, value) in extra { variables[name] = value }
        return try KeychainLocator.resolve(spec, environment: Environment(variables))
    }

    private func isFile(_ location: KeychainLocation, _ path: String, file: StaticString = #filePath, line: UInt = #line) {
        guard case .file(let found) = location.place else { return XCTFail("\(location) is not a file", file: file, line: line) }
        XCTAssertEqual(found, path, file: file, line: line)
        XCTAssertFalse(location.requiresPassword, file: file, line: line)
    }

    func testNothingNamedIsTheLoginKeychainAndLocketKeychainNamesAnother() throws {
        isFile(try resolve(nil), data + "/login.keychain")
        isFile(try resolve(nil, ["LOCKET_KEYCHAIN": "work"]), data + "/work.keychain")
        isFile(try resolve(nil, ["LOCKET_KEYCHAIN": ""]), data + "/login.keychain")
        // -k wins over the environment.
        isFile(try resolve("ci", ["LOCKET_KEYCHAIN": "work"]), data + "/ci.keychain")
        isFile(try resolve("./x/y.keychain"), "./x/y.keychain")
        XCTAssertKeychainError(.param, try resolve(".."))
    }

    func testAURLIsARemoteKeychainAndABadOneIsRefusedHere() throws {
        let location = try resolve("postgres://team@db.example/keys?sslmode=verify-full")
        guard case .remote(let remote, let service) = location.place else { return XCTFail("\(location) is not remote") }
        XCTAssertEqual(remote.value("user"), "team")
        XCTAssertNil(service)
        XCTAssertEqual(location.description, "postgres://team@db.example/keys?sslmode=verify-full")
        XCTAssertTrue(location.requiresPassword)
        XCTAssertKeychainError(.param, try resolve("postgres://db.example/keys?nonsense=1"))
        XCTAssertKeychainError(.param, try resolve(nil, ["LOCKET_KEYCHAIN": "postgres://u:secret@db.example/keys"]))
    }

    /// A URL's escapes are undone by the one percent-decoder: `%XX` with two
    /// hexadecimal digits and nothing else (`%+f` parsed as a signed number before).
    func testAURLsEscapesAreTwoHexadecimalDigits() throws {
        XCTAssertEqual(try RemoteLocation(url: "postgres://t%65am@db.example/my%20keys").value("dbname"), "my keys")
        XCTAssertEqual(try RemoteLocation(url: "postgres://t%65am@db.example/keys").value("user"), "team")
        for broken in ["postgres://db.example/k%+feys", "postgres://db.example/keys%4", "postgres://db.example/k%zzeys"] {
            XCTAssertKeychainError(.param, try RemoteLocation(url: broken), broken)
        }
    }

    /// A registered name counts where no keychain file has it; a file of that name wins.
    func testARegisteredNameIsRemoteUnlessAFileHasIt() throws {
        let environment = Environment([
            "HOME": temporary.directory, "XDG_DATA_HOME": temporary.directory + "/data",
            "XDG_STATE_HOME": temporary.directory + "/state", "XDG_RUNTIME_DIR": temporary.directory + "/run",
        ])
        try RemoteRegistry.add(name: "team", url: "postgres://ci@db.example/keys", passwordService: "pg-team", environment: environment)
        let location = try resolve("team")
        guard case .remote(let remote, let service) = location.place else { return XCTFail("\(location) is not remote") }
        XCTAssertEqual(remote.url, "postgres://ci@db.example/keys")
        XCTAssertEqual(service, "pg-team")
        isFile(try resolve("nobody"), data + "/nobody.keychain")
        // A keychain file made under the name afterwards is the one meant.
        try Keychain.create(at: data + "/team.keychain", password: nil, kdf: .weakForTests, environment: temporary.environment)
        isFile(try resolve("team"), data + "/team.keychain")
    }

    func testOpeningALocationOpensItsKeychain() throws {
        try temporary.open().add(genp("svc", "acct"), data: secret("s3cret"))
        let keychain = try Keychain.open(try resolve(nil), environment: temporary.environment)
        XCTAssertEqual(keychain.path, temporary.path)
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"]), returnData: true).first?.secretString, "s3cret")
        XCTAssertKeychainError(.noSuchKeychain, try Keychain.open(try resolve("nobody"), environment: temporary.environment))
        XCTAssertEqual(KeychainKeySource(location: try resolve(nil), caller: .owner, environment: temporary.environment).path, temporary.path)
    }

    /// In-process callers (the Security module) key what they keep open by
    /// location and ask whether it is a file they can watch.
    func testLocationsCompareByWhatTheyNameAndTellAFileFromADatabase() throws {
        XCTAssertEqual(try resolve(nil), try resolve("login"))
        XCTAssertEqual(try resolve(nil).filePath, data + "/login.keychain")
        XCTAssertNotEqual(try resolve("work"), try resolve("login"))
        let url = "postgres://team@db.example/keys"
        XCTAssertEqual(try resolve(url), try resolve(nil, ["LOCKET_KEYCHAIN": url]))
        XCTAssertEqual(Set([try resolve(url), try resolve(url), try resolve(nil)]).count, 2)
        XCTAssertNil(try resolve(url).filePath)
        XCTAssertNotEqual(KeychainLocation.remote(try RemoteLocation(url: url)),
                          KeychainLocation.remote(try RemoteLocation(url: url), passwordService: "pg-team"))
        XCTAssertNotEqual(KeychainLocation.remote(try RemoteLocation(url: url)), KeychainLocation.file(url))
    }
}
