import Foundation
import XCTest

/// Usage errors (exit 2 with a usage line), `--version`, `help`.
final class EndToEndUsageTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    func testUnknownOption() {
        assertUsage(locket("find", "--bogus"), mentions: ["--bogus", "usage: locket find"])
        assertUsage(locket("find", "-Z"), mentions: ["-Z"])
        assertUsage(locket("--bogus", "find"), mentions: ["--bogus"])
        assertUsage(locket("dump", "--verbose"), mentions: ["--verbose"])
        // find has no --set, init no -s.
        assertUsage(locket("find", "--set", "comment=x"), mentions: ["--set"])
        assertUsage(locket("init", "-s", "x"), mentions: ["-s"])
    }

    func testMissingValue() {
        assertUsage(locket("find", "-s"), mentions: ["-s/--service"])
        assertUsage(locket("add", "--account"), mentions: ["--account"])
        assertUsage(locket("update", "--set"), mentions: ["--set"])
        assertUsage(locket("find", "--limit"), mentions: ["--limit"])
        assertUsage(locket("-k"), mentions: ["-k/--keychain"])
    }

    func testConflictingOptionsNameBothSpellings() {
        initKeychain()
        let add = locket("add", "-s", "x", "-w", "--data-file", "-", input: .text("s\n"))
        assertUsage(add, mentions: ["-w/--password", "--data-file"])
        assertUsage(locket("update", "-s", "x", "--data-file", "/dev/null", "--password"), mentions: ["-w/--password", "--data-file"])
        assertUsage(locket("find", "-w", "-g"), mentions: ["-w/--password", "-g/--show-data"])
        assertUsage(locket("find", "--all", "--limit", "3"), mentions: ["--all", "--limit"])
        assertUsage(locket("init", "--no-password", "--password-stdin"), mentions: ["--no-password", "--password-stdin"])
        expect(44, "find", "-s", "x")
    }

    func testRepeatedOption() {
        assertUsage(locket("find", "-s", "a", "-s", "b"), mentions: ["-s/--service"])
    }

    func testUnknownCommandAndNoCommand() {
        assertUsage(locket("frobnicate"), mentions: ["frobnicate"])
        assertUsage(locket())
        assertUsage(locket("find", "extra-operand"), mentions: ["extra-operand"])
        assertUsage(locket("help", "frobnicate"), mentions: ["frobnicate"])
    }

    func testVersion() {
        let result = ok("--version")
        XCTAssertTrue(result.out.hasPrefix("locket "), result.out)
        XCTAssertEqual(result.out.split(separator: "\n").count, 1)
        let version = result.out.dropFirst("locket ".count).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertFalse(version.isEmpty)
        XCTAssertTrue(version.first?.isNumber == true, result.out)
    }

    func testHelp() {
        let overview = ok("help")
        XCTAssertTrue(overview.out.hasPrefix("usage: locket"), overview.out)
        for command in ["init", "add", "find", "update", "delete", "dump", "lock", "unlock"] {
            XCTAssertTrue(overview.out.contains("  \(command) "), "help does not list \(command)")
        }
        XCTAssertEqual(ok("--help").out, overview.out)
        XCTAssertEqual(ok("-h").out, overview.out)

        let find = ok("help", "find")
        XCTAssertTrue(find.out.hasPrefix("usage: locket find "), find.out)
        for option in ["--account", "--service", "--limit", "--all", "--show-ref", "--ref", "-w", "-g"] {
            XCTAssertTrue(find.out.contains(option), "help find does not mention \(option)")
        }
        XCTAssertEqual(ok("find", "--help").out, find.out)
        XCTAssertEqual(ok("find", "-h").out, find.out)
        XCTAssertTrue(ok("help", "add").out.contains("--accessible"))
        XCTAssertTrue(ok("update", "--help").out.contains("--set"))
        // --help works without a keychain and touches nothing.
        XCTAssertNil(mode(sandbox.loginKeychain))
    }
}
