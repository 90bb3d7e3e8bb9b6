@testable import LocketCLI
import LocketCLIBackends
import XCTest

/// Issue 11, defect 4 (SPEC §8), in-process: after `-w`, an argument that
/// starts with '-' is an option only when it is exactly one of the command's
/// options standing alone; anything else is a usage error, never split into
/// options (`-w -lX9secret` stored an empty secret and the label "X9secret").
final class SecretArgumentParsingTests: XCTestCase {
    private func invocation(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> Invocation {
        guard case .run(_, let invocation) = try Parser.parse(arguments) else {
            throw XCTSkip("not a command run")
        }
        return invocation
    }

    func testADashArgumentAfterWThatIsNoOptionStandingAloneIsAUsageError() {
        let refused: [[String]] = [
            ["add", "-s", "s", "-a", "a", "-w", "-lX9secret"],  // an option with its value attached
            ["add", "-w", "-Ua"],                               // a cluster of options
            ["add", "-w", "-x"],                                // no option of add
            ["add", "-w", "--bogus"],
            ["add", "-w", "---"],
            ["add", "-w", "-"],
            ["add", "--password", "-lX9secret"],
            ["update", "-s", "s", "-w", "-lX9"],
            ["add", "-w", "-w"] + ["x"],                        // -w given twice is refused too
        ]
        for arguments in refused {
            XCTAssertThrowsError(try Parser.parse(arguments), "\(arguments)") { error in
                XCTAssertTrue(error is UsageError, "\(arguments): \(error)")
            }
        }
    }

    func testAnOptionStandingAloneAfterWEndsItsValue() throws {
        let cases: [([String], String, String)] = [
            (["add", "-w", "-a", "x"], "account", "x"),
            (["add", "-w", "--account", "x"], "account", "x"),
            (["add", "-w", "--account=x"], "account", "x"),
            (["add", "-w", "-l", "-lX9"], "label", "-lX9"),
            (["add", "-w", "-U"], "update", ""),
            (["update", "-s", "s", "-w", "--set", "comment=c"], "set", "comment=c"),
        ]
        for (arguments, option, value) in cases {
            let parsed = try invocation(arguments)
            XCTAssertTrue(parsed.isBare("password"), "\(arguments)")
            XCTAssertEqual(parsed.value(option), value, "\(arguments)")
        }
        // Global options and `--` stand alone too.
        XCTAssertTrue(try invocation(["add", "-w", "--json"]).isBare("password"))
        XCTAssertTrue(try invocation(["add", "-w", "-k", "kc"]).isBare("password"))
        XCTAssertTrue(try invocation(["add", "-w", "--"]).isBare("password"))
        XCTAssertTrue(try invocation(["add", "-s", "s", "-w"]).isBare("password"))
    }

    func testPasswordEqualsAndAttachedValuesAlwaysTakeTheValue() throws {
        for (arguments, secret) in [(["add", "--password=-lX9secret"], "-lX9secret"), (["add", "-w-lX9secret"], "-lX9secret"),
                                    (["add", "--password=--account"], "--account"), (["update", "--password=-"], "-"),
                                    (["add", "-w", "plain"], "plain")] {
            let parsed = try invocation(arguments)
            XCTAssertFalse(parsed.isBare("password"), "\(arguments)")
            XCTAssertEqual(parsed.value("password"), secret, "\(arguments)")
            XCTAssertNil(parsed.value("label"), "\(arguments)")
            XCTAssertNil(parsed.value("account"), "\(arguments)")
        }
    }

    /// The whole CLI in-process: exit 2, the usage line, and the argument
    /// (perhaps the secret) not echoed.
    func testTheRefusalDoesNotEchoTheArgument() {
        final class Capture: @unchecked Sendable { var stderr: [UInt8] = []; var stdout: [UInt8] = [] }
        let capture = Capture()
        let io = IO(write: { fd, bytes in
            if fd == 2 { capture.stderr += bytes } else { capture.stdout += bytes }
        }, stdin: -1, environment: [:])
        let status = CLI.run(["locket", "add", "-s", "s", "-a", "a", "-w", "-lX9secret"], io: io, backends: .all)
        let err = String(decoding: capture.stderr, as: UTF8.self)
        XCTAssertEqual(status, 2, err)
        XCTAssertEqual(capture.stdout, [])
        XCTAssertTrue(err.hasPrefix("locket: error: the argument after -w starts with '-'"), err)
        XCTAssertTrue(err.contains("\nusage: locket add "), err)
        XCTAssertFalse(err.contains("X9secret"), err)
    }

    /// A secret typed where an operand would go (`add -w -U s3cret`) is
    /// refused without being repeated; other commands still quote what was typed.
    func testALeftoverArgumentOfACommandThatTakesASecretIsNotRepeated() {
        for arguments in [["add", "-s", "s", "-w", "-U", "s3cret-typed-here"], ["update", "-s", "s", "-w", "--", "s3cret-typed-here"]] {
            XCTAssertThrowsError(try Parser.parse(arguments), "\(arguments)") { error in
                let message = (error as? UsageError)?.message ?? ""
                XCTAssertFalse(message.contains("s3cret"), "\(arguments): \(message)")
                XCTAssertTrue(message.contains("--password=SECRET"), message)
            }
        }
        XCTAssertThrowsError(try Parser.parse(["find", "-s", "s", "leftover"])) { error in
            XCTAssertTrue((error as? UsageError)?.message.contains("'leftover'") ?? false, "\(error)")
        }
    }
}
