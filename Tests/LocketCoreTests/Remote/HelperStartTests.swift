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

    /// A helper that exits with `status` at once, in a new directory.
    private static func standIn(exiting status: Int) throws -> (helper: String, directory: String) {
        let directory = NSTemporaryDirectory() + "locket-helper-start-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let helper = directory + "/locket-postgres"
        try "#!/bin/sh\nexit \(status)\n".write(toFile: helper, atomically: true, encoding: .utf8)
        chmod(helper, 0o755)
        return (helper, directory)
    }
}
