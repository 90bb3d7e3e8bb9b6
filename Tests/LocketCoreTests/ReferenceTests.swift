import LocketCore
import XCTest

/// Secret references as `exec` takes them (SPEC §9): `SERVICE/ACCOUNT` for a
/// generic password (`%2F` for a slash inside a name) and
/// `SCHEME://[USER@]HOST[:PORT][/PATH]` for an internet password. Left-out
/// parts are wildcards; anything malformed is errSecParam.
final class ReferenceTests: XCTestCase {
    /// The query's equalities as text (ports as numbers).
    private func parts(_ reference: String, file: StaticString = #filePath, line: UInt = #line) throws -> (ItemClass, [Attribute: String]) {
        let query = try Reference.query(reference)
        var out: [Attribute: String] = [:]
        for (attribute, value) in query.attributes {
            XCTAssertNil(out[attribute], "\(attribute) twice", file: file, line: line)
            out[attribute] = attribute == .port ? String(AttributeValue.port(value)) : String(decoding: value, as: UTF8.self)
        }
        XCTAssertNil(query.accessGroup, file: file, line: line)
        XCTAssertNil(query.persistentRef, file: file, line: line)
        return (query.itemClass, out)
    }

    func testServiceAndAccount() throws {
        let (itemClass, attributes) = try parts("github/deploy")
        XCTAssertEqual(itemClass, .genericPassword)
        XCTAssertEqual(attributes, [.service: "github", .account: "deploy"])
        XCTAssertEqual(try parts("svc/").1, [.service: "svc", .account: ""], "an empty account is an account")
        XCTAssertEqual(try parts("a b/c d").1, [.service: "a b", .account: "c d"])
        XCTAssertEqual(try parts("servicé/账户").1, [.service: "servicé", .account: "账户"])
    }

    func testPercentEscapes() throws {
        XCTAssertEqual(try parts("ci%2Fgithub/bot%2Fone").1, [.service: "ci/github", .account: "bot/one"])
        XCTAssertEqual(try parts("ci%2fgithub/x").1, [.service: "ci/github", .account: "x"], "hex digits in either case")
        XCTAssertEqual(try parts("100%25/x").1, [.service: "100%", .account: "x"])
        XCTAssertEqual(try parts("a%3Ab/%C3%A9").1, [.service: "a:b", .account: "é"])
    }

    func testMalformedGenericReferences() {
        for reference in ["", "github", "a/b/c", "/account", "%2F", "svc%2/x", "svc%/x", "svc%zz/x", "svc/x%", "svc%ff/x", "svc%00x%C3/x"] {
            XCTAssertKeychainError(.param, try Reference.query(reference), reference)
        }
    }

    func testInternetReferences() throws {
        let (itemClass, attributes) = try parts("https://alice@git.example.com:8443/org/repo.git")
        XCTAssertEqual(itemClass, .internetPassword)
        XCTAssertEqual(attributes, [.protocol: "htps", .account: "alice", .server: "git.example.com", .port: "8443",
                                    .path: "org/repo.git"])
        // Left-out parts are not in the query at all (wildcards).
        XCTAssertEqual(try parts("https://git.example.com").1, [.protocol: "htps", .server: "git.example.com"])
        XCTAssertEqual(try parts("ssh://git@host").1, [.protocol: "ssh ", .account: "git", .server: "host"])
        XCTAssertEqual(try parts("http://host:80").1, [.protocol: "http", .server: "host", .port: "80"])
        XCTAssertEqual(try parts("https://host/").1, [.protocol: "htps", .server: "host"], "an empty path is no path")
        XCTAssertEqual(try parts("HTTPS://host").1[.protocol], "htps", "the scheme is case-insensitive")
        // The user may contain an @ (the last one separates) and escapes.
        XCTAssertEqual(try parts("https://me%40example.com@host").1[.account], "me@example.com")
        XCTAssertEqual(try parts("https://me@example.com@host").1, [.protocol: "htps", .account: "me@example.com", .server: "host"])
        XCTAssertEqual(try parts("https://host/a%20b").1[.path], "a b")
        // IPv6 literals keep their brackets; a port may follow.
        XCTAssertEqual(try parts("https://[::1]:8443/x").1, [.protocol: "htps", .server: "[::1]", .port: "8443", .path: "x"])
        XCTAssertEqual(try parts("https://[::1]").1, [.protocol: "htps", .server: "[::1]"])
    }

    func testMalformedInternetReferences() {
        for reference in ["nosuch://host", "://host", "https://", "https://user@", "https:///path", "https://host:",
                          "https://host:port", "https://host:65536", "https://host:-1", "https://ho%zzst"] {
            XCTAssertKeychainError(.param, try Reference.query(reference), reference)
        }
    }

    func testErrorsQuoteTheReferenceButStayShort() {
        do {
            _ = try Reference.query(String(repeating: "x", count: 10_000))
            XCTFail("accepted")
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .param)
            XCTAssertLessThan(error.message.count, 1000, "the message clips the reference")
        } catch {
            XCTFail("\(error)")
        }
    }
}
