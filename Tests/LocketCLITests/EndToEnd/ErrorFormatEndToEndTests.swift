import Foundation
import XCTest

/// Errors on stderr: `locket: error: ... (errSecName -NNNNN)`, or a JSON object with --json.
final class EndToEndErrorFormatTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "svc", "-a", "me")
    }

    func testTextError() {
        let result = expect(44, "find", "-s", "missing")
        XCTAssertEqual(result.err, "locket: error: the item could not be found (errSecItemNotFound -25300)\n")
        XCTAssertEqual(result.stdout, [])
    }

    func testErrorsCarryStatusNameAndValue() {
        let cases: [([String], Int32, String, Int32)] = [
            (["add", "-s", "svc", "-a", "me"], 45, "errSecDuplicateItem", -25299),
            (["find", "--server", "x"], 41, "errSecNoSuchAttr", -25303),
            (["find", "--class", "nope"], 38, "errSecNoSuchClass", -25306),
            (["-k", "absent", "find"], 50, "errSecNoSuchKeychain", -25294),
            (["init", "--no-password"], 48, "errSecDuplicateKeychain", -25296),
            (["delete"], 206, "errSecParam", -50),
            (["update", "-s", "svc", "--set", "accessible=sometimes"], 206, "errSecParam", -50),
        ]
        for (args, status, name, value) in cases {
            let result = locket(args)
            XCTAssertEqual(result.status, status, result.summary)
            assertError(result, name, value)
        }
    }

    func testJSONError() throws {
        let result = expect(44, "--json", "find", "-s", "missing")
        XCTAssertEqual(result.stdout, [])
        XCTAssertEqual(result.err.filter { $0 == "\n" }.count, 1, "one line: \(result.err)")
        let object = try result.jsonError()
        XCTAssertEqual(Set(object.keys), ["error", "status", "message"])
        XCTAssertEqual(object["error"] as? String, "errSecItemNotFound")
        XCTAssertEqual(object["status"] as? Int, -25300)
        XCTAssertEqual(object["message"] as? String, "the item could not be found")

        // Errors with a hint keep the three keys (and may add the hint).
        ok("lock")
        let locked = expect(36, "find", "-s", "svc", "--json")
        let lockedObject = try locked.jsonError()
        XCTAssertTrue(Set(lockedObject.keys).isSuperset(of: ["error", "status", "message"]), locked.err)
        XCTAssertTrue(Set(lockedObject.keys).isSubset(of: ["error", "status", "message", "hint"]), locked.err)
        XCTAssertEqual(lockedObject["error"] as? String, "errSecInteractionNotAllowed")
        XCTAssertEqual(lockedObject["status"] as? Int, -25308)
        XCTAssertFalse(locked.err.contains("locket: error:"), "JSON errors are not also printed as text")

        let env = expect(50, "-k", "absent", "find", environment: ["LOCKET_FORMAT": "json"])
        XCTAssertEqual(try env.jsonError()["error"] as? String, "errSecNoSuchKeychain")
    }
}
