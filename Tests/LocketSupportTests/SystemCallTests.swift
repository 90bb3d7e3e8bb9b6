import Foundation
import Glibc
import LocketSystem
import XCTest

/// The one system-call wrapper (issue 25 item 5): errno read once, EINTR
/// retried once, a typed Errno, and the test hook that injects failures.
final class SystemCallTests: XCTestCase {
    override func tearDown() {
        systemCallFailureTestHook = nil
        super.tearDown()
    }

    /// Fails the calls named `name` with `code`, `times` times; counts every call asked about.
    private final class Injector: @unchecked Sendable {
        var asked: [String] = []
        var left: Int
        let name: String, code: Int32
        init(_ name: String, _ code: Int32, times: Int) { self.name = name; self.code = code; left = times }
        func install() {
            systemCallFailureTestHook = { [self] called in
                asked.append("\(called)")
                guard "\(called)" == name, left > 0 else { return nil }
                left -= 1
                return code
            }
        }
    }

    func testAnInterruptedCallIsMadeAgainAndItsValueReturned() throws {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        XCTAssertNil(writeAll(fds[1], Array("abc".utf8)).error)
        let injector = Injector("read", EINTR, times: 3)
        injector.install()
        var buffer = [UInt8](repeating: 0, count: 8)
        let n = buffer.withUnsafeMutableBytes { raw in valueOrErrno("read") { read(fds[0], raw.baseAddress, raw.count) } }
        XCTAssertEqual(n, .success(3))
        XCTAssertEqual(Array(buffer[0..<3]), Array("abc".utf8))
        XCTAssertEqual(injector.asked, ["read", "read", "read", "read"], "three interruptions, then the call")
    }

    func testWithoutRetryAnInterruptionIsTheFailure() {
        Injector("poll", EINTR, times: 1).install()
        var none = pollfd(fd: -1, events: 0, revents: 0)
        XCTAssertEqual(valueOrErrno("poll", retryOnInterrupt: false) { poll(&none, 1, 0) }, .failure(Errno(EINTR)))
        XCTAssertEqual(valueOrErrno("poll", retryOnInterrupt: false) { poll(&none, 1, 0) }, .success(0))
    }

    func testTheErrnoOfTheFailedCallIsKeptWithItsText() {
        let missing = valueOrErrno("open") { open("/nonexistent/locket-\(getpid())", O_RDONLY) }
        XCTAssertEqual(missing, .failure(Errno(ENOENT)))
        XCTAssertEqual(missing.error?.description, "No such file or directory")
        XCTAssertEqual(nothingOrErrno("close") { close(-1) }.error, Errno(EBADF))
        var template = Array("no-x-at-the-end".utf8CString)
        XCTAssertEqual(pointerOrErrno("mkdtemp") { mkdtemp(&template) }.error, Errno(EINVAL))
        XCTAssertThrowsError(try missing.get { KeychainLikeError(message: "cannot read: \($0)") }) { error in
            XCTAssertEqual((error as? KeychainLikeError)?.message, "cannot read: No such file or directory")
        }
    }

    private struct KeychainLikeError: Error { let message: String }

    func testAnInjectedFailureStopsWriteAllAndNamesTheErrno() {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        Injector("write", EIO, times: 1).install()
        XCTAssertEqual(writeAll(fds[1], [1, 2, 3]).error, Errno(EIO))
        // Nothing reached the pipe: the call was never made.
        XCTAssertEqual(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0)
        var byte: UInt8 = 0
        XCTAssertEqual(read(fds[0], &byte, 1), -1)
        XCTAssertNil(writeAll(fds[1], [1, 2, 3]).error, "the next write goes through")
    }

    func testReadFullyStopsAtEndOfFile() {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        XCTAssertNil(writeAll(fds[1], Array("hello".utf8)).error)
        close(fds[1])
        Injector("read", EINTR, times: 2).install()
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(buffer.withUnsafeMutableBytes { readFully(fds[0], into: $0) }, .success(5))
        XCTAssertEqual(Array(buffer[0..<5]), Array("hello".utf8))
    }

    // MARK: - The spawner

    private func run(_ argv: [String], stdout: String, signals: Spawner.Signals = .changedByLocket, searchPath: Bool = false) throws -> Int32 {
        let pid = try Spawner.spawn(argv[0], argv: argv.map { Array($0.utf8) }, environment: [Array("PATH=/usr/bin:/bin".utf8)],
                                    stdin: .devNull, stdout: .file(stdout), stderr: .devNull, searchPath: searchPath, signals: signals).get()
        return Spawner.exitStatus(pid)
    }

    func testTheSpawnerReportsExitStatusesSignalsAndMissingPrograms() throws {
        let out = NSTemporaryDirectory() + "locket-spawn-\(getpid())"
        defer { unlink(out) }
        XCTAssertEqual(try run(["/bin/sh", "-c", "echo hi; exit 3"], stdout: out), 3)
        XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), "hi\n")
        XCTAssertEqual(try run(["/bin/sh", "-c", "kill -9 $$"], stdout: out), 128 + SIGKILL)
        XCTAssertEqual(try run(["sh", "-c", "exit 0"], stdout: out, searchPath: true), 0, "found in PATH")
        XCTAssertEqual(Spawner.spawn("/nonexistent/program", argv: [Array("x".utf8)], environment: []).error, Errno(ENOENT))
        systemCallFailureTestHook = { "\($0)" == "posix_spawn" ? EAGAIN : nil }
        XCTAssertEqual(Spawner.spawn("/bin/true", argv: [Array("true".utf8)], environment: []).error, Errno(EAGAIN))
    }

    /// A child starts as from a shell: the signals locket (or a test runner)
    /// ignores reach it with their default handling, and none is blocked.
    func testTheChildGetsDefaultSignalHandling() throws {
        let out = NSTemporaryDirectory() + "locket-spawn-signals-\(getpid())"
        defer { unlink(out) }
        let previous = signal(SIGPIPE, SIG_IGN)
        let previousUSR1 = signal(SIGUSR1, SIG_IGN)
        defer { signal(SIGPIPE, previous); signal(SIGUSR1, previousUSR1) }
        func ignored(_ signals: Spawner.Signals) throws -> UInt64 {
            XCTAssertEqual(try run(["/bin/cat", "/proc/self/status"], stdout: out, signals: signals), 0)
            let status = try String(contentsOfFile: out, encoding: .utf8)
            let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("SigIgn:") })
            let blocked = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") })
            XCTAssertEqual(UInt64(blocked.split(separator: "\t").last!, radix: 16), 0)
            return try XCTUnwrap(UInt64(line.split(separator: "\t").last!, radix: 16))
        }
        let bit = { (signal: Int32) -> UInt64 in 1 << UInt64(signal - 1) }
        let mine = try ignored(.changedByLocket)
        XCTAssertEqual(mine & bit(SIGPIPE), 0, "SIGPIPE is reset for a child of locket")
        XCTAssertNotEqual(mine & bit(SIGUSR1), 0, "what locket's own parent ignored stays ignored")
        XCTAssertEqual(try ignored(.all) & (bit(SIGPIPE) | bit(SIGUSR1)), 0, "a test's child gets every default")
    }
}
