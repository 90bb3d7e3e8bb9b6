@testable import LocketCLI
import XCTest

/// Issue 13: `--tag` and `--hash` name keys and certificates, which come in
/// through import and key generate; only the commands that query items take
/// them, so `add` and `otp` don't offer an option that could only fail.
final class KeyTermParsingTests: XCTestCase {
    func testOnlyQueryingCommandsTakeTagAndHash() throws {
        for arguments in [["add", "--tag", "t", "-s", "s"], ["add", "--hash", "ab"], ["otp", "--tag", "t"], ["otp", "--hash", "ab"]] {
            XCTAssertThrowsError(try Parser.parse(arguments), "\(arguments)") { error in
                XCTAssertTrue(error is UsageError, "\(arguments): \(error)")
            }
        }
        for arguments in [["find", "--class", "keys", "--tag", "t"], ["find", "--class", "cert", "--hash", "ab"],
                          ["update", "--class", "keys", "--tag", "t", "--set", "label=x"], ["delete", "--class", "identity", "--tag", "t"]] {
            guard case .run(_, let invocation) = try Parser.parse(arguments) else { return XCTFail("\(arguments) did not parse to a run") }
            XCTAssertTrue(invocation.has("tag") || invocation.has("hash"), "\(arguments)")
        }
    }
}
