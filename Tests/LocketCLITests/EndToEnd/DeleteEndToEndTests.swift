import Foundation
import XCTest

/// `delete`: every match, the guard against an unqualified delete, `--all`.
final class EndToEndDeleteTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "a", "-a", "shared", secret: "1")
        add("-s", "b", "-a", "shared", secret: "2")
        add("-s", "c", "-a", "other", secret: "3")
        add("--class", "inet", "-s", "h.example", "-a", "shared", secret: "4")
    }

    private func services() throws -> [String] {
        let result = locket("--json", "find", "--all")
        if result.status == 44 { return [] }
        return try result.jsonArray().compactMap { $0["service"] as? String }
    }

    func testRemovesEveryMatch() throws {
        ok("delete", "-a", "shared")
        XCTAssertEqual(try services(), ["c"])
        // Only the generic passwords: the class is part of the query.
        XCTAssertEqual(secret("--class", "inet", "-a", "shared"), Array("4".utf8))
    }

    func testWithoutAttributesNeedsAll() throws {
        let result = expect(206, "delete")
        assertError(result, "errSecParam", -50)
        XCTAssertTrue(result.err.contains("--all"), "the hint should name --all: \(result.summary)")
        expect(206, "delete", "--class", "inet")
        XCTAssertEqual(try services(), ["a", "b", "c"], "nothing may be deleted")
        XCTAssertEqual(secret("--class", "inet", "-s", "h.example"), Array("4".utf8))
    }

    func testAllDeletesEveryItemOfTheClass() throws {
        ok("delete", "--all")
        XCTAssertEqual(try services(), [])
        expect(44, "find", "--all")
        XCTAssertEqual(secret("--class", "inet", "-s", "h.example"), Array("4".utf8))
        ok("delete", "--class", "inet", "--all")
        expect(44, "find", "--class", "inet", "--all")
        expect(44, "delete", "--all")
    }

    func testNoMatchIsNotFound() throws {
        let result = expect(44, "delete", "-s", "nothing")
        assertError(result, "errSecItemNotFound", -25300)
        expect(44, "delete", "-s", "a", "-a", "other")
        XCTAssertEqual(try services(), ["a", "b", "c"])
    }

    func testDeleteByEveryKindOfAttribute() throws {
        add("-s", "d", "-j", "to go", "-l", "L", "-g", "grp", secret: "5")
        ok("delete", "-j", "to go")
        expect(44, "find", "-s", "d")
        add("-s", "e", "-g", "grp2", secret: "6")
        ok("delete", "--access-group", "grp2")
        expect(44, "find", "-s", "e")
        XCTAssertEqual(try services(), ["a", "b", "c"])
    }
}
