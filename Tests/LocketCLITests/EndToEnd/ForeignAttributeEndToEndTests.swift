import Foundation
import XCTest

/// An attribute the item class does not have is errSecNoSuchAttr in every
/// command; an unknown class is errSecNoSuchClass.
final class EndToEndForeignAttributeTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "svc", "-a", "me", secret: "genp")
        add("--class", "inet", "-s", "h.example", "-a", "me", secret: "inet")
    }

    private func assertNoSuchAttr(_ arguments: [String], input: Input = .devNull, file: StaticString = #filePath, line: UInt = #line) {
        let result = locket(arguments, input: input, file: file, line: line)
        XCTAssertEqual(result.status, 41, result.summary, file: file, line: line)
        assertError(result, "errSecNoSuchAttr", -25303, file: file, line: line)
    }

    func testGenericPasswordRefusesInternetAttributes() {
        for option in [["--server", "x"], ["-r", "https"], ["--protocol", "https"], ["-P", "443"], ["--port", "443"],
                       ["-p", "/x"], ["--path", "/x"], ["-d", "dom"], ["--security-domain", "dom"],
                       ["-t", "form"], ["--auth-type", "form"]] {
            assertNoSuchAttr(["add", "-s", "new"] + option + ["-w"], input: .text("x\n"))
            assertNoSuchAttr(["find", "-s", "svc"] + option)
            assertNoSuchAttr(["update", "-s", "svc"] + option + ["--set", "comment=c"])
            assertNoSuchAttr(["delete", "-s", "svc"] + option)
        }
        // Nothing was added, changed or deleted.
        expect(44, "find", "-s", "new")
        XCTAssertNil(expect(0, "find", "-s", "svc").fields["comment"])
    }

    func testInternetPasswordRefusesGenericAttributes() {
        // With --class inet, -s is the server; the long --service means the service, which inet lacks.
        for option in [["--service", "x"], ["-G", "g"], ["--generic", "g"]] {
            assertNoSuchAttr(["add", "--class", "inet", "--server", "new.example"] + option + ["-w"], input: .text("x\n"))
            assertNoSuchAttr(["find", "--class", "inet"] + option)
            assertNoSuchAttr(["update", "--class", "inet", "--server", "h.example"] + option + ["--set", "comment=c"])
            assertNoSuchAttr(["delete", "--class", "inet"] + option)
        }
        expect(44, "find", "--class", "inet", "-s", "new.example")
        XCTAssertEqual(secret("--class", "inet", "-s", "h.example"), Array("inet".utf8))
    }

    func testUpdateSetOfForeignAttribute() {
        for assignment in ["server=x", "srvr=x", "port=1", "ptcl=htps", "path=/p", "security-domain=d", "auth-type=form"] {
            assertNoSuchAttr(["update", "-s", "svc", "--set", assignment])
        }
        for assignment in ["service=x", "svce=x", "generic=g", "gena=g"] {
            assertNoSuchAttr(["update", "--class", "inet", "-s", "h.example", "--set", assignment])
        }
        assertNoSuchAttr(["update", "-s", "svc", "--set", "no-such-attribute=x"])
        XCTAssertEqual(expect(0, "find", "-s", "svc").fields["service"], "svc")
        XCTAssertEqual(expect(0, "find", "--class", "inet", "-s", "h.example").fields["server"], "h.example")
    }

    func testUnknownClassIsNoSuchClass() {
        for args in [["find", "--class", "bogus"], ["add", "--class", "bogus", "-s", "x"], ["delete", "--class", "bogus", "--all"],
                     ["update", "--class", "bogus", "--set", "comment=x"], ["find", "--class", "certs"]] {
            let result = locket(args)
            XCTAssertEqual(result.status, 38, result.summary)
            assertError(result, "errSecNoSuchClass", -25306)
        }
        // The long names are classes too.
        expect(0, "find", "--class", "generic-password", "-s", "svc")
        expect(0, "find", "--class", "internet-password", "-s", "h.example")
    }
}
