@testable import LocketCLI
import LocketCore
import XCTest

/// The `exec --mask` filter in-process (issue 11, defect 5): only a proper
/// prefix of a secret is ever held, so a run of back-to-back secrets is
/// written as it goes instead of piling up until the stream pauses or ends.
final class MaskerTests: XCTestCase {
    private func feed(_ masker: inout Masker, _ text: String) -> String {
        String(decoding: Array(text.utf8).withUnsafeBytes { masker.feed($0) }, as: UTF8.self)
    }

    func testARunOfSecretsIsWrittenAsItGoes() throws {
        var masker = Masker(secrets: [try SecureBytes(copying: Array("aa".utf8))])
        XCTAssertEqual(feed(&masker, "x aaa"), "x <redacted>", "the run's <redacted> waits for nothing")
        for _ in 0..<1000 { XCTAssertEqual(feed(&masker, "aaa"), "") }
        XCTAssertEqual(feed(&masker, "b "), "b ", "a continued run gets no second <redacted>")
        XCTAssertEqual(feed(&masker, "a"), "")
        XCTAssertEqual(String(decoding: masker.finish(), as: UTF8.self), "a", "the end of the stream decides a held prefix")
    }

    func testAHeldPrefixInsideARunStaysHiddenWhateverFollows() throws {
        // "tok-123" then "123-xyz" overlapping it: the second may or may not complete.
        let secrets = try ["tok-123", "123-xyz"].map { try SecureBytes(copying: Array($0.utf8)) }
        for (tail, expected) in [("-xyz]", "[<redacted>]"), ("-xy]", "[<redacted>-xy]"), ("]", "[<redacted>]")] {
            var masker = Masker(secrets: secrets)
            var out = feed(&masker, "[tok-123")
            XCTAssertEqual(out, "[<redacted>")
            out += feed(&masker, tail)
            out += String(decoding: masker.finish(), as: UTF8.self)
            XCTAssertEqual(out, expected, tail)
        }
    }
}
