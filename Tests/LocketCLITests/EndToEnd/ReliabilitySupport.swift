import CLocketSystem
import Foundation
import LocketSystem
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// Support for the reliability suite (issue 6, SPEC §7): scale factors for
// `make soak`, a seeded random generator, processes that can be killed at a
// chosen instant, byte-exact argv and figure reports (SQLite from the test:
// ReliabilityDatabase in LocketTestSupport).

/// Figures that go into docs/RELIABILITY.md: printed as one line per test,
/// `RELIABILITY <test>: key=value, ...`, and appended to `LOCKET_RELIABILITY_LOG` when set.
enum ReliabilityReport {
    static func print(_ test: String, _ figures: [(String, String)]) {
        let line = "RELIABILITY \(test): " + figures.map { "\($0.0)=\($0.1)" }.joined(separator: ", ")
        // Straight to fd 1: XCTest's own output is line-buffered through stdio.
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        if let path = ProcessInfo.processInfo.environment["LOCKET_RELIABILITY_LOG"], !path.isEmpty {
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            if fd >= 0 {
                _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
        }
    }

    /// `a:3 b:5` for a tally, keys sorted.
    static func tally(_ counts: [String: Int]) -> String {
        counts.isEmpty ? "none" : counts.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " ")
    }
}

/// The suite's generator: SplitMix64, reproducible from a printed seed.
typealias ReliabilityRandom = SplitMix

extension SplitMix {
    /// `count` bytes, each word's lowest byte first. A word at a time into
    /// the array's storage: the suites draw secrets of up to 16 MiB, which
    /// a byte at a time took seconds of the debug build's CPU.
    mutating func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { raw in
            var i = 0
            while i + 8 <= count {
                raw.storeBytes(of: next().littleEndian, toByteOffset: i, as: UInt64.self)
                i += 8
            }
            if i < count {
                var v = next()
                while i < count {
                    raw[i] = UInt8(truncatingIfNeeded: v)
                    v >>= 8
                    i += 1
                }
            }
        }
        return out
    }
}

/// A locket process started without waiting for it: stdin from a file (or
/// /dev/null), stdout and stderr into files (or /dev/null), argv as exact bytes.
struct ReliabilityChild {
    let pid: pid_t

    /// How a waited-for process ended.
    struct Exit {
        var status: Int32?
        var signal: Int32?
        /// Peak resident memory in KiB: the last VmHWM read from /proc while it
        /// ran. (wait4's ru_maxrss is useless here: posix_spawn's child shares
        /// the test process's memory until it execs, so it reports the runner's size.)
        var maxRSSKiB: Int
        var timedOut = false
    }

    static func spawn(_ executable: String, _ arguments: [[UInt8]], environment: [String: String],
                      stdin: String? = nil, stdout: String? = nil, stderr: String? = nil) -> ReliabilityChild? {
        func stream(_ path: String?) -> ChildStream { path.map { .file($0) } ?? .devNull }
        let spawned = ProcessSpawner.spawn(executable, arguments, environmentEntries: ProcessSpawner.entries(environment),
                                           stdin: stream(stdin), stdout: stream(stdout), stderr: stream(stderr))
        guard case .success(let pid) = spawned else { return nil }
        return ReliabilityChild(pid: pid)
    }

    static func spawn(_ executable: String, _ arguments: [String], environment: [String: String],
                      stdin: String? = nil, stdout: String? = nil, stderr: String? = nil) -> ReliabilityChild? {
        spawn(executable, arguments.map { Array($0.utf8) }, environment: environment, stdin: stdin, stdout: stdout, stderr: stderr)
    }

    func kill(_ signal: Int32 = SIGKILL) { _ = Glibc.kill(pid, signal) }

    /// Sleeps `milliseconds` unless the process ends first (seen on a pidfd
    /// the instant it does): then when it ended (`ReliabilityClock`), else
    /// nil. It is left for `wait` to reap.
    func sleep(milliseconds: Double) -> Double? {
        let until = ReliabilityClock.now() + milliseconds / 1000
        while true {
            let remaining = (until - ReliabilityClock.now()) * 1000
            if remaining <= 0 { return nil }
            // poll(2) counts whole milliseconds: the rest is slept.
            if remaining < 1 {
                ReliabilityClock.sleep(milliseconds: remaining)
                return nil
            }
            switch locket_wait_for_exit(pid, Int32(remaining)) {
            case 1: return ReliabilityClock.now()
            case 0: continue
            default:
                // No pidfds: the plain sleep.
                ReliabilityClock.sleep(milliseconds: remaining)
                return nil
            }
        }
    }

    /// Waits for the process; kills it after `timeout` seconds.
    func wait(timeout: Double = 60) -> Exit {
        let deadline = ReliabilityClock.now() + timeout
        var status: Int32 = 0
        var timedOut = false
        var peak = 0
        polling: while true {
            if let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
               let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
               let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") {
                peak = max(peak, kib)
            }
            switch Spawner.wait(pid, options: WNOHANG) {
            case .success(let ended) where ended.pid == pid:
                status = ended.status
                break polling
            case .success:
                break
            case .failure:
                return Exit(status: nil, signal: nil, maxRSSKiB: 0)
            }
            if ReliabilityClock.now() > deadline && !timedOut {
                timedOut = true
                kill()
            }
            usleep(200)
        }
        let signal = status & 0x7f
        return Exit(status: signal == 0 ? (status >> 8) & 0xff : nil, signal: signal == 0 ? nil : signal,
                    maxRSSKiB: peak, timedOut: timedOut)
    }
}

enum ReliabilityClock {
    /// Monotonic seconds.
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    static func sleep(milliseconds: Double) {
        if milliseconds > 0 { usleep(UInt32(milliseconds * 1000)) }
    }
}

/// Runs `body(i)` for i in 0..<count, each on its own thread (not GCD's pool,
/// which on two cores would run blocking workers two at a time), and waits for all.
func reliabilityParallel(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchSemaphore(value: 0)
    for i in 0..<count {
        let thread = Thread {
            body(i)
            done.signal()
        }
        thread.stackSize = 1 << 21
        thread.start()
    }
    for _ in 0..<count { done.wait() }
}

enum ReliabilityFiles {
    static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    /// Writes `bytes` to `path` (replacing it in place), mode 0600.
    static func write(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) {
        let opened = valueOrErrno("open") { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }
        guard case .success(let fd) = opened else { preconditionFailure("cannot write \(path): \(opened.error!)") }
        _ = writeAll(fd, bytes)
        fchmod(fd, mode)
        close(fd)
    }

    /// Every regular file under `root`, recursively (symbolic links not followed).
    static func allFiles(under root: String) -> [String] {
        var out: [String] = []
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { return out }
        for name in names.sorted() {
            let path = root + "/" + name
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            switch st.st_mode & S_IFMT {
            case S_IFDIR: out += allFiles(under: path)
            case S_IFREG: out.append(path)
            default: break
            }
        }
        return out
    }

    /// A private temporary directory outside any sandbox (for captured output).
    static func temporaryDirectory() -> String {
        var template = Array("/tmp/locket-rel.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(cString: made!)
    }
}

// MARK: - Output checks

enum ReliabilityOutput {
    /// Whether stderr is the standard error format: `locket: error: ... (errSecX -N)`,
    /// optionally followed by one `locket: hint:` line; under `--json`: one JSON object with `error` and `status`.
    static func isOneLineError(_ result: RunResult) -> Bool {
        let lines = result.errLines
        if lines.count == 1, lines[0].hasPrefix("{"),
           let object = (try? JSONSerialization.jsonObject(with: Data(lines[0].utf8))) as? [String: Any] {
            return object["error"] is String && object["status"] is Int && object["message"] is String
        }
        guard let first = lines.first, first.hasPrefix("locket: error: "), first.hasSuffix(")"),
              first.range(of: "(errSec") != nil else { return false }
        if lines.count == 1 { return true }
        return lines.count == 2 && lines[1].hasPrefix("locket: hint: ")
    }

    /// `errSecX -N` of an error, text or JSON.
    static func errorName(_ result: RunResult) -> String? {
        guard let first = result.errLines.first else { return nil }
        if first.hasPrefix("{"), let object = (try? JSONSerialization.jsonObject(with: Data(first.utf8))) as? [String: Any],
           let name = object["error"] as? String, let status = object["status"] as? Int {
            return "\(name) \(status)"
        }
        guard let open = first.range(of: "(errSec", options: .backwards) else { return nil }
        return String(first[first.index(after: open.lowerBound)...].dropLast())
    }

    /// Messages that mean SQLite's locking reached a user.
    static func mentionsBusy(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.contains("busy") || lower.contains("database is locked") || lower.contains("database table is locked")
            || lower.contains("sqlite")
    }

    /// Decodes the secret of a `--json` item object: `data` (UTF-8) or `dataBase64`.
    static func secret(_ item: [String: Any]) -> [UInt8]? {
        if let text = item["data"] as? String { return Array(text.utf8) }
        if let b64 = item["dataBase64"] as? String, let data = Data(base64Encoded: b64) { return Array(data) }
        return nil
    }
}

// MARK: - Running the binary with argument arrays

extension EndToEndCase {
    /// Runs `locket ARGS` and asserts success with nothing on stderr.
    @discardableResult
    func reliableOK(_ arguments: [String], input: Input = .devNull, environment: [String: String] = [:],
                    file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(arguments, input: input, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", "unexpected stderr: \(result.summary)", file: file, line: line)
        return result
    }

    /// Runs `locket ARGS` and asserts the exit status.
    @discardableResult
    func reliableExpect(_ status: Int32, _ arguments: [String], input: Input = .devNull, environment: [String: String] = [:],
                        file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(arguments, input: input, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }
}
