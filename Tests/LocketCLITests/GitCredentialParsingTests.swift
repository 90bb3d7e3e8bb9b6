import LocketCLI
import XCTest

/// The git credential protocol reader, including the inputs the fuzzer found.
final class GitCredentialParsingTests: XCTestCase {
    private func parse(_ text: String) -> [String: String] { GitCredential(parsing: Array(text.utf8)).fields }

    func testKeyValueLinesUpToTheBlankLine() {
        XCTAssertEqual(parse("protocol=https\nhost=example.com\npassword=a=b\n\nafter=ignored\n"),
                       ["protocol": "https", "host": "example.com", "password": "a=b"])
    }

    func testMalformedLinesAreSkippedAndTheFirstValueWins() {
        XCTAssertEqual(parse("noequals\n=value\nhost=one\nhost=two\r\n"), ["host": "one"])
    }

    func testURLFillsOnlyTheMissingFields() {
        XCTAssertEqual(parse("url=https://bob:pw@example.com:8443/a%20b.git\nusername=alice\n"),
                       ["url": "https://bob:pw@example.com:8443/a%20b.git", "protocol": "https", "host": "example.com:8443",
                        "username": "alice", "password": "pw", "path": "a b.git"])
    }

    /// Regression (found by fuzz/FuzzCredential): a percent-encoded NUL or
    /// line break in a URL must not reach a field, or `get` could inject
    /// protocol lines (as in CVE-2020-5260).
    func testPercentEncodedLineBreaksNeverReachAField() {
        let fields = parse("url=https://bob%0apassword=evil:x%00y@example.com/p%0d\n")
        XCTAssertNil(fields["username"])
        XCTAssertNil(fields["password"])
        XCTAssertNil(fields["path"])
        XCTAssertEqual(fields["host"], "example.com")
        for value in fields.values where value != fields["url"] {
            XCTAssertFalse(value.contains("\n") || value.contains("\r") || value.contains("\0"))
        }
    }
}
