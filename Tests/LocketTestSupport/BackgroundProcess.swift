import Foundation
import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

/// A process started in the background: its pid while it runs, its output
/// collected as it comes (with arrival times), and a bounded wait.
public final class BackgroundProcess {
    public let pid: pid_t
    public let started = Date()
    public var stdout: [UInt8] { pipes.stdout }
    public var stderr: [UInt8] { pipes.stderr }
    private var pipes: OutputPipes
    /// Exit status or terminating signal once reaped.
    public private(set) var status: Int32?
    public private(set) var signal: Int32?
    public private(set) var reaped = false

    public var out: String { String(decoding: stdout, as: UTF8.self) }
    public var err: String { String(decoding: stderr, as: UTF8.self) }
    public var elapsed: Double { Date().timeIntervalSince(started) }

    /// Starts `executable ARGS` with exactly `environment`, stdin from /dev/null.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
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
        pipes = OutputPipes(outFD: outPipe[0], errFD: errPipe[0])
        for fd in [outPipe[0], errPipe[0]] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }

    deinit { terminate() }

    /// Reads whatever output arrives within `seconds` (at least one poll).
    public func pump(_ seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        repeat {
            guard readOnce(within: min(deadline.timeIntervalSinceNow, 0.02), &buffer) else { return }
        } while deadline.timeIntervalSinceNow > 0
    }

    /// One poll of the output, up to `seconds`, and what it says is ready read;
    /// false when there is nothing left to poll (after sleeping up to 20 ms) or poll fails.
    private func readOnce(within seconds: Double, _ buffer: inout [UInt8]) -> Bool {
        var fds = pipes.pollEntries
        if fds.isEmpty {
            if seconds > 0 { usleep(UInt32(min(seconds, 0.02) * 1_000_000)) }
            return false
        }
        let wait = max(0, seconds)
        guard case .success = valueOrErrno("poll", { poll(&fds, nfds_t(fds.count), Int32(wait * 1000)) }) else { return false }
        for p in fds where p.revents != 0 { pipes.read(p.fd, &buffer) }
        return true
    }

    /// Whether the process has exited (reaps it without blocking).
    public var hasExited: Bool {
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

    /// As `waitUntil`, for a condition on the output: asleep in poll until
    /// output comes (or, if it never does, a second passes), not awake every
    /// 20 ms. A test waiting on a process that says when it is done pays
    /// ~17 ms of CPU a second of the wait otherwise (the debug build's pump;
    /// issue 38).
    @discardableResult
    public func waitForOutput(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !condition() {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return false }
            _ = readOnce(within: min(left, 1), &buffer)
        }
        return true
    }

    /// Pumps output until `condition` holds; false after `timeout` seconds.
    @discardableResult
    public func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
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
    public func wait(timeout: Double) -> Bool {
        let exited = waitUntil(timeout: timeout) { self.hasExited }
        guard exited else {
            terminate()
            return false
        }
        // The output ends when every writer is gone; bounded, since a grandchild may hold it.
        _ = waitUntil(timeout: 2) { !self.pipes.isOpen }
        return true
    }

    /// Closes the test's end of the process's stdout, as a reader that has
    /// had enough does (`| head -1`): its next writes fail with EPIPE.
    public func closeStdout() {
        pipes.closeOne(pipes.outFD)
    }

    /// Kills the process (SIGKILL) if it is still running, reaps it, closes the pipes.
    public func terminate() {
        if !reaped {
            kill(pid, SIGKILL)
            record((try? Spawner.wait(pid).get().status) ?? 0)
        }
        pipes.closeAll()
    }

    /// A one-line summary for failure messages.
    public var summary: String {
        let how = !reaped ? "running" : signal.map { "killed by signal \($0)" } ?? "exit \(status ?? -1)"
        return "pid \(pid) -> \(how)\nstdout: \(out.prefix(2000))\nstderr: \(err.prefix(2000))"
    }
}
