import Foundation
import LocketCore
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// End-to-end support: runs the built `locket` binary as a user would, with
// stdin piped, no terminal, and a private HOME/XDG sandbox per test.

/// What the child reads on standard input.
enum Input {
    /// `/dev/null`: immediate end of file.
    case devNull
    /// These exact bytes through a pipe, which is then closed.
    case bytes([UInt8])
    /// A pipe that stays open and silent until the child exits (a CI job's idle stdin).
    case silentPipe

    static func text(_ s: String) -> Input { .bytes(Array(s.utf8)) }
}

/// One finished run of the binary.
struct RunResult {
    /// The exit status, or nil when the process was killed by a signal.
    var status: Int32?
    /// The signal that ended the process, if any.
    var signal: Int32?
    var stdout: [UInt8]
    var stderr: [UInt8]
    var timedOut: Bool
    /// Wall-clock seconds.
    var duration: Double
    var arguments: [String]

    var out: String { String(decoding: stdout, as: UTF8.self) }
    var err: String { String(decoding: stderr, as: UTF8.self) }
    /// Non-empty stderr lines.
    var errLines: [String] { err.split(separator: "\n").map(String.init) }

    /// A one-line summary for failure messages.
    var summary: String {
        let how = timedOut ? "timed out" : signal.map { "killed by signal \($0)" } ?? "exit \(status ?? -1)"
        return "locket \(arguments.joined(separator: " ")) -> \(how)\nstdout: \(out.prefix(2000))\nstderr: \(err.prefix(2000))"
    }

    /// The stdout parsed as JSON.
    func json() throws -> Any {
        try JSONSerialization.jsonObject(with: Data(stdout), options: [.fragmentsAllowed])
    }

    /// The stdout parsed as one JSON object.
    func jsonObject(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try json()
        return try XCTUnwrap(value as? [String: Any], "not a JSON object: \(out)", file: file, line: line)
    }

    /// The stdout parsed as a JSON array of objects.
    func jsonArray(file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        let value = try json()
        return try XCTUnwrap(value as? [[String: Any]], "not a JSON array of objects: \(out)", file: file, line: line)
    }

    /// The stderr parsed as one JSON object (errors under --json).
    func jsonError(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(stderr), options: [])
        return try XCTUnwrap(value as? [String: Any], "stderr is not a JSON object: \(err)", file: file, line: line)
    }

    /// `name: value` lines of text output, first occurrence of each name.
    var fields: [String: String] {
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

/// Runs a program with posix_spawn: exact argv and environment, stdin piped
/// or /dev/null, stdout and stderr captured as bytes, killed after `timeout`.
enum Spawn {
    static let ignoreSIGPIPE: Void = {
        // Writing stdin to a child that exits early must fail with EPIPE, not kill the test runner.
        signal(SIGPIPE, SIG_IGN)
    }()

    /// A pipe whose ends close on exec (the child gets only the dup2'd copies).
    private static func makePipe(_ fds: inout [Int32]) -> Bool {
        guard pipe(&fds) == 0 else { return false }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// Held from creating the pipes to posix_spawn, so that a child spawned
    /// by another thread never inherits this child's pipe ends (which would
    /// keep them open and hide end-of-file).
    private static let spawnLock = NSLock()

    static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                    input: Input, timeout: Double) -> RunResult {
        run(executable, arguments, environmentEntries: environment.sorted { $0.key < $1.key }.map { Array("\($0.key)=\($0.value)".utf8) },
            input: input, timeout: timeout)
    }

    /// `run` with the environment as raw `NAME=VALUE` entries, which need not be UTF-8.
    static func run(_ executable: String, _ arguments: [String], environmentEntries: [[UInt8]],
                    input: Input, timeout: Double) -> RunResult {
        _ = ignoreSIGPIPE
        let started = Date()
        spawnLock.lock()
        var locked = true
        defer { if locked { spawnLock.unlock() } }
        var inPipe: [Int32] = [-1, -1], outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        precondition(makePipe(&outPipe) && makePipe(&errPipe))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch input {
        case .devNull:
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .bytes, .silentPipe:
            precondition(makePipe(&inPipe))
            posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)

        // The child starts with default signal dispositions (we ignore SIGPIPE here).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environmentEntries.map { entry in
            let copy = malloc(entry.count + 1)!.assumingMemoryBound(to: CChar.self)
            entry.withUnsafeBytes { if let base = $0.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: $0.count) } }
            copy[entry.count] = 0
            return copy
        } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        // The child has its copies; close ours of its ends.
        close(outPipe[1])
        close(errPipe[1])
        if inPipe[0] >= 0 { close(inPipe[0]) }
        spawnLock.unlock()
        locked = false
        guard rc == 0 else {
            close(outPipe[0]); close(errPipe[0])
            if inPipe[1] >= 0 { close(inPipe[1]) }
            return RunResult(status: nil, signal: nil, stdout: [], stderr: Array("posix_spawn failed: \(String(cString: strerror(rc)))".utf8),
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
        var outFD = outPipe[0], errFD = errPipe[0]
        var stdout: [UInt8] = [], stderr: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var timedOut = false
        let deadline = started.addingTimeInterval(timeout)

        while outFD >= 0 || errFD >= 0 {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 {
                timedOut = true
                kill(pid, SIGKILL)
                break
            }
            var fds: [pollfd] = []
            if inFD >= 0 { fds.append(pollfd(fd: inFD, events: Int16(POLLOUT), revents: 0)) }
            if outFD >= 0 { fds.append(pollfd(fd: outFD, events: Int16(POLLIN), revents: 0)) }
            if errFD >= 0 { fds.append(pollfd(fd: errFD, events: Int16(POLLIN), revents: 0)) }
            let n = poll(&fds, nfds_t(fds.count), Int32(min(remaining, 1) * 1000) + 1)
            if n < 0 { if errno == EINTR { continue }; break }
            for p in fds where p.revents != 0 {
                if p.fd == inFD {
                    let w = toWrite.withUnsafeBytes { raw in
                        write(inFD, raw.baseAddress! + written, min(raw.count - written, 65_536))
                    }
                    if w > 0 { written += w }
                    if (w < 0 && errno != EAGAIN && errno != EINTR) || written == toWrite.count {
                        close(inFD); inFD = -1
                    }
                } else {
                    let r = buffer.withUnsafeMutableBytes { read(p.fd, $0.baseAddress, $0.count) }
                    if r > 0 {
                        if p.fd == outFD { stdout += buffer[0..<r] } else { stderr += buffer[0..<r] }
                    } else if r == 0 || (errno != EINTR && errno != EAGAIN) {
                        close(p.fd)
                        if p.fd == outFD { outFD = -1 } else { errFD = -1 }
                    }
                }
            }
        }
        for fd in [inFD, outFD, errFD, silentFD] where fd >= 0 { close(fd) }
        var waitStatus: Int32 = 0
        while waitpid(pid, &waitStatus, 0) < 0 && errno == EINTR {}
        let termSignal = waitStatus & 0x7f
        return RunResult(status: termSignal == 0 ? (waitStatus >> 8) & 0xff : nil,
                         signal: termSignal == 0 ? nil : termSignal,
                         stdout: stdout, stderr: stderr, timedOut: timedOut,
                         duration: Date().timeIntervalSince(started), arguments: arguments)
    }
}

/// A private directory tree for one test: HOME, XDG_DATA_HOME, XDG_STATE_HOME
/// and XDG_RUNTIME_DIR (all 0700), removed afterwards.
final class Sandbox {
    let root: String
    var home: String { root }
    var dataHome: String { root + "/data" }
    var stateHome: String { root + "/state" }
    var runtimeDir: String { root + "/run" }
    /// The default keychain: `$XDG_DATA_HOME/locket/login.keychain`.
    var loginKeychain: String { dataHome + "/locket/login.keychain" }

    init() throws {
        var template = Array("/tmp/locket-e2e.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        root = String(cString: made)
        chmod(root, 0o700)
        for dir in [dataHome, stateHome, runtimeDir] {
            guard mkdir(dir, 0o700) == 0 else { throw POSIXError(.EIO) }
        }
    }

    /// PATH plus the sandbox: nothing is inherited from the developer's environment.
    var environment: [String: String] {
        [
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "XDG_DATA_HOME": dataHome,
            "XDG_STATE_HOME": stateHome,
            "XDG_RUNTIME_DIR": runtimeDir,
            "LOCKET_SESSION": "dir",
        ]
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// The binary under test: `LOCKET_BIN`, else the release build, else the debug build.
enum LocketBinary {
    static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }  // EndToEnd, LocketCLITests, Tests, file
        return url.path
    }()

    static let path: String? = {
        if let bin = ProcessInfo.processInfo.environment["LOCKET_BIN"], !bin.isEmpty { return bin }
        for candidate in [".build/release/locket", ".build/debug/locket"] {
            let path = repositoryRoot + "/" + candidate
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()
}

/// The base of every end-to-end test case: a fresh sandbox per test and
/// helpers to run the binary and check its output.
class EndToEndCase: XCTestCase {
    static let password = "correct horse battery staple"
    /// Seconds after which a run is killed and the test fails.
    static let timeout = 20.0

    var sandbox: Sandbox!
    var binary: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        binary = try XCTUnwrap(LocketBinary.path, "no locket binary: set LOCKET_BIN or run swift build")
        sandbox = try Sandbox()
    }

    override func tearDown() {
        sandbox?.remove()
        sandbox = nil
        super.tearDown()
    }

    /// Runs `locket ARGS` in the sandbox.
    @discardableResult
    func locket(_ arguments: [String], input: Input = .devNull, environment extra: [String: String] = [:],
                file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        var environment = sandbox.environment
        for (name, value) in extra { environment[name] = value }
        let result = Spawn.run(binary, arguments, environment: environment, input: input, timeout: Self.timeout)
        if result.timedOut { XCTFail("timed out after \(Self.timeout) s: \(result.summary)", file: file, line: line) }
        if let signal = result.signal, !result.timedOut {
            XCTFail("killed by signal \(signal): \(result.summary)", file: file, line: line)
        }
        if result.err.contains("Fatal error") { XCTFail("crashed: \(result.summary)", file: file, line: line) }
        return result
    }

    @discardableResult
    func locket(_ arguments: String..., input: Input = .devNull, environment: [String: String] = [:],
                file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        locket(arguments, input: input, environment: environment, file: file, line: line)
    }

    /// Runs and asserts the exit status; returns the result for further checks.
    @discardableResult
    func expect(_ status: Int32, _ arguments: String..., input: Input = .devNull, environment: [String: String] = [:],
                file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(arguments, input: input, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }

    /// Runs and asserts success with nothing on stderr.
    @discardableResult
    func ok(_ arguments: String..., input: Input = .devNull, environment: [String: String] = [:],
            file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(arguments, input: input, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", "unexpected stderr: \(result.summary)", file: file, line: line)
        return result
    }

    /// What `locket [-k KEYCHAIN] init --password-stdin` makes (the keychain,
    /// the device secret, an unlocked session), made in-process through the
    /// engine with libsodium's minimum Argon2id cost: the binary offers nothing
    /// below INTERACTIVE (0.2 s a hash), and its header authenticates on this
    /// sandbox's device, so the binary opens it there. Tests of `init` itself
    /// run the binary.
    /// A keychain that will be opened on another device (another sandbox, a
    /// lost device secret) needs `kdf: .interactive`, locket's floor there.
    func initKeychain(_ keychain: String? = nil, password: String = EndToEndCase.password, in other: Sandbox? = nil,
                      kdf: KDFCost = .weakForTests, environment extra: [String: String] = [:],
                      file: StaticString = #filePath, line: UInt = #line) {
        let environment = Environment((other ?? sandbox).environment.merging(extra) { $1 })
        do {
            let path = try environment.keychainPath(keychain)
            try Keychain.create(at: path, password: SecureBytes(copying: Array(password.utf8)), kdf: kdf, environment: environment)
        } catch {
            XCTFail("cannot create the keychain \(keychain ?? "login"): \(error)", file: file, line: line)
        }
    }

    /// `locket add ARGS -w` with the secret on stdin (plus the newline a shell would add).
    func add(_ arguments: String..., secret: String = "s3cret",
             file: StaticString = #filePath, line: UInt = #line) {
        let result = locket(["add"] + arguments + ["-w"], input: .text(secret + "\n"), file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", result.summary, file: file, line: line)
    }

    /// `locket add ARGS --data-file -` with exact bytes on stdin.
    func addBytes(_ arguments: String..., data: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let result = locket(["add"] + arguments + ["--data-file", "-"], input: .bytes(data), file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
    }

    /// The secret `find ARGS -w -n` prints, as bytes; fails the test unless it exits 0.
    func secret(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        let result = locket(["find"] + arguments + ["-w", "-n"], file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        return result.stdout
    }

    /// Asserts the standard one-line error format naming `name` and `status`.
    func assertError(_ result: RunResult, _ name: String, _ status: Int32,
                     file: StaticString = #filePath, line: UInt = #line) {
        let first = result.errLines.first ?? ""
        XCTAssertTrue(first.hasPrefix("locket: error: "), "stderr: \(result.err)", file: file, line: line)
        XCTAssertTrue(first.hasSuffix("(\(name) \(status))"), "stderr: \(result.err)", file: file, line: line)
        XCTAssertEqual(result.stdout, [], "stdout should be empty on error: \(result.out)", file: file, line: line)
    }

    /// Asserts a usage error: exit 2, a `locket: error:` line and a `usage:` line.
    func assertUsage(_ result: RunResult, mentions: [String] = [], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 2, result.summary, file: file, line: line)
        XCTAssertTrue(result.errLines.contains { $0.hasPrefix("usage: locket") }, "no usage line: \(result.err)", file: file, line: line)
        XCTAssertTrue(result.errLines.first?.hasPrefix("locket: error: ") == true, "stderr: \(result.err)", file: file, line: line)
        for word in mentions {
            XCTAssertTrue(result.err.contains(word), "stderr does not mention \(word): \(result.err)", file: file, line: line)
        }
        XCTAssertEqual(result.stdout, [], file: file, line: line)
    }

    /// Whether `needle` occurs in `haystack`.
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return needle.isEmpty }
        let first = needle[0]
        var i = 0
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first && Array(haystack[i..<i + needle.count]) == needle { return true }
            i += 1
        }
        return false
    }

    /// File mode bits (permissions only), or nil when missing.
    func mode(_ path: String) -> mode_t? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return st.st_mode & 0o7777
    }
}

// MARK: - Protection classes, sessions and passwords

/// The seven protection classes of SPEC §5: CLI name, code and Apple's constant name.
struct ProtectionClassName {
    var name: String
    var code: String
    var apple: String

    static let all: [ProtectionClassName] = [
        .init(name: "when-unlocked", code: "ak", apple: "kSecAttrAccessibleWhenUnlocked"),
        .init(name: "after-first-unlock", code: "ck", apple: "kSecAttrAccessibleAfterFirstUnlock"),
        .init(name: "always", code: "dk", apple: "kSecAttrAccessibleAlways"),
        .init(name: "when-unlocked-this-device-only", code: "aku", apple: "kSecAttrAccessibleWhenUnlockedThisDeviceOnly"),
        .init(name: "after-first-unlock-this-device-only", code: "cku", apple: "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly"),
        .init(name: "always-this-device-only", code: "dku", apple: "kSecAttrAccessibleAlwaysThisDeviceOnly"),
        .init(name: "when-passcode-set-this-device-only", code: "akpu", apple: "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly"),
    ]

    /// The CLI name of a code.
    static func name(_ code: String) -> String { all.first { $0.code == code }!.name }

    /// Codes by availability (SPEC §5 table).
    static let whenUnlocked = ["ak", "aku", "akpu"]
    static let afterFirstUnlock = ["ck", "cku"]
    static let always = ["dk", "dku"]
    static let thisDeviceOnly = ["aku", "cku", "dku", "akpu"]
    static let migratable = ["ak", "ck", "dk"]
}

extension EndToEndCase {
    /// `locket unlock --password-stdin [--timeout T]`; asserts success.
    func unlock(_ password: String = EndToEndCase.password, timeout: String? = nil, in other: Sandbox? = nil,
                file: StaticString = #filePath, line: UInt = #line) {
        let args = ["unlock", "--password-stdin"] + (timeout.map { ["--timeout", $0] } ?? [])
        let result = locket(args, input: .text(password + "\n"), environment: other?.environment ?? [:], file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
    }

    /// Runs `locket ARGS` in another sandbox (another HOME, XDG dirs and device secret): "another machine".
    @discardableResult
    func locket(in other: Sandbox, _ arguments: String..., input: Input = .devNull, environment extra: [String: String] = [:],
                file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        var environment = other.environment
        for (name, value) in extra { environment[name] = value }
        return locket(arguments, input: input, environment: environment, file: file, line: line)
    }

    /// `locket status --json`, parsed; fails the test unless it exits 0 with nothing on stderr.
    func statusJSON(_ extra: [String] = [], in other: Sandbox? = nil,
                    file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        let result = locket(extra + ["--json", "status"], environment: other?.environment ?? [:], file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", result.summary, file: file, line: line)
        return (try? result.jsonObject(file: file, line: line)) ?? [:]
    }

    /// Item counts per protection class (CLI name) from `status --json`.
    func itemCounts(_ extra: [String] = [], in other: Sandbox? = nil,
                    file: StaticString = #filePath, line: UInt = #line) -> [String: Int] {
        let items = statusJSON(extra, in: other, file: file, line: line)["items"] as? [String: Any] ?? [:]
        return items.compactMapValues { $0 as? Int }
    }

    /// `dump --data --json` output bytes; fails the test unless it exits 0.
    func dumpWithData(_ extra: [String] = [], file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        let result = locket(extra + ["--json", "dump", "--data"], file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        return result.stdout
    }

    /// Sleeps until the wall clock's fraction of a second is `fraction` (0..<1),
    /// for tests whose outcome depends on where whole-second boundaries fall.
    static func sleepUntilFraction(_ fraction: Double) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let now = Double(ts.tv_nsec) / 1e9
        var wait = fraction - now
        if wait < 0 { wait += 1 }
        usleep(UInt32(wait * 1_000_000))
    }

    /// Seconds since the epoch, with a fraction.
    static func wallClock() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

extension EndToEndCase {
    /// `expect` with an argument array.
    @discardableResult
    func expect(_ status: Int32, _ arguments: [String], input: Input = .devNull, environment: [String: String] = [:],
                file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(arguments, input: input, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }

    /// `ok` with an argument array.
    @discardableResult
    func ok(_ arguments: [String], input: Input = .devNull, environment: [String: String] = [:],
            file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(arguments, input: input, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", "unexpected stderr: \(result.summary)", file: file, line: line)
        return result
    }
}
