import Foundation
import XCTest

/// One run of the release binary per command whose own suite runs in-process
/// (issue 12): the executable parses its real argv, exits with the status the
/// command returned, and writes to its real stdout and stderr.
final class EndToEndSmokeTests: EndToEndCase {
    func testEveryInProcessCommandThroughTheBinary() throws {
        XCTAssertFalse(Self.inProcess)
        XCTAssertTrue(ok("--version").out.hasPrefix("locket "))
        XCTAssertTrue(ok("help").out.hasPrefix("usage: locket"))
        assertUsage(locket("find", "--bogus"), mentions: ["--bogus", "usage: locket find"])
        assertError(locket("status"), "errSecNoSuchKeychain", -25294)
        let generated = ok("generate", "--charset", "hex", "-n").out
        XCTAssertEqual(generated.count, 32, generated)

        initKeychain()
        add("-s", "smoke", "-a", "me", secret: "first")
        add("--class", "inet", "-s", "smoke.example", "-a", "me", "--protocol", "https", secret: "web")
        XCTAssertEqual(secret("-s", "smoke", "-a", "me"), Array("first".utf8))
        assertError(locket("add", "-s", "smoke", "-a", "me", "-w", input: .text("again\n")), "errSecDuplicateItem", -25299)
        ok("update", "-s", "smoke", "-a", "me", "--set", "comment=c", "-w", input: .text("second\n"))
        XCTAssertEqual(secret("-s", "smoke", "-a", "me"), Array("second".utf8))
        let dump = try ok("--json", "dump").jsonArray()
        XCTAssertEqual(dump.count, 2, "\(dump)")
        let status = try ok("--json", "status").jsonObject()
        XCTAssertNotNil(status["items"], "\(status)")
        ok("delete", "-s", "smoke", "-a", "me")
        assertError(locket("find", "-s", "smoke", "-a", "me"), "errSecItemNotFound", -25300)
        ok("-k", "open", "init", "--no-password")
        XCTAssertEqual(try ok("-k", "open", "--json", "status").jsonObject()["password"] as? Bool, false)
    }
}
