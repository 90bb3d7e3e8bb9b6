import Foundation
import XCTest

/// Issue 3, point 5: a keychain made with `init --no-password` is always
/// unlocked, like a device without a passcode.
final class EndToEndNoPasswordTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    typealias PC = ProtectionClassName

    override func setUpWithError() throws {
        try super.setUpWithError()
        ok("init", "--no-password")
    }

    func testAlwaysUnlockedAndLockChangesNothing() throws {
        for pc in PC.all where pc.code != "akpu" {
            let result = locket(["add", "-s", pc.code, "--accessible", pc.code, "-w"], input: .text("secret-\(pc.code)\n"))
            XCTAssertEqual(result.status, 0, result.summary)
        }
        let before = dumpWithData()
        let status = statusJSON()
        for args in [["lock"], ["lock", "--all"]] {
            let result = locket(args)
            XCTAssertEqual(result.status, 0, result.summary)
            XCTAssertEqual(result.errLines.count, 1, result.summary)
            XCTAssertTrue(result.err.hasPrefix("locket: warning: ") && result.err.contains("no password"), "lock says so: \(result.summary)")
            XCTAssertEqual(result.stdout, [])
            // Nothing changed: every item reads (stdin /dev/null: no password asked), status is the same.
            XCTAssertEqual(dumpWithData(), before, "\(args)")
            for pc in PC.all where pc.code != "akpu" {
                XCTAssertEqual(secret("-s", pc.code), Array("secret-\(pc.code)".utf8), "\(pc.name) after \(args)")
            }
            XCTAssertEqual(statusJSON() as NSDictionary, status as NSDictionary)
        }
        // Writes need no unlock either.
        ok("update", "-s", "ak", "--set", "comment=c")
        XCTAssertEqual(expect(0, "find", "-s", "ak").fields["comment"], "c")
        // unlock has nothing to do, says so, and reads no password.
        let unlock = expect(0, "unlock")
        XCTAssertTrue(unlock.err.hasPrefix("locket: warning: ") && unlock.err.contains("no password"), unlock.summary)
    }

    func testWhenPasscodeSetItemsAreNotAvailable() throws {
        for spelling in ["when-passcode-set-this-device-only", "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly", "akpu"] {
            let result = expect(53, "add", "-s", "p", "--accessible", spelling, "-w", input: .text("x\n"))
            assertError(result, "errSecNotAvailable", -25291)
            let json = expect(53, "--json", "add", "-s", "p", "--accessible", spelling, "-w", input: .text("x\n"))
            XCTAssertEqual(try json.jsonError()["error"] as? String, "errSecNotAvailable")
        }
        expect(44, "find", "-s", "p")
        XCTAssertEqual(itemCounts()["when-passcode-set-this-device-only"], 0)
        // Nor with -U, which could otherwise slip in through the update path.
        add("-s", "q")
        expect(53, "add", "-s", "q", "--accessible", "akpu", "-U", "-w", input: .text("x\n"))
        XCTAssertEqual(expect(0, "find", "-s", "q").fields["accessible"], "when-unlocked")
    }
}
