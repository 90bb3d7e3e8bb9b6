import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Primary keys: duplicates, empty defaults, and `add -U`.
final class EndToEndUniquenessTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        // Item dates on a clock the test moves (issue 38).
        clock = VirtualClock()
        initKeychain()
    }

    func testItemDifferingOnlyInCommentIsDuplicate() {
        add("-s", "svc", "-a", "me", "-j", "first comment", secret: "original")
        let result = expect(45, "add", "-s", "svc", "-a", "me", "-j", "second comment", "-l", "other label", "-w",
                            input: .text("replacement\n"))
        assertError(result, "errSecDuplicateItem", -25299)
        // A find that includes the differing comment misses.
        let miss = expect(44, "find", "-s", "svc", "-a", "me", "-j", "second comment")
        assertError(miss, "errSecItemNotFound", -25300)
        // The original is untouched.
        let found = expect(0, "find", "-s", "svc", "-a", "me", "-j", "first comment", "-g")
        XCTAssertEqual(found.fields["data"], "original")
        XCTAssertEqual(found.fields["label"], "svc")
        XCTAssertEqual(try expect(0, "--json", "find", "--all").jsonArray().count, 1)
    }

    func testEmptyAttributesTakePartInUniqueness() {
        add("-s", "svc", secret: "no account")
        add("-s", "svc", "-a", "me", secret: "with account")
        expect(45, "add", "-s", "svc", "-w", input: .text("again\n"))
        expect(45, "add", "-s", "svc", "-a", "", "-w", input: .text("again\n"))
        XCTAssertEqual(secret("-s", "svc", "-a", ""), Array("no account".utf8))
        XCTAssertEqual(secret("-s", "svc", "-a", "me"), Array("with account".utf8))
        // Different access groups are different items.
        add("-s", "svc", "-a", "me", "-g", "other.group", secret: "other group")
        XCTAssertEqual(secret("-s", "svc", "-a", "me", "--access-group", "other.group"), Array("other group".utf8))
        XCTAssertEqual(secret("-s", "svc", "-a", "me", "--access-group", "default"), Array("with account".utf8))
    }

    func testAddUpdateKeepsReferenceAndCreationDate() throws {
        add("-s", "svc", "-a", "me", "-j", "old comment", "-D", "kind", secret: "old")
        add("-s", "later", "-a", "me", secret: "later")
        let before = try expect(0, "--json", "find", "-s", "svc").jsonObject()
        clock!.advance(milliseconds: 30)
        ok("add", "-U", "-s", "svc", "-a", "me", "-j", "new comment", "-w", input: .text("new\n"))
        let after = try expect(0, "--json", "find", "-s", "svc", "-g").jsonObject()
        XCTAssertEqual(after["persistentRef"] as? String, before["persistentRef"] as? String, "add -U must update in place")
        XCTAssertEqual(after["creationDate"] as? String, before["creationDate"] as? String)
        XCTAssertNotEqual(after["modificationDate"] as? String, before["modificationDate"] as? String)
        XCTAssertEqual(after["comment"] as? String, "new comment")
        XCTAssertEqual(after["data"] as? String, "new")
        XCTAssertEqual(try expect(0, "--json", "find", "-a", "me", "--all").jsonArray().map { $0["service"] as? String },
                       ["svc", "later"], "the updated item keeps its place in the order")
        // -U on a new primary key adds.
        ok("add", "--update", "-s", "fresh", "-w", input: .text("fresh\n"))
        XCTAssertEqual(secret("-s", "fresh"), Array("fresh".utf8))
    }

    func testAddUpdateOfInternetPassword() throws {
        add("--class", "inet", "-s", "h.example", "-a", "u", "-r", "https", secret: "one")
        let before = try expect(0, "--json", "find", "--class", "inet", "-s", "h.example").jsonObject()
        ok("add", "-U", "--class", "inet", "-s", "h.example", "-a", "u", "-r", "https", "-w", input: .text("two\n"))
        let after = try expect(0, "--json", "find", "--class", "inet", "-s", "h.example", "--all").jsonArray()
        XCTAssertEqual(after.count, 1)
        XCTAssertEqual(after.first?["persistentRef"] as? String, before["persistentRef"] as? String)
        XCTAssertEqual(secret("--class", "inet", "-s", "h.example"), Array("two".utf8))
    }
}
