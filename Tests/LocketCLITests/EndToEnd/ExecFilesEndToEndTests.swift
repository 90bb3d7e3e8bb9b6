import Foundation
import LocketSystem
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 16, item 2: `exec --file NAME=REF` puts the secret in a mode-600
/// file in a private directory on tmpfs, removed when the command exits, on
/// SIGINT/SIGTERM/SIGHUP, and by the next run after locket was SIGKILLed.
/// Each test gets its own tmpfs XDG_RUNTIME_DIR under /dev/shm.
final class EndToEndExecFilesTests: EndToEndCase {
    var runtime: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        var template = Array("/dev/shm/locket-e2e-XXXXXX".utf8CString)
        let made = try template.withUnsafeMutableBufferPointer { buffer in
            try pointerOrErrno("mkdtemp") { mkdtemp(buffer.baseAddress!) }.get { XCTSkip("no /dev/shm to make a tmpfs XDG_RUNTIME_DIR in: \($0)") }
        }
        runtime = String(cString: made)
        initKeychain(environment: environment)
        add("-s", "github", "-a", "deploy", secret: "tok-123")
    }

    override func tearDown() {
        if let runtime { try? FileManager.default.removeItem(atPath: runtime) }
        super.tearDown()
    }

    /// The sandbox environment with the tmpfs runtime directory.
    var environment: [String: String] { ["XDG_RUNTIME_DIR": runtime] }

    /// Every run uses the tmpfs runtime directory, where the session is kept too.
    override func locket(_ arguments: [String], input: Input = .devNull, environment extra: [String: String] = [:],
                         timeout: Double = EndToEndCase.timeout, file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        super.locket(arguments, input: input, environment: environment.merging(extra) { $1 }, timeout: timeout, file: file, line: line)
    }

    /// `$XDG_RUNTIME_DIR/locket-exec-UID`, where the private directories go.
    var parent: String { runtime + "/locket-exec-\(geteuid())" }

    /// The private directories in the parent.
    func directories() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []).sorted()
    }

    @discardableResult
    func exec(_ status: Int32, _ arguments: [String], file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(["exec"] + arguments, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }

    func testFileHoldsTheSecretAndGoesAwayWithTheCommand() {
        let script = #"printf '%s\n' "$TF"; stat -c '%a %u %F' "$TF" "${TF%/*}"; cat "$TF"; echo; env | grep -c tok-123; exit 7"#
        let result = exec(7, ["--file", "TF=github/deploy", "--", "sh", "-c", script])
        let lines = result.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.count, 6, result.out)
        guard lines.count == 6 else { return }
        let path = lines[0]
        XCTAssertTrue(path.hasPrefix(parent + "/"), path)
        XCTAssertTrue(path.hasSuffix("/TF"), path)
        XCTAssertEqual(lines[1], "600 \(geteuid()) regular file")
        XCTAssertEqual(lines[2], "700 \(geteuid()) directory")
        XCTAssertEqual(lines[3], "tok-123")
        XCTAssertEqual(lines[4], "0", "the secret is in the command's environment")
        XCTAssertFalse(fileExists(path))
        XCTAssertEqual(directories(), [], "the private directory was left")
        XCTAssertEqual(mode(parent), 0o700)
    }

    func testBinarySecretsAndSeveralFiles() {
        let bytes: [UInt8] = [0x00, 0x01, 0xff, 0x0a, 0x00]
        addBytes("-s", "key", "-a", "bin", data: bytes)
        let result = exec(0, ["--file", "A=key/bin", "--file", "B=github/deploy", "--env", "C=github/deploy", "--",
                              "sh", "-c", #"cat "$A" "$B"; printf '|%s|%s' "${A%/*}" "${B%/*}"; printf '|%s' "$C""#])
        XCTAssertEqual(Array(result.stdout.prefix(bytes.count + 7)), bytes + Array("tok-123".utf8))
        let rest = String(decoding: result.stdout.dropFirst(bytes.count + 7), as: UTF8.self).split(separator: "|")
        XCTAssertEqual(rest.count, 3, result.out)
        if rest.count == 3 {
            XCTAssertEqual(rest[0], rest[1], "one directory for both files")
            XCTAssertEqual(rest[2], "tok-123")
        }
        XCTAssertEqual(directories(), [])
    }

    func testMaskCoversFileSecrets() {
        let result = exec(0, ["--mask", "--file", "TF=github/deploy", "--", "sh", "-c", #"cat "$TF"; echo; cat "$TF" >&2"#])
        XCTAssertEqual(result.out, "<redacted>\n")
        XCTAssertEqual(result.err, "<redacted>")
        XCTAssertEqual(directories(), [])
    }

    /// A file's secret written in two parts with a pause longer than the
    /// timer exec --mask once released held output on (half a second) stays
    /// masked: the partial match is held until more output decides it.
    func testMaskHoldsASplitFileSecretAcrossAPause() {
        let result = exec(0, ["--mask", "--file", "TF=github/deploy", "--", "sh", "-c",
                              #"printf 'a '; head -c 4 "$TF"; sleep 0.8; tail -c +5 "$TF"; printf ' b\n'"#])
        XCTAssertEqual(result.out, "a <redacted> b\n")
        XCTAssertFalse(result.out.contains("tok-"), result.out)
    }

    func testFailuresStartNothingAndLeaveNothing() {
        let marker = sandbox.root + "/ran"
        let missing = exec(44, ["--file", "TF=github/deploy", "--file", "NOPE=github/missing", "--", "sh", "-c", ": > \"$1\"", "sh", marker])
        XCTAssertTrue(missing.err.contains("NOPE: "), missing.err)
        XCTAssertFalse(fileExists(marker))
        XCTAssertEqual(directories(), [])
        let notFound = exec(127, ["--file", "TF=github/deploy", "--", sandbox.root + "/no-such-program"])
        XCTAssertTrue(notFound.err.contains("cannot run"), notFound.err)
        XCTAssertEqual(directories(), [], "a command that could not start left its files")
        assertUsage(locket(["exec", "--env", "X=github/deploy", "--file", "X=github/deploy", "--", "true"], environment: environment),
                    mentions: ["X is given by both --env and --file"])
        assertUsage(locket(["exec", "--file", "bad-name=github/deploy", "--", "true"], environment: environment), mentions: ["--file"])
    }

    /// Another user's (or a shared) directory at the parent's name is never used.
    func testParentThatIsNotPrivateIsRefused() throws {
        let marker = sandbox.root + "/ran"
        XCTAssertEqual(mkdir(parent, 0o700), 0)
        XCTAssertEqual(chmod(parent, 0o777), 0)
        let open = exec(220, ["--file", "TF=github/deploy", "--", "sh", "-c", ": > \"$1\"", "sh", marker])
        XCTAssertTrue(open.err.contains("not a directory private to this user"), open.err)
        XCTAssertFalse(fileExists(marker))
        XCTAssertEqual(directories(), [])
        rmdir(parent)
        XCTAssertEqual(symlink(sandbox.root, parent), 0)
        exec(220, ["--file", "TF=github/deploy", "--", "true"])
        unlink(parent)
        if geteuid() == 0 {
            XCTAssertEqual(mkdir(parent, 0o700), 0)
            XCTAssertEqual(chown(parent, 4242, 4242), 0)
            exec(220, ["--file", "TF=github/deploy", "--", "sh", "-c", ": > \"$1\"", "sh", marker])
            XCTAssertFalse(fileExists(marker))
        }
    }

    /// Issue 31, item 3: a tmpfs `$XDG_RUNTIME_DIR` that others may write
    /// (or a link to one) is not used; the files go to /dev/shm's private parent.
    func testARuntimeDirectoryOthersCanWriteIsNotUsed() throws {
        let link = runtime + "-link"
        XCTAssertEqual(symlink(runtime, link), 0)
        defer { unlink(link) }
        XCTAssertEqual(chmod(runtime, 0o777), 0)
        for given in [runtime!, link] {
            let result = locket(["exec", "--file", "TF=github/deploy", "--", "sh", "-c", #"printf '%s' "$TF""#],
                                environment: ["XDG_RUNTIME_DIR": given])
            XCTAssertEqual(result.status, 0, result.summary)
            XCTAssertTrue(result.out.hasPrefix("/dev/shm/locket-exec-\(geteuid())/"), "\(given): \(result.out)")
            XCTAssertFalse(fileExists(parent), "\(given): a directory was made in it")
            chmod(runtime, 0o700)
        }
    }

    // MARK: - Signals

    /// Starts `exec --file TF=...` whose command prints its pid and the path, then sleeps.
    func startSleeper(_ extra: [String] = [], script: String = #"echo $$ "$TF"; exec sleep 30"#,
                      file: StaticString = #filePath, line: UInt = #line) throws -> (BackgroundProcess, pid_t, String) {
        let process = try startLocket(["exec"] + extra + ["--file", "TF=github/deploy", "--", "sh", "-c", script],
                                      environment: environment, file: file, line: line)
        guard process.waitUntil(timeout: 10, { process.out.hasSuffix("\n") || process.hasExited }) else {
            XCTFail("the command did not start: \(process.summary)", file: file, line: line)
            throw POSIXError(.ETIMEDOUT)
        }
        let parts = process.out.split(separator: " ", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard parts.count == 2, let child = pid_t(parts[0]) else {
            XCTFail("unexpected output: \(process.summary)", file: file, line: line)
            throw POSIXError(.EINVAL)
        }
        XCTAssertTrue(fileExists(parts[1]), "no file while the command runs", file: file, line: line)
        return (process, child, parts[1])
    }

    func testSignalsToLocketReachTheCommandAndTheFilesGo() throws {
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            let (process, _, path) = try startSleeper()
            XCTAssertEqual(kill(process.pid, sig), 0)
            XCTAssertTrue(process.wait(timeout: 10), "locket did not exit after signal \(sig)")
            XCTAssertEqual(process.status, 128 + sig, "signal \(sig): \(process.summary)")
            XCTAssertFalse(fileExists(path), "signal \(sig) left \(path)")
            XCTAssertEqual(directories(), [], "signal \(sig)")
        }
        // A command that handles the signal and exits on its own terms: its status, and no files.
        let (process, _, path) = try startSleeper(script: #"trap 'exit 3' TERM; echo $$ "$TF"; sleep 30 & wait"#)
        kill(process.pid, SIGTERM)
        XCTAssertTrue(process.wait(timeout: 10))
        XCTAssertEqual(process.status, 3, process.summary)
        XCTAssertFalse(fileExists(path))
    }

    /// SIGKILL gives locket no chance to clean up: the next locket run does,
    /// whether it opens a keychain (find) or not (exec of a plain command).
    func testFilesOfAKilledLocketAreRemovedByTheNextRun() throws {
        for next in [["find", "-s", "github", "-w"], ["exec", "--", "true"]] {
            let (process, child, path) = try startSleeper(["--mask"])
            XCTAssertEqual(kill(process.pid, SIGKILL), 0)
            XCTAssertTrue(process.wait(timeout: 10))
            XCTAssertEqual(process.signal, SIGKILL)
            XCTAssertTrue(fileExists(path), "the file went with SIGKILL, so this test tests nothing")
            let result = locket(next, environment: environment)
            XCTAssertEqual(result.status, 0, result.summary)
            XCTAssertFalse(fileExists(path), "\(next[0]) did not remove what the killed locket left")
            XCTAssertEqual(directories(), [])
            kill(child, SIGKILL)
        }
    }

    /// The next run removes only directories whose locket is gone, in its own
    /// pid namespace, and nothing that is not such a directory.
    func testCleanupRemovesOnlyAbandonedDirectories() throws {
        XCTAssertEqual(mkdir(parent, 0o700), 0)
        let namespace = try Self.pidNamespace()
        let me = getpid()
        let myStart = try XCTUnwrap(Self.startTime(me))
        let dead = Spawn.run("/bin/true", [], environment: [:], input: .devNull, timeout: 5)
        XCTAssertEqual(dead.status, 0)
        let deadPid = try Self.reapedPid()
        let entries = [
            ("\(namespace).\(me).\(myStart).live00", true),          // its locket runs: kept
            ("\(namespace).\(deadPid).\(myStart).dead00", false),    // its locket is gone
            ("\(namespace).\(me).\(myStart + 1).reuse0", false),     // the pid was reused by another process
            ("\(namespace + 1).\(deadPid).1.others", true),          // another pid namespace's: not ours to judge
            ("not-a-locket-directory", true),
        ]
        for (name, _) in entries {
            XCTAssertEqual(mkdir(parent + "/" + name, 0o700), 0)
            writeFile(parent + "/" + name + "/SECRET", "x", mode: 0o600)
        }
        writeFile(parent + "/\(namespace).\(deadPid).1.file00", "a file, not a directory", mode: 0o600)
        exec(0, ["--", "true"])
        for (name, kept) in entries {
            XCTAssertEqual(fileExists(parent + "/" + name), kept, name)
            XCTAssertEqual(fileExists(parent + "/" + name + "/SECRET"), kept, name)
        }
        XCTAssertTrue(fileExists(parent + "/\(namespace).\(deadPid).1.file00"))
    }

    static func pidNamespace() throws -> UInt64 {
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/pid")
        return try XCTUnwrap(UInt64(link.filter(\.isNumber)))
    }

    static func startTime(_ pid: pid_t) -> UInt64? {
        guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
              let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
        return fields.count > 19 ? UInt64(String(decoding: fields[19], as: UTF8.self)) : nil
    }

    /// A pid that no process has now: one of a child already reaped.
    static func reapedPid() throws -> pid_t {
        let pid = try ProcessSpawner.spawn("/bin/true", [], environmentEntries: [], stdin: .devNull, stdout: .devNull, stderr: .devNull).get()
        _ = Spawner.wait(pid)
        return pid
    }
}
