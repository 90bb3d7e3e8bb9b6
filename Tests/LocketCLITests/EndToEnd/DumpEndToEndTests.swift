import Foundation
import XCTest

/// `dump` and `dump --data`, as text and JSON, unlocked and locked.
final class EndToEndDumpTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    private func addThree() {
        add("-s", "first", "-a", "me", secret: "one")
        add("--class", "inet", "-s", "second.example", "-a", "me", "-r", "https", secret: "two")
        add("-s", "third", "--accessible", "after-first-unlock", secret: "three")
    }

    func testDumpText() {
        addThree()
        let result = ok("dump")
        let blocks = result.out.components(separatedBy: "\n\n")
        XCTAssertEqual(blocks.count, 3, result.out)
        XCTAssertTrue(blocks[0].contains("class: genp") && blocks[0].contains("service: first"), blocks[0])
        XCTAssertTrue(blocks[1].contains("class: inet") && blocks[1].contains("server: second.example"), blocks[1])
        XCTAssertTrue(blocks[1].contains("protocol: htps"), blocks[1])
        XCTAssertTrue(blocks[2].contains("service: third") && blocks[2].contains("accessible: after-first-unlock"), blocks[2])
        XCTAssertTrue(blocks.allSatisfy { $0.contains("ref: ") }, "dump shows references")
        XCTAssertFalse(result.out.contains("data:"), "dump without --data must not show secrets")
        for secret in ["one", "two", "three"] { XCTAssertFalse(result.out.contains(": \(secret)\n")) }

        let withData = ok("dump", "--data")
        let dataLines = withData.out.split(separator: "\n").filter { $0.hasPrefix("data: ") }
        XCTAssertEqual(dataLines, ["data: one", "data: two", "data: three"])
    }

    func testDumpJSON() throws {
        addThree()
        let items = try ok("--json", "dump").jsonArray()
        XCTAssertEqual(items.map { $0["class"] as? String }, ["genp", "inet", "genp"])
        XCTAssertEqual(items[0]["service"] as? String, "first")
        XCTAssertEqual(items[1]["server"] as? String, "second.example")
        XCTAssertTrue(items.allSatisfy { $0["data"] == nil && $0["dataBase64"] == nil })
        XCTAssertTrue(items.allSatisfy { ($0["persistentRef"] as? String)?.count == 32 })
        let withData = try ok("dump", "--data", "--json").jsonArray()
        XCTAssertEqual(withData.map { $0["data"] as? String }, ["one", "two", "three"])
    }

    func testDumpOfEmptyKeychain() throws {
        XCTAssertEqual(ok("dump").out, "")
        XCTAssertEqual(try ok("--json", "dump").jsonArray().count, 0)
        XCTAssertEqual(try ok("--json", "dump", "--data").jsonArray().count, 0)
    }

    func testDumpWhileLocked() throws {
        addThree()
        ok("lock")
        // Without --data the items are listed, the locked ones as locked.
        let text = expect(0, "dump")
        XCTAssertEqual(text.out.components(separatedBy: "class: ").count - 1, 3, text.out)
        XCTAssertTrue(text.out.contains("status: locked"), text.out)
        XCTAssertTrue(text.out.contains("service: third"), "an after-first-unlock item is still open after lock: \(text.out)")
        let json = try expect(0, "--json", "dump").jsonArray()
        XCTAssertEqual(json.map { $0["status"] as? String }, ["locked", "locked", "available"])
        XCTAssertNil(json[0]["service"], "a locked item's attributes are sealed")
        // With --data it fails as a whole.
        let data = expect(36, "dump", "--data")
        assertError(data, "errSecInteractionNotAllowed", -25308)
        let dataJSON = expect(36, "--json", "dump", "--data")
        XCTAssertEqual(try dataJSON.jsonError()["status"] as? Int, -25308)
        XCTAssertEqual(dataJSON.stdout, [], "nothing may be streamed before the failure")
    }
}
