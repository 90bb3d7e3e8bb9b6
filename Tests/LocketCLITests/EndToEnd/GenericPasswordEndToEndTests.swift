import Foundation
import XCTest

/// `add` and `find` of generic passwords: every attribute, output modes, limits and order.
final class EndToEndGenericPasswordTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    func testEveryAttributeRoundTrips() throws {
        add("-s", "svc.example", "-a", "alice", "-l", "My Label", "-D", "application password", "-j", "a comment",
            "-G", "generic-bytes", "-c", "crtr", "-C", "typ1", "-g", "team.shared", secret: "pw-1")
        let fields = expect(0, "find", "-s", "svc.example").fields
        XCTAssertEqual(fields["class"], "genp")
        XCTAssertEqual(fields["service"], "svc.example")
        XCTAssertEqual(fields["account"], "alice")
        XCTAssertEqual(fields["label"], "My Label")
        XCTAssertEqual(fields["description"], "application password")
        XCTAssertEqual(fields["comment"], "a comment")
        XCTAssertEqual(fields["generic"], "generic-bytes")
        XCTAssertEqual(fields["creator"], "crtr")
        XCTAssertEqual(fields["type"], "typ1")
        XCTAssertEqual(fields["access-group"], "team.shared")
        XCTAssertEqual(fields["accessible"], "when-unlocked")
        XCTAssertNotNil(fields["created"])
        XCTAssertNotNil(fields["modified"])
        XCTAssertNil(fields["data"], "find alone must not print the secret")

        // The same through long options and every attribute as a query.
        let long = expect(0, "find", "--service", "svc.example", "--account", "alice", "--label", "My Label",
                          "--description", "application password", "--comment", "a comment", "--generic", "generic-bytes",
                          "--creator", "crtr", "--type", "typ1", "--access-group", "team.shared")
        XCTAssertEqual(long.fields["service"], "svc.example")

        let json = try expect(0, "--json", "find", "-s", "svc.example").jsonObject()
        XCTAssertEqual(json["generic"] as? String, Data("generic-bytes".utf8).base64EncodedString())
        XCTAssertEqual(json["accessGroup"] as? String, "team.shared")
        XCTAssertEqual(json["label"] as? String, "My Label")
    }

    func testLabelDefaultsToServiceAndGroupToDefault() {
        add("-s", "only-service", "-a", "bob")
        let fields = expect(0, "find", "-a", "bob").fields
        XCTAssertEqual(fields["label"], "only-service")
        XCTAssertEqual(fields["access-group"], "default")
        // An explicit label is kept.
        add("-s", "svc2", "-l", "explicit")
        XCTAssertEqual(expect(0, "find", "-s", "svc2").fields["label"], "explicit")
    }

    func testFindOutputModes() throws {
        add("-s", "svc", "-a", "me", secret: "the secret")
        XCTAssertEqual(expect(0, "find", "-s", "svc", "-w").stdout, Array("the secret\n".utf8))
        XCTAssertEqual(expect(0, "find", "-s", "svc", "-w", "-n").stdout, Array("the secret".utf8))
        XCTAssertEqual(expect(0, "find", "-s", "svc", "-wn").stdout, Array("the secret".utf8), "short options cluster")

        let g = expect(0, "find", "-s", "svc", "-g")
        XCTAssertEqual(g.fields["service"], "svc")
        XCTAssertEqual(g.fields["account"], "me")
        XCTAssertEqual(g.fields["data"], "the secret")

        let json = try expect(0, "--json", "find", "-s", "svc").jsonObject()
        XCTAssertEqual(json["service"] as? String, "svc")
        XCTAssertNil(json["data"], "the secret is only printed when asked for")
        let withData = try expect(0, "find", "-s", "svc", "-g", "--json").jsonObject()
        XCTAssertEqual(withData["data"] as? String, "the secret")
        let secretJSON = try expect(0, "--json", "find", "-s", "svc", "-w").jsonObject()
        XCTAssertEqual(secretJSON["data"] as? String, "the secret")
        // LOCKET_FORMAT=json does the same as --json.
        let env = try expect(0, "find", "-s", "svc", environment: ["LOCKET_FORMAT": "json"]).jsonObject()
        XCTAssertEqual(env["service"] as? String, "svc")
    }

    func testAllAndLimitInOldestFirstOrder() throws {
        for name in ["one", "two", "three", "four"] { add("-s", name, "-a", "shared", secret: "secret-\(name)") }
        add("-s", "other", "-a", "someone-else")
        // Touch the oldest item: order stays by age, not by modification.
        ok("update", "-s", "one", "--set", "comment=touched")

        let all = try expect(0, "--json", "find", "-a", "shared", "--all").jsonArray()
        XCTAssertEqual(all.map { $0["service"] as? String }, ["one", "two", "three", "four"])
        let limited = try expect(0, "--json", "find", "-a", "shared", "--limit", "2").jsonArray()
        XCTAssertEqual(limited.map { $0["service"] as? String }, ["one", "two"])
        let big = try expect(0, "--json", "find", "-a", "shared", "--limit", "99").jsonArray()
        XCTAssertEqual(big.count, 4)
        let everything = try expect(0, "--json", "find", "--all").jsonArray()
        XCTAssertEqual(everything.map { $0["service"] as? String }, ["one", "two", "three", "four", "other"])
        // One match with --all is still an array.
        let single = try expect(0, "--json", "find", "-s", "other", "--all").jsonArray()
        XCTAssertEqual(single.count, 1)
        // Without --all or --limit: the oldest match only.
        let one = expect(0, "find", "-a", "shared")
        XCTAssertEqual(one.fields["service"], "one")
        XCTAssertEqual(one.out.components(separatedBy: "class: ").count - 1, 1)

        let secrets = expect(0, "find", "-a", "shared", "--all", "-w")
        XCTAssertEqual(secrets.out, "secret-one\nsecret-two\nsecret-three\nsecret-four\n")
        let text = expect(0, "find", "-a", "shared", "--limit", "3")
        XCTAssertEqual(text.out.components(separatedBy: "class: genp").count - 1, 3)
        // The same order every time.
        XCTAssertEqual(expect(0, "find", "-a", "shared", "--all").out, expect(0, "find", "-a", "shared", "--all").out)
    }

    func testLimitMustBePositive() {
        add("-s", "svc")
        for bad in ["0", "-1", "x"] {
            let result = locket("find", "--limit", bad)
            XCTAssertEqual(result.status, 2, result.summary)
        }
        assertUsage(locket("find", "--limit", "2", "--all"), mentions: ["--limit", "--all"])
    }

    func testPersistentReference() throws {
        add("-s", "svc", "-a", "me", secret: "v1")
        add("-s", "svc", "-a", "you", secret: "v2")
        let shown = expect(0, "find", "-a", "me", "--show-ref")
        let ref = try XCTUnwrap(shown.fields["ref"])
        XCTAssertEqual(ref.count, 32, "a reference is 32 hex digits")
        XCTAssertTrue(ref.allSatisfy { $0.isHexDigit })
        XCTAssertNil(expect(0, "find", "-a", "me").fields["ref"], "the reference is printed only with --show-ref")
        let json = try expect(0, "--json", "find", "-a", "me").jsonObject()
        XCTAssertEqual(json["persistentRef"] as? String, ref)

        XCTAssertEqual(expect(0, "find", "--ref", ref).fields["account"], "me")
        XCTAssertEqual(secret("--ref", ref), Array("v1".utf8))
        // The reference and the query must both match.
        expect(44, "find", "--ref", ref, "-a", "you")
        // Stable across update.
        ok("update", "--ref", ref, "--set", "account=renamed", "--set", "comment=c")
        let after = expect(0, "find", "--ref", ref, "--show-ref")
        XCTAssertEqual(after.fields["account"], "renamed")
        XCTAssertEqual(after.fields["ref"], ref)
        // Deleting by reference.
        ok("delete", "--ref", ref)
        expect(44, "find", "--ref", ref)
        XCTAssertEqual(secret("-a", "you"), Array("v2".utf8))
        // A malformed reference is a parameter error.
        expect(206, "find", "--ref", "not-hex")
    }

    func testOversizedAttributeIsRefused() {
        let limit = 65_536
        let tooLong = String(repeating: "a", count: limit + 1)
        let result = expect(42, "add", "-s", tooLong, "-w", input: .text("x\n"))
        assertError(result, "errSecDataTooLarge", -25302)
        expect(44, "find", "--all")
        expect(42, "find", "-s", tooLong)
        let longest = String(repeating: "b", count: limit)
        add("-j", longest, "-s", "long-comment")
        XCTAssertEqual(expect(0, "find", "-s", "long-comment").fields["comment"], longest)
    }

    func testNotFound() {
        add("-s", "svc", "-a", "me")
        let result = expect(44, "find", "-s", "svc", "-a", "someone")
        XCTAssertEqual(result.err, "locket: error: the item could not be found (errSecItemNotFound -25300)\n")
        XCTAssertEqual(result.stdout, [])
        // An attribute given empty matches only items whose value is empty.
        expect(44, "find", "-s", "svc", "-a", "")
        expect(0, "find", "-s", "svc", "-j", "")
    }
}
