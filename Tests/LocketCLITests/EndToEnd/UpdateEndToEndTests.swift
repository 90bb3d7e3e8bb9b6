import Foundation
import XCTest

/// `update`: `--set` by long name and code, every match, all or nothing.
final class EndToEndUpdateTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    /// --set-attr and --remove-attr edit free-form attributes (SPEC §18), keeping the others; service and username are -s and -a.
    func testSetAndRemoveFreeFormAttributes() throws {
        add("-s", "svc", "-a", "me", "--attr", "keep=1", "--attr", "drop=x", secret: "s")
        ok("update", "-s", "svc", "--set-attr", "added=new", "--remove-attr", "drop", "--set-attr", "username=bob")
        let fields = expect(0, "find", "--attr", "added=new", "--attr", "keep=1").fields
        XCTAssertEqual(fields["account"], "bob")
        XCTAssertNil(fields["attr.drop"])
        expect(44, "find", "--attr", "drop=x")
        ok("update", "--attr", "keep=1", "--remove-attr", "service")
        XCTAssertNil(expect(0, "find", "--attr", "keep=1").fields["service"])
        var run = expect(2, "update", "--attr", "keep=1", "--set-attr", "novalue")
        XCTAssertTrue(run.err.contains("--set-attr takes NAME=VALUE"), run.summary)
        run = expect(2, "update", "--attr", "keep=1", "--set", "account=a", "--set-attr", "username=b")
        XCTAssertTrue(run.err.contains("changed twice"), run.summary)
        run = expect(41, "update", "--class", "inet", "-s", "h", "--set-attr", "k=v")
        XCTAssertTrue(run.err.contains("no free-form attributes"), run.summary)
    }

    func testSetByLongNameAndByCode() throws {
        add("-s", "svc", "-a", "me", secret: "s")
        ok("update", "-s", "svc", "--set", "comment=by long name", "--set", "description=kind one")
        var fields = expect(0, "find", "-s", "svc").fields
        XCTAssertEqual(fields["comment"], "by long name")
        XCTAssertEqual(fields["description"], "kind one")
        ok("update", "-s", "svc", "--set", "icmt=by code", "--set", "acct=bob", "--set", "labl=Label", "--set", "desc=kind two",
           "--set", "crtr=abcd", "--set", "type=wxyz", "--set", "gena=gen")
        fields = expect(0, "find", "-s", "svc").fields
        XCTAssertEqual(fields["comment"], "by code")
        XCTAssertEqual(fields["account"], "bob")
        XCTAssertEqual(fields["label"], "Label")
        XCTAssertEqual(fields["description"], "kind two")
        XCTAssertEqual(fields["creator"], "abcd")
        XCTAssertEqual(fields["type"], "wxyz")
        XCTAssertEqual(fields["generic"], "gen")
        // The old account no longer matches, the new one does; the secret is kept.
        expect(44, "find", "-s", "svc", "-a", "me")
        XCTAssertEqual(secret("-s", "svc", "-a", "bob"), Array("s".utf8))
        // Moving to another access group by long name.
        ok("update", "-s", "svc", "--set", "access-group=T.shared")
        XCTAssertEqual(expect(0, "find", "-s", "svc").fields["access-group"], "T.shared")
        XCTAssertEqual(secret("-s", "svc", "--access-group", "T.shared"), Array("s".utf8))
        // Clearing an attribute with an empty value.
        ok("update", "-s", "svc", "--set", "comment=")
        XCTAssertNil(expect(0, "find", "-s", "svc").fields["comment"])
    }

    func testInternetPasswordSetByCode() throws {
        add("--class", "inet", "-s", "h.example", "-a", "u", "-r", "https", secret: "x")
        ok("update", "--class", "inet", "-s", "h.example", "--set", "port=8443", "--set", "ptcl=ssh", "--set", "srvr=g.example",
           "--set", "path=/p", "--set", "sdmn=D", "--set", "atyp=ntlm")
        let json = try expect(0, "--json", "find", "--class", "inet", "-a", "u").jsonObject()
        XCTAssertEqual(json["server"] as? String, "g.example")
        XCTAssertEqual(json["port"] as? Int, 8443)
        XCTAssertEqual(json["protocol"] as? String, "ssh ")
        XCTAssertEqual(json["path"] as? String, "/p")
        XCTAssertEqual(json["securityDomain"] as? String, "D")
        XCTAssertEqual(json["authenticationType"] as? String, "ntlm")
    }

    func testChangesEveryMatch() throws {
        add("-s", "a", "-a", "shared", secret: "1")
        add("-s", "b", "-a", "shared", secret: "2")
        add("-s", "c", "-a", "other", secret: "3")
        ok("update", "-a", "shared", "--set", "comment=bulk")
        let items = try expect(0, "--json", "find", "--all").jsonArray()
        XCTAssertEqual(items.map { $0["comment"] as? String }, ["bulk", "bulk", ""])
        // A new secret for every match, from stdin.
        ok("update", "-a", "shared", "-w", input: .text("new secret\n"))
        XCTAssertEqual(expect(0, "find", "--all", "-w").out, "new secret\nnew secret\n3\n")
    }

    func testCollisionChangesNothing() throws {
        add("-s", "svc", "-a", "one", secret: "first")
        add("-s", "svc", "-a", "two", secret: "second")
        let before = try expect(0, "--json", "find", "--all", "-g").jsonArray()
        // Both matches would end up with the same primary key.
        let both = expect(45, "update", "-s", "svc", "--set", "comment=changed", "--set", "account=same")
        assertError(both, "errSecDuplicateItem", -25299)
        // One match would collide with an existing item.
        let one = expect(45, "update", "-a", "one", "--set", "account=two", "--set", "comment=changed", "-w", input: .text("clobber\n"))
        assertError(one, "errSecDuplicateItem", -25299)
        let after = try expect(0, "--json", "find", "--all", "-g").jsonArray()
        XCTAssertEqual(after.count, 2)
        for (b, a) in zip(before, after) {
            XCTAssertEqual(NSDictionary(dictionary: a), NSDictionary(dictionary: b), "an update that failed changed an item")
        }
        XCTAssertEqual(secret("-a", "one"), Array("first".utf8))
        XCTAssertEqual(secret("-a", "two"), Array("second".utf8))
    }

    func testNoMatchIsNotFound() {
        add("-s", "svc", "-a", "me")
        let result = expect(44, "update", "-s", "nothing", "--set", "comment=x")
        assertError(result, "errSecItemNotFound", -25300)
        expect(44, "update", "-s", "svc", "-a", "someone-else", "-w", input: .text("x\n"))
    }

    func testAccessibleMovesTheItem() {
        // SPEC §4 (revised): the class is changed by update; an unknown one is errSecParam.
        add("-s", "svc", secret: "x")
        assertError(expect(206, "update", "-s", "svc", "--set", "accessible=sometimes"), "errSecParam", -50)
        XCTAssertEqual(expect(0, "find", "-s", "svc").fields["accessible"], "when-unlocked")
        ok("update", "-s", "svc", "--set", "pdmn=ck")
        XCTAssertEqual(expect(0, "find", "-s", "svc").fields["accessible"], "after-first-unlock")
        ok("update", "-s", "svc", "--accessible", "always")
        XCTAssertEqual(expect(0, "find", "-s", "svc").fields["accessible"], "always")
        // add -U asking for another protection class is refused.
        expect(206, "add", "-U", "-s", "svc", "--accessible", "when-unlocked", "-w", input: .text("y\n"))
        XCTAssertEqual(secret("-s", "svc"), Array("x".utf8))
    }

    func testMalformedSetIsUsageError() {
        add("-s", "svc")
        assertUsage(locket("update", "-s", "svc", "--set", "no-equals-sign"), mentions: ["--set"])
        assertUsage(locket("update", "-s", "svc"), mentions: ["nothing to change"])
    }
}
