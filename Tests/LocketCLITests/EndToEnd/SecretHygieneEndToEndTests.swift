import Foundation
import XCTest

/// Secrets and passwords never show up in error messages or warnings.
final class EndToEndSecretHygieneTests: EndToEndCase {
    static let secret = "Zq7-DISTINCTIVE-secret-8841"
    static let otherPassword = "Wx3-DISTINCTIVE-password-1207"

    private func assertClean(_ result: RunResult, file: StaticString = #filePath, line: UInt = #line) {
        for needle in [Self.secret, Self.otherPassword, Self.password, "DISTINCTIVE"] {
            XCTAssertFalse(result.err.contains(needle), "stderr leaks \(needle): \(result.summary)", file: file, line: line)
        }
        XCTAssertNotEqual(result.status, 0, "expected a failure: \(result.summary)", file: file, line: line)
    }

    func testFailingCommandsNeverPrintTheSecret() {
        initKeychain()
        add("-s", "svc", "-a", "me", secret: Self.secret)
        let stdin = Input.text(Self.secret + "\n")
        let failing: [[String]] = [
            ["add", "-s", "svc", "-a", "me", "-w"],                            // duplicate
            ["add", "-s", "svc2", "--server", "x", "-w"],                      // foreign attribute
            ["add", "--class", "nope", "-s", "svc2", "-w"],                    // no such class
            ["add", "-s", "svc3", "-w", "--data-file", "-"],                   // usage error
            ["add", "-s", "svc4", "--accessible", "bogus", "-w"],              // bad protection class
            ["add", "--class", "inet", "-s", "h", "-P", "99999", "-w"],        // bad port
            ["update", "-s", "missing", "-w"],                                 // not found
            ["update", "-s", "svc", "--set", "accessible=sometimes", "-w"],       // param
            ["--json", "add", "-s", "svc", "-a", "me", "-w"],                  // duplicate, JSON error
            ["-k", "absent", "add", "-s", "x", "-w"],                          // no keychain
            ["-k", "absent", "init", "--no-password", "--password-stdin"],     // usage error
        ]
        for args in failing { assertClean(locket(args, input: stdin)) }

        // Wrong passwords.
        ok("lock")
        assertClean(locket("unlock", "--password-stdin", input: .text(Self.otherPassword + "\n")))
        assertClean(locket("--json", "unlock", input: .text(Self.otherPassword + "\n")))
        assertClean(locket("init", "--password-stdin", input: .text(Self.otherPassword + "\n")))
        // Locked: reading and updating fail without echoing anything.
        assertClean(locket("find", "-s", "svc", "-w"))
        assertClean(locket("update", "-s", "svc", "-w", input: stdin))
        assertClean(locket("dump", "--data"))
    }

    func testSuccessfulCommandsPrintNothingOnStderr() {
        let created = locket("init", "--password-stdin", "--kdf", "interactive", input: .text(Self.password + "\n"))
        XCTAssertEqual(created.err, "")
        for args in [["add", "-s", "svc", "-w"], ["update", "-s", "svc", "-w"]] {
            let result = locket(args, input: .text(Self.secret + "\n"))
            XCTAssertEqual(result.status, 0, result.summary)
            XCTAssertEqual(result.err, "", result.summary)
        }
        XCTAssertEqual(ok("find", "-s", "svc", "-w").out, Self.secret + "\n")
        XCTAssertFalse(ok("find", "-s", "svc").out.contains(Self.secret), "find without -w/-g must not print the secret")
        XCTAssertFalse(ok("find", "-s", "svc", "--json").out.contains(Self.secret))
    }
}
