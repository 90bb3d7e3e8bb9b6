import Foundation
import LocketCore
import LocketTestSupport
import XCTest

/// Issue 28 through the binary: `keychain enroll` prints the device's
/// fingerprint (hex and words), `devices` shows it, `approve` takes either
/// form and refuses another fingerprint leaving everything as it was, and
/// `keychain verify` prints a view another device can check.
final class RemoteFingerprintCommandLineTests: PostgresTestCase {
    private let machines = Machines()

    override func tearDown() { machines.removeAll() }

    private func locket(_ sandbox: Sandbox, _ arguments: [String], input: Input = .devNull) throws -> RunResult {
        try Machines.locket(sandbox, arguments, input: input)
    }

    func testEnrollShowsTheFingerprintAndApproveNeedsIt() throws {
        let server = try running()
        let url = "postgres://\(PostgresServer.user)@/\(try server.makeDatabase())?host=\(server.socket)&port=\(server.port)"
        let first = try machines.make(), second = try machines.make()
        var run = try locket(first, ["-k", url, "init", "--password-stdin", "--kdf", "interactive"], input: .text("pw-fp\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(first, ["-k", url, "add", "-s", "deploy", "-a", "ci", "-w"], input: .text("tok-fp"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(second, ["-k", url, "unlock", "--password-stdin"], input: .text("pw-fp\n"))
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(second, ["-k", url, "keychain", "enroll", "--name", "runner"])
        XCTAssertEqual(run.status, 0, run.summary)
        let fingerprint = Machines.fingerprint(run.out)
        XCTAssertNotNil(fingerprint.range(of: "^[0-9a-f]{4}(-[0-9a-f]{4}){4}$", options: .regularExpression), run.summary)
        let words = try XCTUnwrap(run.out.split(separator: "\n").first.flatMap { line in
            line.range(of: "(").map { String(line[$0.upperBound...].dropLast()) }
        }, run.summary)
        XCTAssertEqual(words.split(separator: " ").count, 10, run.summary)
        XCTAssert(run.out.contains("signed by device 1, fingerprint "), run.summary)

        // The admin sees the same fingerprint for the pending device, and its own.
        run = try locket(first, ["-k", url, "keychain", "devices"])
        let listed = run.out.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        XCTAssertEqual(listed.count, 2, run.summary)
        XCTAssertEqual(listed[1][1], "pending", run.summary)
        XCTAssertEqual(listed[1][4], fingerprint, run.summary)

        // Another fingerprint: errSecAuthFailed, exit 51, nothing granted.
        let wrong = (fingerprint.first == "0" ? "1" : "0") + fingerprint.dropFirst()
        run = try locket(first, ["-k", url, "keychain", "approve", "2", "--fingerprint", wrong, "--groups", "default"])
        XCTAssertEqual(run.status, 51, run.summary)
        XCTAssert(run.err.contains("not approved"), run.summary)
        run = try locket(first, ["-k", url, "keychain", "approve", "2", "--groups", "default"])
        XCTAssertEqual(run.status, 2, "usage: --fingerprint is required: \(run.summary)")
        run = try locket(second, ["-k", url, "find", "-s", "deploy", "-w"])
        XCTAssertEqual(run.status, 36, run.summary)

        // The words, as read aloud, are the same fingerprint.
        run = try locket(first, ["-k", url, "keychain", "approve", "2", "--fingerprint", words, "--groups", "default"])
        XCTAssertEqual(run.status, 0, run.summary)
        run = try locket(second, ["-k", url, "find", "-s", "deploy", "-w"])
        XCTAssertEqual(run.out, "tok-fp\n", run.summary)

        // Two devices compare their views.
        run = try locket(first, ["-k", url, "keychain", "verify"])
        XCTAssertEqual(run.status, 0, run.summary)
        let view = run.out.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertNotNil(view.range(of: "^m[0-9]+-[0-9a-f]{8}\\.s[0-9]+-[0-9a-f]{8}$", options: .regularExpression), run.summary)
        run = try locket(second, ["-k", url, "keychain", "verify", "--expect", view])
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssert(run.out.hasPrefix("consistent with \(view)"), run.summary)
        let forked = String(view.dropLast()) + (view.last == "0" ? "1" : "0")
        run = try locket(second, ["-k", url, "keychain", "verify", "--expect", forked])
        XCTAssertEqual(run.status, 93, run.summary)
        XCTAssert(run.err.contains("forked"), run.summary)
    }
}
