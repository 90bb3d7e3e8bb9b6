import LocketSupport
import XCTest

/// locket's own substring search (Strings.swift), which keeps the standard
/// library's _StringProcessing, and with it the regex engine, out of the
/// static executable: it must find what the standard library's finds.
final class StringSearchTests: XCTestCase {
    private let texts = ["", "a", "https://host/path", "://", "x://y://z", "e\u{301}://", "cafe\u{301}", "ab", "aab", "abab",
                         "password authentication failed for user", "$(AppIdentifierPrefix)com.example"]
    private let patterns = ["", "a", "://", "ab", "e", "e\u{301}", "b", "password authentication failed", "$(AppIdentifierPrefix)", "zz"]

    func testFirstRangeAgreesWithTheStandardLibrary() {
        for text in texts {
            for pattern in patterns {
                // The standard library finds "" at the start of a string (not of an array): locket never searches for it.
                XCTAssertEqual(text.firstRange(matching: pattern), pattern.isEmpty ? nil : text.firstRange(of: pattern), "\"\(text)\" / \"\(pattern)\"")
                XCTAssertEqual(text.contains(occurrenceOf: pattern), text.contains(pattern), "\"\(text)\" / \"\(pattern)\"")
                let bytes = Array(text.utf8), other = Array(pattern.utf8)
                XCTAssertEqual(bytes.firstRange(matching: other), bytes.firstRange(of: other), "bytes of \"\(text)\" / \"\(pattern)\"")
            }
        }
        let sub = "xx://yy".dropFirst()
        XCTAssertEqual(sub.firstRange(matching: "://"), sub.firstRange(of: "://"))
    }

    func testReplacingEveryOccurrence() {
        for text in texts {
            for pattern in patterns where !pattern.isEmpty {
                let expected = text.split(separator: pattern, omittingEmptySubsequences: false).joined(separator: "<>")
                XCTAssertEqual(text.replacing(every: pattern, with: "<>"), expected, "\"\(text)\" / \"\(pattern)\"")
            }
        }
        XCTAssertEqual("aaa".replacing(every: "aa", with: "b"), "ba")
        XCTAssertEqual("text".replacing(every: "", with: "b"), "text")
    }
}
