import Foundation
import LocketSystem
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// Support for the issue-5 end-to-end tests (exec, credential helper, git
// clone, JSON contract, completion): a process left running in the
// background (for signals, streaming output and servers), system tools, and
// a strict JSON type reader.

/// A process started in the background: its pid while it runs, its output
/// collected as it comes (with arrival times), and a bounded wait.
final class BackgroundProcess {
    let pid: pid_t
    let started = Date()
    private(set) var stdout: [UInt8] = []
    private(set) var stderr: [UInt8] = []
    private var outFD: Int32
    private var errFD: Int32
    /// Exit status or terminating signal once reaped.
    private(set) var status: Int32?
    private(set) var signal: Int32?
    private(set) var reaped = false

    var out: String { String(decoding: stdout, as: UTF8.self) }
    var err: String { String(decoding: stderr, as: UTF8.self) }
    var elapsed: Double { Date().timeIntervalSince(started) }

    /// Starts `executable ARGS` with exactly `environment`, stdin from /dev/null.
    init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        _ = Spawn.ignoreSIGPIPE
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        ProcessSpawner.lock.lock()
        defer { ProcessSpawner.lock.unlock() }
        guard ProcessSpawner.makePipe(&outPipe), ProcessSpawner.makePipe(&errPipe) else { throw POSIXError(.EMFILE) }
        let spawned = ProcessSpawner.spawn(executable, arguments.map { Array($0.utf8) }, environmentEntries: ProcessSpawner.entries(environment),
                                           stdin: .devNull, stdout: .descriptor(outPipe[1]), stderr: .descriptor(errPipe[1]))
        close(outPipe[1])
        close(errPipe[1])
        let child: pid_t
        switch spawned {
        case .success(let pid): child = pid
        case .failure(let error):
            close(outPipe[0]); close(errPipe[0])
            throw error
        }
        pid = child
        outFD = outPipe[0]
        errFD = errPipe[0]
        for fd in [outFD, errFD] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }

    deinit { terminate() }

    /// Reads whatever output arrives within `seconds` (at least one poll).
    func pump(_ seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        repeat {
            var fds: [pollfd] = []
            if outFD >= 0 { fds.append(pollfd(fd: outFD, events: Int16(POLLIN), revents: 0)) }
            if errFD >= 0 { fds.append(pollfd(fd: errFD, events: Int16(POLLIN), revents: 0)) }
            if fds.isEmpty {
                let left = deadline.timeIntervalSinceNow
                if left > 0 { usleep(UInt32(min(left, 0.02) * 1_000_000)) }
                return
            }
            let wait = max(0, min(deadline.timeIntervalSinceNow, 0.02))
            guard case .success = valueOrErrno("poll", { poll(&fds, nfds_t(fds.count), Int32(wait * 1000)) }) else { return }
            for p in fds where p.revents != 0 {
                let r = buffer.withUnsafeMutableBytes { raw in valueOrErrno("read") { read(p.fd, raw.baseAddress, raw.count) } }
                if case .success(let n) = r, n > 0 {
                    if p.fd == outFD { stdout += buffer[0..<n] } else { stderr += buffer[0..<n] }
                } else if r.error?.code != EAGAIN {
                    close(p.fd)
                    if p.fd == outFD { outFD = -1 } else { errFD = -1 }
                }
            }
        } while deadline.timeIntervalSinceNow > 0
    }

    /// Whether the process has exited (reaps it without blocking).
    var hasExited: Bool {
        if reaped { return true }
        guard case .success(let ended) = Spawner.wait(pid, options: WNOHANG), ended.pid == pid else { return false }
        record(ended.status)
        return true
    }

    private func record(_ waitStatus: Int32) {
        reaped = true
        let sig = waitStatus & 0x7f
        if sig == 0 { status = (waitStatus >> 8) & 0xff } else { signal = sig }
    }

    /// Pumps output until `condition` holds; false after `timeout` seconds.
    @discardableResult
    func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if deadline.timeIntervalSinceNow <= 0 { return false }
            pump(0.02)
        }
        return true
    }

    /// Waits for the process to exit and its output to end; false (and the
    /// process killed) after `timeout` seconds.
    @discardableResult
    func wait(timeout: Double) -> Bool {
        let exited = waitUntil(timeout: timeout) { self.hasExited }
        guard exited else {
            terminate()
            return false
        }
        // The output ends when every writer is gone; bounded, since a grandchild may hold it.
        _ = waitUntil(timeout: 2) { self.outFD < 0 && self.errFD < 0 }
        return true
    }

    /// Closes the test's end of the process's stdout, as a reader that has
    /// had enough does (`| head -1`): its next writes fail with EPIPE.
    func closeStdout() {
        if outFD >= 0 { close(outFD) }
        outFD = -1
    }

    /// Kills the process (SIGKILL) if it is still running, reaps it, closes the pipes.
    func terminate() {
        if !reaped {
            kill(pid, SIGKILL)
            record((try? Spawner.wait(pid).get().status) ?? 0)
        }
        for fd in [outFD, errFD] where fd >= 0 { close(fd) }
        outFD = -1
        errFD = -1
    }

    /// A one-line summary for failure messages.
    var summary: String {
        let how = !reaped ? "running" : signal.map { "killed by signal \($0)" } ?? "exit \(status ?? -1)"
        return "pid \(pid) -> \(how)\nstdout: \(out.prefix(2000))\nstderr: \(err.prefix(2000))"
    }
}

/// System programs the tests drive (git, python3, shells).
enum SystemTool {
    /// The first executable `name` in the usual directories or the test's PATH.
    static func path(_ name: String) -> String? {
        var directories = ["/usr/local/bin", "/usr/bin", "/bin"]
        if let path = ProcessInfo.processInfo.environment["PATH"] {
            directories += path.split(separator: ":").map(String.init)
        }
        for directory in directories {
            let candidate = directory + "/" + name
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// The path of `name`, or XCTSkip naming what is missing.
    static func require(_ name: String, for purpose: String) throws -> String {
        guard let path = path(name) else {
            throw XCTSkip("\(name) is not installed: \(purpose) needs it")
        }
        return path
    }
}

/// A JSON value with its exact type: the strict decoder keeps `true` and `1`
/// (and `"1"`) apart, which JSONSerialization's NSNumber does not.
indirect enum TypedJSON: Decodable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([TypedJSON])
    case object([String: TypedJSON])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null; return }
        if let value = try? container.decode(Bool.self) { self = .bool(value); return }
        if let value = try? container.decode(Double.self) { self = .number(value); return }
        if let value = try? container.decode(String.self) { self = .string(value); return }
        if let value = try? container.decode([TypedJSON].self) { self = .array(value); return }
        self = .object(try container.decode([String: TypedJSON].self))
    }

    static func parse(_ bytes: [UInt8]) throws -> TypedJSON {
        try JSONDecoder().decode(TypedJSON.self, from: Data(bytes))
    }

    /// The JSON type's name: null, bool, number, string, array, object.
    var type: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    var object: [String: TypedJSON]? { if case .object(let o) = self { o } else { nil } }
    var array: [TypedJSON]? { if case .array(let a) = self { a } else { nil } }
    var string: String? { if case .string(let s) = self { s } else { nil } }
    var number: Double? { if case .number(let n) = self { n } else { nil } }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): String(b)
        case .number(let n): String(n)
        case .string(let s): "\"\(s)\""
        case .array(let a): "[" + a.map(\.description).joined(separator: ",") + "]"
        case .object(let o): "{" + o.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        }
    }
}

extension EndToEndCase {
    /// Writes `text` to `path` (mode `mode`).
    func writeFile(_ path: String, _ text: String, mode: mode_t = 0o644, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(text.utf8),
                                                     attributes: [.posixPermissions: Int(mode)]),
                      "cannot write \(path)", file: file, line: line)
    }

    /// Whether a file exists (without following a final symlink).
    func fileExists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// A file's contents as text, or nil.
    func readText(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `locket [ARGS] unlock --password-stdin [--timeout T]`; asserts success and silence.
    func unlockForTest(_ arguments: [String] = [], timeout: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
        let args = arguments + ["unlock", "--password-stdin"] + (timeout.map { ["--timeout", $0] } ?? [])
        let result = locket(args, input: .text(Self.password + "\n"), file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", result.summary, file: file, line: line)
    }

    /// Starts `locket ARGS` in the background in the sandbox.
    func startLocket(_ arguments: [String], environment extra: [String: String] = [:],
                     file: StaticString = #filePath, line: UInt = #line) throws -> BackgroundProcess {
        var environment = sandbox.environment
        for (name, value) in extra { environment[name] = value }
        return try BackgroundProcess(binary, arguments, environment: environment)
    }

    /// Runs a system program (not locket) with the sandbox environment plus `extra`; killed after `timeout`.
    func runTool(_ executable: String, _ arguments: [String], input: Input = .devNull,
                 environment extra: [String: String] = [:], timeout: Double = 10,
                 file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        var environment = sandbox.environment
        for (name, value) in extra { environment[name] = value }
        let result = Spawn.run(executable, arguments, environment: environment, input: input, timeout: timeout)
        if result.timedOut {
            XCTFail("\(executable) timed out after \(timeout) s: \(result.summary)", file: file, line: line)
        }
        return result
    }
}
