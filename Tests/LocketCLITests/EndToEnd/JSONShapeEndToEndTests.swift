import Foundation
import XCTest

/// The JSON contract (SPEC §3, §8): the exact keys of a generic and an
/// internet password, RFC 3339 dates, and `data` / `dataBase64`.
final class EndToEndJSONShapeTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    static let common: Set<String> = ["class", "account", "label", "description", "comment", "creator", "type",
                                      "accessGroup", "accessible", "creationDate", "modificationDate", "persistentRef"]
    static let genericKeys = common.union(["service", "generic"])
    static let internetKeys = common.union(["server", "securityDomain", "protocol", "authenticationType", "port", "path"])

    override func setUpWithError() throws {
        try super.setUpWithError()
        // Item dates on a clock the test sets (issue 38): "now" is exactly its reading.
        clock = VirtualClock(start: 1_700_000_000_123)
        initKeychain()
    }

    func testGenericPasswordKeys() throws {
        add("-s", "svc", "-a", "me", "-l", "L", "-D", "D", "-j", "J", "-G", "G", "-c", "crtr", "-C", "type", "-g", "grp",
            secret: "sekrit")
        let object = try expect(0, "--json", "find", "-s", "svc").jsonObject()
        XCTAssertEqual(Set(object.keys), Self.genericKeys)
        let withData = try expect(0, "--json", "find", "-s", "svc", "-g").jsonObject()
        XCTAssertEqual(Set(withData.keys), Self.genericKeys.union(["data"]))
        XCTAssertEqual(object["class"] as? String, "genp")
        XCTAssertEqual(object["accessible"] as? String, "when-unlocked")
        XCTAssertEqual(object["accessGroup"] as? String, "grp")
        XCTAssertEqual(object["creator"] as? String, "crtr")
        XCTAssertEqual(object["generic"] as? String, "Rw==")
        try assertDates(object)
        // A sparse item has the same keys (empty values), so scripts can rely on them.
        add("-s", "sparse")
        XCTAssertEqual(Set(try expect(0, "--json", "find", "-s", "sparse").jsonObject().keys), Self.genericKeys)
        // --show-ref changes nothing in JSON: the reference is always there.
        XCTAssertEqual(Set(try expect(0, "--json", "find", "-s", "svc", "--show-ref").jsonObject().keys), Self.genericKeys)
    }

    func testInternetPasswordKeys() throws {
        add("--class", "inet", "-s", "h.example", "-a", "me", "-r", "https", "-P", "443", "-p", "/", "-d", "D", "-t", "form",
            "-l", "L", "-D", "D", "-j", "J", "-c", "crtr", "-C", "type", secret: "sekrit")
        let object = try expect(0, "--json", "find", "--class", "inet", "-s", "h.example").jsonObject()
        XCTAssertEqual(Set(object.keys), Self.internetKeys)
        XCTAssertEqual(object["class"] as? String, "inet")
        XCTAssertEqual(object["port"] as? Int, 443)
        XCTAssertTrue(object["port"] is NSNumber, "port is a number")
        try assertDates(object)
        let binary = [UInt8](arrayLiteral: 0xff, 0x00, 0xfe)
        addBytes("--class", "inet", "-s", "bin.example", data: binary)
        let withData = try expect(0, "--json", "find", "--class", "inet", "-s", "bin.example", "-g").jsonObject()
        XCTAssertEqual(Set(withData.keys), Self.internetKeys.union(["dataBase64"]))
        XCTAssertEqual(withData["dataBase64"] as? String, "/wD+")
        XCTAssertEqual(withData["port"] as? Int, 0)
    }

    func testOutputIsOneDocumentPerLine() throws {
        add("-s", "a")
        add("-s", "b")
        let one = expect(0, "--json", "find", "-s", "a")
        XCTAssertTrue(one.out.hasPrefix("{") && one.out.hasSuffix("}\n"), one.out)
        let many = expect(0, "--json", "find", "--all")
        XCTAssertTrue(many.out.hasPrefix("[") && many.out.hasSuffix("]\n"), many.out)
        XCTAssertEqual(try many.jsonArray().count, 2)
    }

    private func assertDates(_ object: [String: Any], file: StaticString = #filePath, line: UInt = #line) throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for key in ["creationDate", "modificationDate"] {
            let text = try XCTUnwrap(object[key] as? String, key, file: file, line: line)
            let date = try XCTUnwrap(formatter.date(from: text), "\(key) is not RFC 3339: \(text)", file: file, line: line)
            XCTAssertEqual(date.timeIntervalSince1970, clock!.seconds, accuracy: 0.0005, "\(key) is not now: \(text)", file: file, line: line)
        }
    }
}
