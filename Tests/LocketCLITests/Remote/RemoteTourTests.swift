import Foundation
import LocketTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// README "Sharing a keychain", "A tour on one machine": the block is run
/// exactly as it stands, by `sh -eu`, with the binary under test and its
/// helper first on PATH. It starts its own throwaway server, two devices,
/// approves one for team-b only, and must show it reading team-b's item and
/// refused team-a's with exit 36.
final class RemoteTourTests: XCTestCase {
    /// Tests/LocketCoreTests/Remote/RemoteTourTests.swift -> the repository root.
    static let root: String = {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(4)
        return parts.joined(separator: "/")
    }()

    /// The first ```sh block after the tour's heading in the README.
    static func tourBlock() throws -> String {
        let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
        let heading = try XCTUnwrap(readme.range(of: "\n### A tour on one machine\n"), "README.md lost its tour")
        let rest = readme[heading.upperBound...]
        let start = try XCTUnwrap(rest.range(of: "```sh\n"), "the tour has no sh block")
        let end = try XCTUnwrap(rest[start.upperBound...].range(of: "\n```\n"), "the tour's block is not closed")
        return String(rest[start.upperBound..<end.lowerBound]) + "\n"
    }

    func testTheREADMEsTourRunsAsShown() throws {
        _ = try Postgres.binaries()
        let binary = try XCTUnwrap(LocketBinary.path, "no locket binary: make build")
        let directory = URL(fileURLWithPath: binary).deletingLastPathComponent().path
        guard FileManager.default.isExecutableFile(atPath: directory + "/locket-postgres") else {
            throw XCTSkip("locket-postgres is not built beside \(binary) (make build builds both)")
        }
        let script = try Self.tourBlock()
        var template = Array("/tmp/locket-tour-XXXXXX".utf8CString)
        XCTAssertNotNil(mkdtemp(&template))
        let scratch = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        chmod(scratch, 0o755)
        defer {
            // A tour that failed half-way leaves its server running: stop it.
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? [] {
                let data = "\(scratch)/\(entry)/data"
                guard FileManager.default.fileExists(atPath: data + "/postmaster.pid"), let bin = try? PostgresServer.binaries() else { continue }
                let asServer = geteuid() == 0 ? ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] : []
                let command = asServer + ["\(bin)/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"]
                _ = Spawn.run(command[0], Array(command.dropFirst()), environment: ["PATH": "/usr/bin:/bin"], input: .devNull, timeout: 60)
            }
            try? FileManager.default.removeItem(atPath: scratch)
        }
        let environment = ["PATH": "\(directory):/usr/sbin:/usr/bin:/sbin:/bin", "TMPDIR": scratch, "LANG": "C"]
        let run = Spawn.run("/bin/sh", ["-eu", "-c", script], environment: environment, input: .devNull, timeout: 180)
        let summary = "status \(run.status.map(String.init) ?? "killed"), stdout:\n\(run.out)\nstderr:\n\(run.err)"
        XCTAssertFalse(run.timedOut, summary)
        XCTAssertEqual(run.status, 0, summary)
        let lines = run.out.split(separator: "\n").map(String.init)
        XCTAssert(lines.contains { $0.hasPrefix("device 2: ") }, "bob's enroll prints device 2, as the README says: \(summary)")
        XCTAssert(lines.contains { $0.hasPrefix("2\tapproved\tbob\tteam-b") }, summary)
        XCTAssert(lines.contains("token-b"), "bob reads team-b's item: \(summary)")
        XCTAssertFalse(run.out.contains("token-a"), "bob must never read team-a's item: \(summary)")
        XCTAssert(lines.contains("exit 36"), summary)
        XCTAssert(run.err.contains("locket: error: this device was not approved for the access group 'team-a' (errSecInteractionNotAllowed -25308)"),
                  summary)
        // The tour cleans up after itself: its server stopped, its directory gone.
        XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? [], [], summary)
    }
}
