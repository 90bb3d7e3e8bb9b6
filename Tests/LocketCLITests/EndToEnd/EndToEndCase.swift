import Foundation
import LocketCore
import LocketSupport
// One import for every file of this target: the shared support of all the test targets.
@_exported import LocketTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

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
        clock = nil
        super.tearDown()
    }

    /// Whether `locket(...)` runs the command line in this process through
    /// `CLI.run` (`InProcessCLI`) rather than the binary: for suites about
    /// usage, help, JSON shapes and parsing, which need no real process.
    class var inProcess: Bool { false }

    /// The time in-process commands run on, when the suite sets one (the
    /// binary always runs on the system's): a test of a delay, an expiry or
    /// an age moves it instead of waiting for it.
    var clock: VirtualClock?

    /// Runs `locket ARGS` in the sandbox: the binary, or in-process when the
    /// suite says so. The binary is killed after `timeout` seconds: a hang's
    /// bound, longer only for a command whose work is long by nature.
    @discardableResult
    func locket(_ arguments: [String], input: Input = .devNull, environment extra: [String: String] = [:],
                timeout: Double = EndToEndCase.timeout, file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        var environment = sandbox.environment
        for (name, value) in extra { environment[name] = value }
        let result = type(of: self).inProcess
            ? InProcessCLI.run(arguments, environment: environment, input: input, time: clock?.source)
            : Spawn.run(binary, arguments, environment: environment, input: input, timeout: timeout)
        if result.timedOut { XCTFail("timed out after \(timeout) s: \(result.summary)", file: file, line: line) }
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
                timeout: Double = EndToEndCase.timeout, file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(arguments, input: input, environment: environment, timeout: timeout, file: file, line: line)
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
        let environment = Environment((other ?? sandbox).environment.merging(extra) { $1 }, time: clock?.source ?? .system)
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

    /// Whether `needle` occurs in `haystack` (ByteSearch: the suites search
    /// whole binaries and memory images, which a loop over the bytes took
    /// seconds for in the debug build).
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        needle.isEmpty || !ByteSearch.offsets(of: needle, in: haystack, limit: 1).isEmpty
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
