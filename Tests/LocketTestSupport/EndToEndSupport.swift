import Foundation
import LocketCore
import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

// The one process runner of the tests (issue 12): runs a program as a user
// would, with exact argv and environment, stdin piped or /dev/null, no
// terminal, and a private HOME/XDG sandbox per test.

/// What the child reads on standard input.
public enum Input: Sendable {
    /// `/dev/null`: immediate end of file.
    case devNull
    /// These exact bytes through a pipe, which is then closed.
    case bytes([UInt8])
    /// A pipe that stays open and silent until the child exits (a CI job's idle stdin).
    case silentPipe

    public static func text(_ s: String) -> Input { .bytes(Array(s.utf8)) }
}

/// One finished run of the binary.
public struct RunResult: Sendable {
    /// The exit status, or nil when the process was killed by a signal.
    public var status: Int32?
    /// The signal that ended the process, if any.
    public var signal: Int32?
    public var stdout: [UInt8]
    public var stderr: [UInt8]
    public var timedOut: Bool
    /// Wall-clock seconds.
    public var duration: Double
    public var arguments: [String]

    public init(status: Int32?, signal: Int32?, stdout: [UInt8], stderr: [UInt8], timedOut: Bool, duration: Double, arguments: [String]) {
        self.status = status
        self.signal = signal
        self.stdout = stdout
        self.stderr = stderr
        self.timedOut = timedOut
        self.duration = duration
        self.arguments = arguments
    }

    public var out: String { String(decoding: stdout, as: UTF8.self) }
    public var err: String { String(decoding: stderr, as: UTF8.self) }
    /// Non-empty stderr lines.
    public var errLines: [String] { err.split(separator: "\n").map(String.init) }

    /// A one-line summary for failure messages.
    public var summary: String {
        let how = timedOut ? "timed out" : signal.map { "killed by signal \($0)" } ?? "exit \(status ?? -1)"
        return "locket \(arguments.joined(separator: " ")) -> \(how)\nstdout: \(out.prefix(2000))\nstderr: \(err.prefix(2000))"
    }

    /// The stdout parsed as JSON.
    public func json() throws -> Any {
        try JSONSerialization.jsonObject(with: Data(stdout), options: [.fragmentsAllowed])
    }

    /// The stdout parsed as one JSON object.
    public func jsonObject(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try json()
        guard let typed = value as? [String: Any] else { throw UnexpectedOutput("not a JSON object: \(out)", file: file, line: line) }
        return typed
    }

    /// The stdout parsed as a JSON array of objects.
    public func jsonArray(file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        let value = try json()
        guard let typed = value as? [[String: Any]] else { throw UnexpectedOutput("not a JSON array of objects: \(out)", file: file, line: line) }
        return typed
    }

    /// The stderr parsed as one JSON object (errors under --json).
    public func jsonError(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(stderr), options: [])
        guard let typed = value as? [String: Any] else { throw UnexpectedOutput("stderr is not a JSON object: \(err)", file: file, line: line) }
        return typed
    }

    /// `name: value` lines of text output, first occurrence of each name.
    public var fields: [String: String] {
        var out: [String: String] = [:]
        for line in self.out.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = String(line[..<colon])
            var value = line[line.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
            if out[name] == nil { out[name] = String(value) }
        }
        return out
    }
}

/// Output that is not what a test expected to parse, thrown where it was parsed.
/// (This target uses no XCTest: `swift build` of the package builds it too.)
public struct UnexpectedOutput: Error, CustomStringConvertible {
    public let description: String

    public init(_ message: String, file: StaticString = #filePath, line: UInt = #line) {
        description = "\(file):\(line): \(message)"
    }
}

/// Runs a program with posix_spawn: exact argv and environment, stdin piped
/// or /dev/null, stdout and stderr captured as bytes, killed after `timeout`.
public enum Spawn {
    public static let ignoreSIGPIPE: Void = {
        // Writing stdin to a child that exits early must fail with EPIPE, not kill the test runner.
        signal(SIGPIPE, SIG_IGN)
    }()

    public static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                    input: Input, timeout: Double) -> RunResult {
        run(executable, arguments, environmentEntries: ProcessSpawner.entries(environment),
            input: input, timeout: timeout)
    }

    /// `run` with the environment as raw `NAME=VALUE` entries, which need not be UTF-8.
    public static func run(_ executable: String, _ arguments: [String], environmentEntries: [[UInt8]],
                    input: Input, timeout: Double) -> RunResult {
        _ = ignoreSIGPIPE
        let started = Date()
        ProcessSpawner.lock.lock()
        var locked = true
        defer { if locked { ProcessSpawner.lock.unlock() } }
        var inPipe: [Int32] = [-1, -1], outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        precondition(ProcessSpawner.makePipe(&outPipe) && ProcessSpawner.makePipe(&errPipe))
        var stdin = ChildStream.devNull
        switch input {
        case .devNull:
            break
        case .bytes, .silentPipe:
            precondition(ProcessSpawner.makePipe(&inPipe))
            stdin = .descriptor(inPipe[0])
        }
        let spawned = ProcessSpawner.spawn(executable, arguments.map { Array($0.utf8) }, environmentEntries: environmentEntries,
                                           stdin: stdin, stdout: .descriptor(outPipe[1]), stderr: .descriptor(errPipe[1]))
        // The child has its copies; close ours of its ends.
        close(outPipe[1])
        close(errPipe[1])
        if inPipe[0] >= 0 { close(inPipe[0]) }
        ProcessSpawner.lock.unlock()
        locked = false
        guard case .success(let pid) = spawned else {
            close(outPipe[0]); close(errPipe[0])
            if inPipe[1] >= 0 { close(inPipe[1]) }
            let reason = spawned.error.map(String.init(describing:)) ?? ""
            return RunResult(status: nil, signal: nil, stdout: [], stderr: Array("posix_spawn failed: \(reason)".utf8),
                             timedOut: false, duration: 0, arguments: arguments)
        }

        var toWrite: [UInt8] = []
        if case .bytes(let bytes) = input { toWrite = bytes }
        var written = 0
        var inFD = inPipe[1]
        // Held open, never written, closed once the child is done.
        var silentFD: Int32 = -1
        if case .silentPipe = input { silentFD = inFD; inFD = -1 }
        if inFD >= 0 {
            _ = fcntl(inFD, F_SETFL, fcntl(inFD, F_GETFL) | O_NONBLOCK)
            if toWrite.isEmpty { close(inFD); inFD = -1 }
        }
        var pipes = OutputPipes(outFD: outPipe[0], errFD: errPipe[0])
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var timedOut = false
        let deadline = started.addingTimeInterval(timeout)

        while pipes.isOpen {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 {
                timedOut = true
                kill(pid, SIGKILL)
                break
            }
            var fds: [pollfd] = []
            if inFD >= 0 { fds.append(pollfd(fd: inFD, events: Int16(POLLOUT), revents: 0)) }
            fds += pipes.pollEntries
            let timeout = Int32(min(remaining, 1) * 1000) + 1
            guard case .success = valueOrErrno("poll", { poll(&fds, nfds_t(fds.count), timeout) }) else { break }
            for p in fds where p.revents != 0 {
                if p.fd == inFD {
                    let w = toWrite.withUnsafeBytes { raw in
                        valueOrErrno("write") { write(inFD, raw.baseAddress! + written, min(raw.count - written, 65_536)) }
                    }
                    if case .success(let n) = w { written += n }
                    if (w.error != nil && w.error?.code != EAGAIN) || written == toWrite.count {
                        close(inFD); inFD = -1
                    }
                } else {
                    pipes.read(p.fd, &buffer)
                }
            }
        }
        for fd in [inFD, silentFD] where fd >= 0 { close(fd) }
        pipes.closeAll()
        let waitStatus = (try? Spawner.wait(pid).get().status) ?? 0
        let termSignal = waitStatus & 0x7f
        return RunResult(status: termSignal == 0 ? (waitStatus >> 8) & 0xff : nil,
                         signal: termSignal == 0 ? nil : termSignal,
                         stdout: pipes.stdout, stderr: pipes.stderr, timedOut: timedOut,
                         duration: Date().timeIntervalSince(started), arguments: arguments)
    }
}

/// A private directory tree for one test: HOME, XDG_DATA_HOME, XDG_STATE_HOME
/// and XDG_RUNTIME_DIR (all 0700), removed afterwards.
public final class Sandbox {
    public let root: String
    public var home: String { root }
    public var dataHome: String { root + "/data" }
    public var stateHome: String { root + "/state" }
    public var runtimeDir: String { root + "/run" }
    /// The default keychain: `$XDG_DATA_HOME/locket/login.keychain`.
    public var loginKeychain: String { dataHome + "/locket/login.keychain" }

    public init() throws {
        var template = Array("/tmp/locket-e2e.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        root = String(cString: made)
        chmod(root, 0o700)
        for dir in [dataHome, stateHome, runtimeDir] {
            guard mkdir(dir, 0o700) == 0 else { throw POSIXError(.EIO) }
        }
    }

    /// PATH plus the sandbox: nothing is inherited from the developer's environment.
    public var environment: [String: String] {
        [
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "XDG_DATA_HOME": dataHome,
            "XDG_STATE_HOME": stateHome,
            "XDG_RUNTIME_DIR": runtimeDir,
            "LOCKET_SESSION": "dir",
        ]
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// The binary under test: `LOCKET_BIN`, else the release build, else the debug build.
public enum LocketBinary {
    public static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // LocketTestSupport, Tests, file
        return url.path
    }()

    public static let path: String? = {
        if let bin = ProcessInfo.processInfo.environment["LOCKET_BIN"], !bin.isEmpty { return bin }
        for candidate in [".build/release/locket", ".build/debug/locket"] {
            let path = repositoryRoot + "/" + candidate
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()
}

