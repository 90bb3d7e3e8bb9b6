import Foundation
import LocketCore
@testable import LocketRemote
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 40: installed without its recommendations (`apt install
/// --no-install-recommends`), the package's locket-postgres can't load libpq
/// and the dynamic loader ends it with status 127 before it says anything.
/// locket said "the PostgreSQL helper stopped unexpectedly; nothing was
/// committed by the open transaction" (errSecIO); now it names the missing
/// library and the package that has it. A stand-in helper exits 127 as the
/// loader does (Tests/Package/piuparts/pre_install_locket runs the real one).
final class HelperStartTests: XCTestCase {
    func testAHelperWhoseLibrariesAreMissingIsNamedWithThePackageThatHasThem() throws {
        let (helper, directory) = try Self.standIn(exiting: 127)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        XCTAssertThrowsError(try RemoteConnection(helper: helper, parameters: [("dbname", "none")], environment: Environment([:]))) { error in
            let failure = error as? KeychainError
            XCTAssertEqual(failure?.code, .notAvailable, "\(error)")
            XCTAssertTrue(failure?.message.contains("could not start: a shared library it needs is missing, libpq (Debian's libpq5 package)") == true, "\(error)")
            XCTAssertTrue(failure?.message.contains("ldd \(helper)") == true, "\(error)")
        }
    }

    func testAHelperThatStopsOtherwiseIsStillALostHelper() throws {
        let (helper, directory) = try Self.standIn(exiting: 1)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        XCTAssertThrowsError(try RemoteConnection(helper: helper, parameters: [("dbname", "none")], environment: Environment([:]))) { error in
            let failure = error as? KeychainError
            XCTAssertEqual(failure?.code, .io, "\(error)")
            XCTAssertFalse(failure?.message.contains("shared library") == true, "\(error)")
        }
    }

    /// Stopping closes the helper's stream: one that ends then is reaped
    /// with its status as it exits (waited for on a pidfd), not killed at
    /// the second's deadline. Here it reads to the end of the stream and
    /// exits 127, which `missingLibraries` reads back.
    func testAStoppedHelperIsReapedWithItsStatusAsItExits() throws {
        let (helper, directory) = try Self.standIn(script: "cat >/dev/null\nexit 127")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let process = try HelperProcess(path: helper, program: .postgres, environment: Environment([:]))
        let start = Date()
        XCTAssertNotNil(process.missingLibraries(), "the status it exited with, reaped")
        XCTAssertLessThan(Date().timeIntervalSince(start), 0.9, "reaped as it exited, not killed at the deadline")
        let signalled = kill(process.pid, 0), error = errno
        XCTAssertEqual(signalled, -1, "nothing left of it, not even a zombie")
        XCTAssertEqual(error, ESRCH)
    }

    /// A helper that doesn't end with its stream is killed after a second and reaped.
    func testAHelperThatIgnoresTheEndOfItsStreamIsKilledAfterASecond() throws {
        let (helper, directory) = try Self.standIn(script: "exec sleep 60")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let process = try HelperProcess(path: helper, program: .postgres, environment: Environment([:]))
        let start = Date()
        process.stop()
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertGreaterThanOrEqual(elapsed, 0.95, "given its second")
        XCTAssertLessThan(elapsed, 5, "then killed")
        XCTAssertNil(process.missingLibraries(), "killed, not exited")
        let signalled = kill(process.pid, 0), error = errno
        XCTAssertEqual(signalled, -1, "nothing left of it, not even a zombie")
        XCTAssertEqual(error, ESRCH)
    }

    /// A helper that exits with `status` at once, in a new directory.
    private static func standIn(exiting status: Int) throws -> (helper: String, directory: String) {
        try standIn(script: "exit \(status)")
    }

    /// A helper running the shell `script`, in a new directory.
    private static func standIn(script: String) throws -> (helper: String, directory: String) {
        let directory = NSTemporaryDirectory() + "locket-helper-start-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let helper = directory + "/locket-postgres"
        try "#!/bin/sh\n\(script)\n".write(toFile: helper, atomically: true, encoding: .utf8)
        chmod(helper, 0o755)
        return (helper, directory)
    }
}
