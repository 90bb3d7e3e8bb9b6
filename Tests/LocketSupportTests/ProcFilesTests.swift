import Glibc
import LocketSystem
import XCTest

/// LocketSystem's readers of /proc: the one copy the command line, the
/// terminal session, the Secret Service and the Security module share.
final class ProcFilesTests: XCTestCase {
    func testReadLinkGivesTheTargetAndNilForWhatIsNoLink() {
        let exe = readLink("/proc/self/exe")
        XCTAssertEqual(exe?.first, "/", "an absolute path: \(exe ?? "nil")")
        XCTAssertTrue(readLink("/proc/self/ns/pid")?.hasPrefix("pid:[") ?? false)
        XCTAssertNil(readLink("/proc/self/comm"), "a regular file is no link")
        XCTAssertNil(readLink("/nonexistent/link"))
    }

    func testReadSmallFileReadsAtMostTheLimit() {
        XCTAssertEqual(readSmallFile("/proc/self/stat", limit: 5)?.count, 5)
        XCTAssertGreaterThan(readSmallFile("/proc/self/comm")?.count ?? 0, 1)
        XCTAssertNil(readSmallFile("/nonexistent/file"))
    }

    /// The start time names one process: the same for it each time, another
    /// for a later one, none for a pid that is gone.
    func testProcessStartTimeTellsAProcessFromALaterOneWithThePid() throws {
        let mine = try XCTUnwrap(processStartTime(getpid()))
        XCTAssertEqual(processStartTime(getpid()), mine)
        var argv: [UnsafeMutablePointer<CChar>?] = [strdup("true"), nil]
        defer { free(argv[0]) }
        let child = try Spawner.spawn("/bin/true", argv: &argv, environment: environ).get()
        XCTAssertEqual(Spawner.exitStatus(child), 0)
        XCTAssertNil(processStartTime(child), "reaped: no such process")
        XCTAssertNil(processStartTime(-1))
    }
}
