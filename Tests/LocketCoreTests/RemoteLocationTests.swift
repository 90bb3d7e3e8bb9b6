import XCTest
@testable import LocketCore
@testable import LocketRemote

/// Issue 42 item 1: every libpq form that selects among hosts is taken as
/// libpq takes it (main split `h1:p1,h2:p2` at its last colon, "could not
/// translate host name", and refused `port=p1,p2` as not a number).
final class RemoteLocationTests: XCTestCase {
    private func keywords(_ url: String) throws -> [String: String] {
        Dictionary(try RemoteLocation(url: url).parameters, uniquingKeysWith: { $1 })
    }

    func testAHostListWithPortsBecomesLibpqsHostAndPortLists() throws {
        XCTAssertEqual(try keywords("postgresql://u@h1:5433,h2:5434/db?target_session_attrs=read-write"),
                       ["user": "u", "host": "h1,h2", "port": "5433,5434", "dbname": "db", "target_session_attrs": "read-write"])
        // A host without a port takes the default: an empty entry, as libpq makes it.
        XCTAssertEqual(try keywords("postgres://h1:5433,h2/db"), ["host": "h1,h2", "port": "5433,", "dbname": "db"])
        XCTAssertEqual(try keywords("postgres://h1,h2/db"), ["host": "h1,h2", "dbname": "db"])
        XCTAssertEqual(try keywords("postgres://[::1]:5433,[fe80::1]/db"), ["host": "::1,fe80::1", "port": "5433,", "dbname": "db"])
        XCTAssertEqual(try keywords("postgres://%2Frun%2Fa:5433,%2Frun%2Fb:5434/db"), ["host": "/run/a,/run/b", "port": "5433,5434", "dbname": "db"])
        // One host, as before.
        XCTAssertEqual(try keywords("postgres://db.example:6432/keys"), ["host": "db.example", "port": "6432", "dbname": "keys"])
        XCTAssertEqual(try keywords("postgres://:6432/keys"), ["port": "6432", "dbname": "keys"])
    }

    func testHostAndPortListsAsKeywordsAndTheHostSelectingKeywords() throws {
        XCTAssertEqual(try keywords("postgres:///db?host=/run/a,/run/b&port=5433,5434&target_session_attrs=primary"),
                       ["host": "/run/a,/run/b", "port": "5433,5434", "dbname": "db", "target_session_attrs": "primary"])
        XCTAssertEqual(try keywords("postgres:///db?host=a,b,c&port=5433"), ["host": "a,b,c", "port": "5433", "dbname": "db"])
        XCTAssertEqual(try keywords("postgres://a,b/db?load_balance_hosts=random")["load_balance_hosts"], "random")
        XCTAssertEqual(try keywords("postgres:///db?hostaddr=127.0.0.1,127.0.0.2&port=1,2")["hostaddr"], "127.0.0.1,127.0.0.2")
        // A keyword after the host list wins, as in libpq.
        XCTAssertEqual(try keywords("postgres://a:1,b:2/db?port=7")["port"], "7")
    }

    func testPortsThatLibpqWouldRefuseAreRefusedHere() throws {
        for (url, words) in [
            ("postgres://h1:5433,h2:x/db", "not a number"),
            ("postgres:///db?host=a,b&port=5433,0", "not a number"),
            ("postgres:///db?host=a,b&port=1,2,3", "3 ports for 2 hosts"),
            ("postgres://h1:1,h2:2/db?host=only", "2 ports for 1 host"),
            ("postgres://[::1/db", "without its ]"),
            ("postgres://[::1]x/db", "follows an IPv6 address"),
        ] {
            XCTAssertThrowsError(try RemoteLocation(url: url), url) { error in
                XCTAssertEqual((error as? KeychainError)?.code, .param, "\(error)")
                XCTAssertTrue("\(error)".contains(words), "\(url): \(error)")
            }
        }
    }

    /// `keychain add-remote --replace`: the name points elsewhere, its password service kept unless another is named.
    func testARegisteredRemoteIsRePointedOnlyWhenAsked() throws {
        let temporary = try TemporaryKeychain(name: "login")
        defer { temporary.remove() }
        let environment = temporary.environment
        try RemoteRegistry.add(name: "team", url: "postgres://ci@db1/keys", passwordService: "pg-team", environment: environment)
        XCTAssertKeychainError(.duplicateKeychain, try RemoteRegistry.add(name: "team", url: "postgres://ci@db2/keys", passwordService: nil,
                                                                       environment: environment))
        XCTAssertKeychainError(.noSuchKeychain, try RemoteRegistry.add(name: "other", url: "postgres://db2/keys", passwordService: nil,
                                                                    replacing: true, environment: environment))
        XCTAssertKeychainError(.duplicateKeychain, try RemoteRegistry.add(name: "login", url: "postgres://db2/keys", passwordService: nil,
                                                                       replacing: true, environment: environment))
        let old = try RemoteRegistry.add(name: "team", url: "postgres://ci@db1:5432,db2:5432/keys?target_session_attrs=read-write",
                                         passwordService: nil, replacing: true, environment: environment)
        XCTAssertEqual(old?.url, "postgres://ci@db1/keys")
        let now = try XCTUnwrap(try RemoteRegistry.lookup("team", environment: environment))
        XCTAssertEqual(now.url, "postgres://ci@db1:5432,db2:5432/keys?target_session_attrs=read-write")
        XCTAssertEqual(now.passwordService, "pg-team")
        try RemoteRegistry.add(name: "team", url: "postgres://ci@db3/keys", passwordService: "pg-other", replacing: true, environment: environment)
        XCTAssertEqual(try RemoteRegistry.lookup("team", environment: environment)?.passwordService, "pg-other")
    }
}
