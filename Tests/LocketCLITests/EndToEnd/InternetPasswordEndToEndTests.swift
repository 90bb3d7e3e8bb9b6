import Foundation
import XCTest

/// Internet passwords (`--class inet`): `-s` is the server, protocols and
/// authentication types as names or four-char codes, ports, paths.
final class EndToEndInternetPasswordTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    func testEveryAttributeRoundTrips() throws {
        add("--class", "inet", "-s", "git.example.com", "-a", "alice", "-r", "https", "-P", "8443", "-p", "/org/repo",
            "-d", "REALM", "-t", "form", "-l", "Forge", "-D", "web form password", "-j", "inet comment",
            "-c", "crtr", "-C", "typ2", "-g", "team.web", secret: "inet-secret")
        let fields = expect(0, "find", "--class", "inet", "-s", "git.example.com").fields
        XCTAssertEqual(fields["class"], "inet")
        XCTAssertEqual(fields["server"], "git.example.com")
        XCTAssertEqual(fields["account"], "alice")
        XCTAssertEqual(fields["protocol"], "htps", "-r https is stored as the code htps")
        XCTAssertEqual(fields["port"], "8443")
        XCTAssertEqual(fields["path"], "/org/repo")
        XCTAssertEqual(fields["security-domain"], "REALM")
        XCTAssertEqual(fields["auth-type"], "form")
        XCTAssertEqual(fields["label"], "Forge")
        XCTAssertEqual(fields["description"], "web form password")
        XCTAssertEqual(fields["comment"], "inet comment")
        XCTAssertEqual(fields["creator"], "crtr")
        XCTAssertEqual(fields["type"], "typ2")
        XCTAssertEqual(fields["access-group"], "team.web")
        XCTAssertNil(fields["service"])

        let json = try expect(0, "--json", "find", "--class", "inet", "--server", "git.example.com", "-g").jsonObject()
        XCTAssertEqual(json["class"] as? String, "inet")
        XCTAssertEqual(json["server"] as? String, "git.example.com")
        XCTAssertEqual(json["protocol"] as? String, "htps")
        XCTAssertEqual(json["port"] as? Int, 8443)
        XCTAssertEqual(json["path"] as? String, "/org/repo")
        XCTAssertEqual(json["securityDomain"] as? String, "REALM")
        XCTAssertEqual(json["authenticationType"] as? String, "form")
        XCTAssertEqual(json["data"] as? String, "inet-secret")

        // Every attribute as a query, the protocol given as its code this time.
        let query = expect(0, "find", "--class", "inet", "-s", "git.example.com", "-a", "alice", "-r", "htps", "-P", "8443",
                           "-p", "/org/repo", "-d", "REALM", "-t", "form", "-l", "Forge", "-D", "web form password",
                           "-j", "inet comment", "-c", "crtr", "-C", "typ2", "--access-group", "team.web", "-w")
        XCTAssertEqual(query.out, "inet-secret\n")
        XCTAssertEqual(secret("--class", "internet-password", "-s", "git.example.com"), Array("inet-secret".utf8))
    }

    func testLabelDefaultsToServer() {
        add("--class", "inet", "-s", "host.example", "-a", "u")
        XCTAssertEqual(expect(0, "find", "--class", "inet", "-a", "u").fields["label"], "host.example")
    }

    func testProtocolAndAuthTypeNamesAndCodes() throws {
        add("--class", "inet", "-s", "a.example", "-r", "ssh", "-t", "http-basic")
        add("--class", "inet", "-s", "b.example", "-r", "ftp ", "-t", "dflt")
        let a = try expect(0, "--json", "find", "--class", "inet", "-s", "a.example").jsonObject()
        XCTAssertEqual(a["protocol"] as? String, "ssh ")
        XCTAssertEqual(a["authenticationType"] as? String, "http")
        let b = try expect(0, "--json", "find", "--class", "inet", "-s", "b.example").jsonObject()
        XCTAssertEqual(b["protocol"] as? String, "ftp ")
        XCTAssertEqual(b["authenticationType"] as? String, "dflt")
        // The name finds the code.
        expect(0, "find", "--class", "inet", "-r", "ftp")
        // Not a name and not four characters.
        expect(206, "add", "--class", "inet", "-s", "c.example", "-r", "gopherish")
        expect(206, "add", "--class", "inet", "-s", "c.example", "-P", "65536")
        expect(206, "add", "--class", "inet", "-s", "c.example", "-P", "http")
        expect(44, "find", "--class", "inet", "-s", "c.example")
    }

    func testPrimaryKeyIncludesPortProtocolAndPath() {
        add("--class", "inet", "-s", "h.example", "-a", "u", "-r", "https", "-P", "443", secret: "a")
        add("--class", "inet", "-s", "h.example", "-a", "u", "-r", "https", "-P", "8443", secret: "b")
        add("--class", "inet", "-s", "h.example", "-a", "u", "-r", "http", "-P", "443", secret: "c")
        add("--class", "inet", "-s", "h.example", "-a", "u", "-r", "https", "-P", "443", "-p", "/x", secret: "d")
        add("--class", "inet", "-s", "h.example", "-a", "u", "-r", "https", "-P", "443", "-d", "dom", secret: "e")
        add("--class", "inet", "-s", "h.example", "-a", "u", "-r", "https", "-P", "443", "-t", "ntlm", secret: "f")
        let dup = expect(45, "add", "--class", "inet", "-s", "h.example", "-a", "u", "-r", "https", "-P", "443", "-j", "x", "-w",
                         input: .text("z\n"))
        assertError(dup, "errSecDuplicateItem", -25299)
        XCTAssertEqual(secret("--class", "inet", "-s", "h.example", "-P", "8443"), Array("b".utf8))
        XCTAssertEqual(secret("--class", "inet", "-s", "h.example", "-r", "http"), Array("c".utf8))
        XCTAssertEqual(secret("--class", "inet", "-p", "/x"), Array("d".utf8))
        XCTAssertEqual(expect(0, "find", "--class", "inet", "-s", "h.example", "--all", "-w").out, "a\nb\nc\nd\ne\nf\n")
    }

    func testGenericAndInternetAreSeparate() {
        add("-s", "same.name", secret: "generic")
        add("--class", "inet", "-s", "same.name", secret: "internet")
        XCTAssertEqual(secret("-s", "same.name"), Array("generic".utf8))
        XCTAssertEqual(secret("--class", "inet", "-s", "same.name"), Array("internet".utf8))
        ok("delete", "--class", "inet", "-s", "same.name")
        XCTAssertEqual(secret("-s", "same.name"), Array("generic".utf8))
    }
}
