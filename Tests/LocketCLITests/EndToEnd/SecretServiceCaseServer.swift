import Foundation
import LocketTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The test process's one python3 for its Secret Service cases
/// (Tests/Fixtures/secret-service/cases.py): started at the first case, it
/// forks a process for each case that runs `python3 FILE CASE` as that
/// command would (its own environment, modules, bus, provider and keychain),
/// without an interpreter's start and the imports of jeepney and
/// cryptography each time: ~0.1 CPU-s a case (issue 38).
final class SecretServiceCaseServer {
    nonisolated(unsafe) private static var running: SecretServiceCaseServer?

    private let process: BackgroundProcess
    private var requests: Int32
    private let directory: String
    private var linesRead = 0
    private var cases = 0

    /// The running server, started if there is none (or the last one died),
    /// with the python modules `preloading` imported (once a test process:
    /// a class's tests share it).
    static func shared(preloading modules: [String] = []) throws -> SecretServiceCaseServer {
        if let server = running, !server.process.hasExited { return server }
        let server = try SecretServiceCaseServer(preloading: modules)
        running = server
        return server
    }

    /// Ends the server and waits for it (at the class's end): its CPU time,
    /// and its cases', then counts in the test process's (Tests/run-tests --times).
    static func stop() {
        guard let server = running else { return }
        running = nil
        close(server.requests)
        server.requests = -1
        _ = server.process.wait(timeout: 30)
    }

    private init(preloading modules: [String]) throws {
        var template = Array("/tmp/locket-cases.XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { throw POSIXError(.EIO) }
        directory = String(cString: made)
        let fifo = directory + "/requests"
        guard mkfifo(fifo, 0o600) == 0 else { throw POSIXError(.EIO) }
        let server = try BackgroundProcess("/usr/bin/python3", [SecretServiceCase.fixtures + "/cases.py", fifo] + modules,
                                           environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONNOUSERSITE": "1"])
        // The open for writing succeeds once the server has the FIFO open for reading.
        var fd: Int32 = -1
        let opened = server.waitUntil(timeout: 60) {
            fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            return fd >= 0 || server.hasExited
        }
        unlink(fifo)
        guard opened, fd >= 0 else {
            server.terminate()
            try? FileManager.default.removeItem(atPath: directory)
            throw SecretServiceCaseServerError.didNotStart(server.summary)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        process = server
        requests = fd
    }

    deinit {
        if requests >= 0 { close(requests) }
        process.terminate()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `python3 FILE CASE` with exactly `environment`, stdin /dev/null, killed after `timeout` seconds.
    func run(_ file: String, _ name: String, environment: [String: String], timeout: Double) -> RunResult {
        let started = Date()
        cases += 1
        let out = "\(directory)/\(cases).out", err = "\(directory)/\(cases).err"
        defer { unlink(out); unlink(err) }
        let request: [String: Any] = ["file": file, "case": name, "environment": environment, "stdout": out, "stderr": err]
        var line = (try? JSONSerialization.data(withJSONObject: request)).map { [UInt8]($0) } ?? []
        line.append(UInt8(ascii: "\n"))
        let sent = line.withUnsafeBytes { write(requests, $0.baseAddress, $0.count) }
        guard sent == line.count, let pid = nextLine(prefix: "started ", timeout: 30).flatMap({ pid_t($0) }) else {
            return failure("the case server did not start the case", file, name, started)
        }
        var timedOut = false
        var ended = nextLine(prefix: "ended ", timeout: timeout)
        if ended == nil {
            timedOut = true
            kill(pid, SIGKILL)
            ended = nextLine(prefix: "ended ", timeout: 10)
        }
        guard let code = ended.flatMap({ Int32($0) }) else { return failure("the case server did not end the case", file, name, started) }
        return RunResult(status: code >= 0 ? code : nil, signal: code < 0 ? -code : nil, stdout: Self.read(out), stderr: Self.read(err),
                         timedOut: timedOut, duration: Date().timeIntervalSince(started), arguments: [file, name])
    }

    /// The rest of the server's next stdout line, which must start with `prefix`; nil after `timeout` seconds.
    private func nextLine(prefix: String, timeout: Double) -> String? {
        var found: String?
        _ = process.waitForOutput(timeout: timeout) {
            let lines = process.out.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            guard lines.count > linesRead else { return process.hasExited }
            let line = lines[lines.startIndex + linesRead]
            linesRead += 1
            found = line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : nil
            return true
        }
        return found
    }

    private func failure(_ message: String, _ file: String, _ name: String, _ started: Date) -> RunResult {
        let summary = "\(message): \(process.summary)"
        process.terminate()
        return RunResult(status: nil, signal: nil, stdout: [], stderr: Array(summary.utf8), timedOut: false,
                         duration: Date().timeIntervalSince(started), arguments: [file, name])
    }

    private static func read(_ path: String) -> [UInt8] {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).map { [UInt8]($0) } ?? []
    }
}

enum SecretServiceCaseServerError: Error { case didNotStart(String) }
