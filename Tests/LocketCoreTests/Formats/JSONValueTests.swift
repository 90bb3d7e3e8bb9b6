@testable import LocketCore
import XCTest

/// The one JSON reader's options and member rules, which its three users
/// (entitlements, vault exports, docker credentials) rely on differently.
final class JSONValueTests: XCTestCase {
    func parse(_ text: String, _ options: JSONValue.Options = JSONValue.Options()) throws -> (JSONValue, SecureBytes) {
        let input = try SecureBytes(copying: Array(text.utf8))
        return (try JSONValue.parse(input, options: options), input)
    }

    func testLoneSurrogatesAreRefusedUnlessAsked() throws {
        for text in [#"["\ud800"]"#, #"["\udc00"]"#, #"["\ud800x"]"#, #"["\ud800\u0041"]"#, #"["\ud800\ud800"]"#] {
            XCTAssertThrowsError(try parse(text), text)
            let (value, input) = try parse(text, JSONValue.Options(loneSurrogates: true))
            XCTAssertTrue(String(decoding: value.array![0].bytes(in: input), as: UTF8.self).contains("\u{fffd}"), text)
        }
        let (pair, input) = try parse(#"["\ud83d\udd11"]"#)
        XCTAssertEqual(String(decoding: pair.array![0].bytes(in: input), as: UTF8.self), "🔑")
    }

    func testDepthCountsContainersWithTheOutermost() throws {
        let options = JSONValue.Options(maximumDepth: 5)
        XCTAssertNoThrow(try parse(String(repeating: "[", count: 5) + "1" + String(repeating: "]", count: 5), options))
        XCTAssertThrowsError(try parse(String(repeating: "[", count: 6) + String(repeating: "]", count: 6), options))
        XCTAssertNoThrow(try parse(String(repeating: #"{"a":"#, count: 5) + "null" + String(repeating: "}", count: 5), options))
        XCTAssertThrowsError(try parse(String(repeating: #"{"a":"#, count: 6) + "null" + String(repeating: "}", count: 6), options))
    }

    func testEqualKeysAreAllKeptForEachReaderToChoose() throws {
        let (value, input) = try parse(#"{"Secret":"first","secret":"second","SECRET":"third","other":1}"#)
        XCTAssertEqual(value["Secret"]?.bytes(in: input), Array("first".utf8))
        XCTAssertEqual(value.lastMember(matching: "secret")?.bytes(in: input), Array("third".utf8))
        XCTAssertEqual(value.lastMember(matching: "Other")?.isString, false)
        XCTAssertNil(value.lastMember(matching: "missing"))
    }
}
