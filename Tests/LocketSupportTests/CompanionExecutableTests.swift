import Foundation
import Glibc
import LocketSupport
import XCTest

/// `CompanionExecutable`: the one lookup of the programs locket runs beside
/// itself (the PostgreSQL helper, the Secret Service provider), and the one
/// rule on which of them may run.
final class CompanionExecutableTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "locket-companion-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    private func file(_ name: String, mode: mode_t) throws -> String {
        let path = directory + "/" + name
        try Data("#!/bin/sh\n".utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(chmod(path, mode), 0)
        return path
    }

    func testOnlyAPrivateRegularExecutableMayRun() throws {
        XCTAssertNil(CompanionExecutable.refusal(at: try file("ok", mode: 0o755)))
        XCTAssertEqual(CompanionExecutable.refusal(at: directory + "/absent"), .missing)
        XCTAssertEqual(CompanionExecutable.refusal(at: try file("plain", mode: 0o644)), .notExecutable)
        XCTAssertEqual(CompanionExecutable.refusal(at: directory), .notExecutable)
        XCTAssertEqual(CompanionExecutable.refusal(at: try file("group-writable", mode: 0o775)), .replaceable)
        XCTAssertEqual(CompanionExecutable.refusal(at: try file("world-writable", mode: 0o757)), .replaceable)
    }

    /// Beside the running executable (the build tree: this test bundle is
    /// built beside locket-postgres), or nothing.
    func testTheLookupFindsWhatIsBesideTheExecutableAndNothingElse() throws {
        XCTAssertNil(CompanionExecutable.find("locket-no-such-companion"))
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let beside = (executable as NSString).deletingLastPathComponent + "/locket-postgres"
        guard CompanionExecutable.refusal(at: beside) == nil else { throw XCTSkip("no locket-postgres built beside \(executable)") }
        XCTAssertEqual(CompanionExecutable.find("locket-postgres"), beside)
    }
}
