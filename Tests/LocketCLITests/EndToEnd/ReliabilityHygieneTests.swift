import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 6 item 5 (SPEC §7): every failing path run with a known secret and
/// password; neither appears in any stderr, any `--json` error, or any file
/// under the sandbox (keychain, WAL, shared memory, session files, device
/// secret); files and directories are private even under umask 000; an
/// other-writable keychain directory is refused; a running locket is not
/// dumpable and has no core limit.
final class EndToEndReliabilityHygieneTests: EndToEndCase {
    static let secret = "Qv9-HYGIENE-secret-5521-zz"
    static let wrongPassword = "Jm4-HYGIENE-wrong-3380"
    static let newPassword = "Tb2-HYGIENE-newpass-7714"
    static let hygienePassword = "Rk8-HYGIENE-password-9063"

    /// Every form in which a leak would still be readable.
    static var needles: [(String, [UInt8])] {
        var out: [(String, [UInt8])] = []
        for (name, text) in [("secret", secret), ("password", hygienePassword), ("wrong password", wrongPassword), ("new password", newPassword)] {
            let bytes = Array(text.utf8)
            out.append((name, bytes))
            out.append((name + " (base64)", Array(Data(bytes).base64EncodedString().dropLast(4).utf8)))
            out.append((name + " (hex)", Array(bytes.map { String(format: "%02x", $0) }.joined().utf8)))
            out.append((name + " (UTF-16)", bytes.flatMap { [$0, 0] }))
        }
        return out
    }

    private func leaks(_ bytes: [UInt8]) -> [String] {
        Self.needles.filter { Self.contains(bytes, $0.1) }.map(\.0)
    }

    private var scratch: String!
    private var savedUmask: mode_t = 0o022

    override func setUpWithError() throws {
        try super.setUpWithError()
        scratch = ReliabilityFiles.temporaryDirectory()
        // The most permissive umask a user could have: locket must still create private files.
        savedUmask = umask(0)
    }

    override func tearDown() {
        umask(savedUmask)
        if let scratch { try? FileManager.default.removeItem(atPath: scratch) }
        super.tearDown()
    }

    /// One failing command: its arguments, its stdin, and the statuses it may end with.
    struct Path {
        var args: [String]
        var input: Input = .devNull
        var statuses: Set<Int32>
        var environment: [String: String] = [:]
    }

    func testNoFailingPathLeaksTheSecretOrPassword() throws {
        let secretLine = Input.text(Self.secret + "\n")
        let created = locket(["init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.hygienePassword + "\n"))
        XCTAssertEqual(created.status, 0, created.summary)
        reliableOK(["add", "-s", "svc", "-a", "me", "-w"], input: secretLine)
        let credential = "protocol=https\nhost=git.example\nusername=dev\npassword=\(Self.secret)\n\n"
        reliableOK(["credential", "store"], input: .text(credential))

        // 16 MiB + 1 of the secret, repeated: too large wherever it is given.
        let big = scratch + "/big"
        let unit = Array(Self.secret.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16 << 20 + unit.count)
        while bytes.count <= 16 << 20 { bytes += unit }
        ReliabilityFiles.write(big, Array(bytes.prefix(16 << 20 + 1)))
        let badEntitlements = scratch + "/bad.entitlements"
        ReliabilityFiles.write(badEntitlements, Array("{\"keychain-access-groups\": [\"T.app\"".utf8))
        let wideEntitlements = scratch + "/wide.entitlements"
        ReliabilityFiles.write(wideEntitlements, Array("{\"keychain-access-groups\": [\"T.app\"]}".utf8), mode: 0o666)

        let unlocked: [Path] = [
            Path(args: ["add", "-s", "svc", "-a", "me", "-w"], input: secretLine, statuses: [45]),
            Path(args: ["add", "-s", "svc", "-a", "me", "-w", Self.secret], statuses: [45]),
            Path(args: ["add", "-U", "-s", "svc", "-a", "me", "--accessible", "always", "-w"], input: secretLine, statuses: [206]),
            Path(args: ["add", "--class", "inet", "--service", "x", "-w"], input: secretLine, statuses: [41]),
            Path(args: ["add", "-s", "new", "--data-file", big], statuses: [42]),
            Path(args: ["add", "-s", "new", "-w"], input: .bytes(Array(bytes.prefix(16 << 20 + 1))), statuses: [42]),
            Path(args: ["add", "-s", "new", "--data-file", scratch + "/missing-file"], statuses: [220]),
            Path(args: ["update", "-s", "svc", "--data-file", big], statuses: [42]),
            Path(args: ["update", "-s", "missing", "-w"], input: secretLine, statuses: [44]),
            Path(args: ["update", "-s", "svc", "--set", "password=" + Self.secret], statuses: [41]),
            Path(args: ["update", "-s", "svc", "--set", "accessible=sometimes", "-w"], input: secretLine, statuses: [206]),
            Path(args: ["update", "-s", "svc", "--set", "port=1", "-w"], input: secretLine, statuses: [41]),
            Path(args: ["find", "-s", "missing", "-w"], statuses: [44]),
            Path(args: ["find", "-s", "svc", "--limit", "0", "-w"], statuses: [2]),
            Path(args: ["find", "--ref", "zz", "-w"], statuses: [206]),
            Path(args: ["delete", "-s", "missing"], statuses: [44]),
            Path(args: ["delete"], statuses: [206]),
            Path(args: ["unlock", "--password-stdin"], input: .text(Self.wrongPassword + "\n"), statuses: [51]),
            Path(args: ["unlock", "--password-stdin"], input: .text(String(repeating: Self.wrongPassword, count: 300) + "\n"), statuses: [42, 51]),
            Path(args: ["passwd"], input: .text(Self.wrongPassword + "\n" + Self.newPassword + "\n"), statuses: [51]),
            Path(args: ["init", "--password-stdin"], input: .text(Self.hygienePassword + "\n"), statuses: [48]),
            Path(args: ["-k", "absent", "add", "-s", "x", "-w"], input: secretLine, statuses: [50]),
            Path(args: ["-e", badEntitlements, "add", "-s", "x", "-w"], input: secretLine, statuses: [206, 220, 93]),
            Path(args: ["-e", wideEntitlements, "find", "-s", "svc", "-w"], statuses: [206, 220, 93]),
            Path(args: ["-e", scratch + "/no-such.entitlements", "find", "-s", "svc", "-w"], statuses: [206, 220, 93]),
            Path(args: ["exec", "--env", "X=nosuch/acct", "--", "true"], statuses: [44]),
            Path(args: ["exec", "--env", "X=svc/me", "--env", "Y=nosuch/acct", "--", "true"], statuses: [44]),
            Path(args: ["exec", "--env", "X=ftpz://h/p", "--", "true"], statuses: [206]),
            Path(args: ["exec", "--env", "X=svc%zz/me", "--", "true"], statuses: [206, 44]),
            Path(args: ["exec", "--env", "X=svc/me", "--", scratch + "/no-such-program"], statuses: [127]),
            Path(args: ["exec", "--", "true"], statuses: [44], environment: ["X": "locket:nosuch/acct"]),
            Path(args: ["credential", "get"], input: .text("protocol=https\nhost=other.example\n\n"), statuses: [0]),
            Path(args: ["credential", "erase"], input: .text("protocol=https\nhost=git.example\npassword=\(Self.wrongPassword)\n\n"), statuses: [0]),
            Path(args: ["credential", "store"], input: .text("garbage\n\u{1}\u{2}password=\(Self.secret)\n"), statuses: [0]),
            Path(args: ["-k", "absent", "credential", "store"], input: .text(credential), statuses: [0]),
            Path(args: ["credential", "frobnicate"], input: .text(credential), statuses: [0]),
        ]
        let locked: [Path] = [
            Path(args: ["find", "-s", "svc", "-w"], statuses: [36]),
            Path(args: ["find", "-s", "svc", "-g"], statuses: [36]),
            Path(args: ["dump", "--data"], statuses: [36]),
            Path(args: ["update", "-s", "svc", "-w"], input: secretLine, statuses: [36]),
            Path(args: ["add", "-s", "new", "-w"], input: secretLine, statuses: [36]),
            Path(args: ["exec", "--env", "X=svc/me", "--", "true"], statuses: [36]),
            Path(args: ["exec", "--env", "X=https://dev@git.example", "--", "true"], statuses: [36]),
            Path(args: ["credential", "get"], input: .text("protocol=https\nhost=git.example\n\n"), statuses: [0]),
            Path(args: ["credential", "store"], input: .text(credential), statuses: [0]),
        ]

        var runs = 0
        var statuses: [String: Int] = [:]
        func runAll(_ paths: [Path]) {
            for path in paths {
                for json in [false, true] {
                    let args = (json ? ["--json"] : []) + path.args
                    let result = locket(args, input: path.input, environment: path.environment)
                    runs += 1
                    statuses[String(result.status ?? -1), default: 0] += 1
                    XCTAssertTrue(path.statuses.contains(result.status ?? -1), "unexpected status: \(result.summary)")
                    XCTAssertEqual(leaks(result.stderr), [], "stderr leaks: \(result.summary)")
                    XCTAssertEqual(leaks(result.stdout), [], "stdout of a failing path leaks: \(result.summary)")
                    if json && ![0, 2, 127].contains(result.status ?? 0) {
                        // Errors under --json are one JSON object (usage errors and exec's own are text);
                        // a warning printed before it (-w VALUE, --accessible always) stays a text line.
                        let last = result.errLines.last ?? ""
                        XCTAssertNotNil((try? JSONSerialization.jsonObject(with: Data(last.utf8))) as? [String: Any],
                                        "not a JSON error: \(result.summary)")
                    }
                }
            }
        }
        runAll(unlocked)
        reliableOK(["lock"])
        runAll(locked)
        let relock = locket(["unlock", "--password-stdin"], input: .text(Self.hygienePassword + "\n"))
        XCTAssertEqual(relock.status, 0, relock.summary)

        // A masked child printing the secret: only <redacted> comes out.
        let masked = locket(["exec", "--mask", "--env", "X=svc/me", "--", "sh", "-c", "echo \"out $X\"; echo \"err $X\" >&2; exit 3"])
        XCTAssertEqual(masked.status, 3, masked.summary)
        XCTAssertEqual(leaks(masked.stdout + masked.stderr), [], masked.summary)
        XCTAssertEqual(masked.out, "out <redacted>\n")
        XCTAssertEqual(masked.err, "err <redacted>\n")
        // A damaged item: the error names the item, never its secret.
        // Closed before locket runs: an open connection holds the file.
        try ReliabilityDatabase(sandbox.loginKeychain).execute("""
            CREATE TEMP TABLE t AS SELECT id, data FROM items;
            UPDATE items SET data = (SELECT data FROM t WHERE t.id != items.id LIMIT 1)
            """)
        for args in [["find", "-s", "svc", "-w"], ["--json", "find", "-s", "svc", "-g"], ["--json", "dump", "--data"],
                     ["exec", "--env", "X=svc/me", "--", "true"]] {
            let damaged = locket(args)
            runs += 1
            XCTAssertEqual(damaged.status, 93, damaged.summary)
            XCTAssertEqual(leaks(damaged.stderr + damaged.stdout), [], damaged.summary)
        }

        // Nothing anywhere under the sandbox holds them in a readable form.
        let files = ReliabilityFiles.allFiles(under: sandbox.root)
        var scanned = 0
        for path in files {
            guard let content = ReliabilityFiles.read(path) else { continue }
            scanned += content.count
            XCTAssertEqual(leaks(content), [], "\(path) holds a secret in a readable form")
        }
        XCTAssertTrue(files.contains(sandbox.loginKeychain))
        XCTAssertTrue(files.contains { $0.hasPrefix(sandbox.runtimeDir + "/locket/") }, "a session file was scanned")
        XCTAssertTrue(files.contains { $0.hasSuffix("device.key") }, "the device secret was scanned")
        try assertPrivate()
        ReliabilityReport.print("hygiene", [("failing_paths", String(unlocked.count + locked.count)), ("runs", String(runs)),
                                            ("statuses", ReliabilityReport.tally(statuses)),
                                            ("files_scanned", String(files.count)), ("bytes_scanned", String(scanned)),
                                            ("needles", String(Self.needles.count))])
    }

    /// Every directory locket made is 0700 and every file 0600, even under umask 000.
    private func assertPrivate(file: StaticString = #filePath, line: UInt = #line) throws {
        for dir in [sandbox.dataHome + "/locket", sandbox.stateHome + "/locket", sandbox.runtimeDir + "/locket"] {
            XCTAssertEqual(mode(dir), 0o700, dir, file: file, line: line)
        }
        for path in ReliabilityFiles.allFiles(under: sandbox.root) {
            XCTAssertEqual(mode(path), 0o600, "\(path) is mode \(String(mode(path) ?? 0, radix: 8))", file: file, line: line)
        }
        for suffix in ["", "-wal"] {
            XCTAssertNotNil(mode(sandbox.loginKeychain + suffix), "the keychain's \(suffix) file exists", file: file, line: line)
        }
        // Exclusive locking keeps the WAL's index in memory (SPEC §11).
        XCTAssertNil(mode(sandbox.loginKeychain + "-shm"), "a -shm file was made", file: file, line: line)
    }

    // MARK: - The keychain's directory

    /// A keychain whose directory others can write can be replaced under locket
    /// (rename a forged file over it, or delete it), just as an other-writable file can be edited.
    func testKeychainInAnOtherWritableDirectoryIsRefused() {
        let created = locket(["init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.hygienePassword + "\n"))
        XCTAssertEqual(created.status, 0, created.summary)
        reliableOK(["add", "-s", "svc", "-w"], input: .text(Self.secret + "\n"))
        let directory = sandbox.dataHome + "/locket"
        var outcomes: [String: String] = [:]
        for permissions: mode_t in [0o777, 0o770, 0o722] {
            XCTAssertEqual(chmod(directory, permissions), 0)
            for args in [["find", "-s", "svc", "-w"], ["add", "-s", "other-\(permissions)", "-w"]] {
                let result = locket(args, input: .text("x\n"))
                outcomes["\(String(permissions, radix: 8)) \(args[0])"] = String(result.status ?? -1)
                if result.status == 0 {
                    XCTFail("keychain directory mode \(String(permissions, radix: 8)) must be refused: \(result.summary)")
                } else {
                    XCTAssertTrue(result.err.contains("writable") && result.err.contains(directory),
                                  "the message should say what is wrong and name the directory: \(result.summary)")
                }
            }
        }
        XCTAssertEqual(chmod(directory, 0o700), 0)
        XCTAssertEqual(locket("find", "-s", "svc", "-w").out, Self.secret + "\n")
        ReliabilityReport.print("hygiene-directory", outcomes.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    // MARK: - Core dumps

    /// `exec --mask` stays running as the filter: while it runs, it must be
    /// non-dumpable (PR_SET_DUMPABLE 0: its /proc/PID files belong to root) with
    /// a core limit of 0. As root every /proc entry is root's, so the command
    /// runs as nobody through setpriv(1), where the difference shows.
    func testRunningLocketIsNotDumpableAndHasNoCoreLimit() throws {
        let nobody: uid_t = 65534
        var runner: [String] = []
        var binary = self.binary!
        if geteuid() == 0 {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
                throw XCTSkip("running as root without setpriv(1): dumpability is not observable")
            }
            // nobody must be able to reach the binary and own the sandbox.
            let copy = sandbox.root + "/locket-under-test"
            try FileManager.default.copyItem(atPath: binary, toPath: copy)
            chmod(copy, 0o755)
            binary = copy
            for path in [sandbox.root, sandbox.dataHome, sandbox.stateHome, sandbox.runtimeDir, copy] {
                XCTAssertEqual(chown(path, nobody, nobody), 0, path)
            }
            runner = ["/usr/bin/setpriv", "--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", "--"]
        }
        let expectedOwner = geteuid() == 0 ? nobody : geteuid()
        let environment = sandbox.environment
        func run(_ args: [String], input: String) -> ReliabilityChild.Exit {
            let stdin = scratch + "/stdin"
            ReliabilityFiles.write(stdin, Array(input.utf8), mode: 0o644)
            let exe = runner.first ?? binary
            let argv = Array(runner.dropFirst()) + (runner.isEmpty ? [] : [binary]) + args
            return ReliabilityChild.spawn(exe, argv, environment: environment, stdin: stdin)!.wait(timeout: 20)
        }
        XCTAssertEqual(run(["init", "--password-stdin", "--kdf", "interactive"], input: Self.hygienePassword + "\n").status, 0)
        XCTAssertEqual(run(["add", "-s", "svc", "-a", "me", "-w"], input: Self.secret + "\n").status, 0)

        // A plain process of the same user, for contrast: its /proc entry is its own.
        let exe = runner.first ?? "/bin/sleep"
        let plainArgs = runner.isEmpty ? ["5"] : Array(runner.dropFirst()) + ["/bin/sleep", "5"]
        let plain = try XCTUnwrap(ReliabilityChild.spawn(exe, plainArgs, environment: environment))
        let maskedArgs = Array(runner.dropFirst()) + (runner.isEmpty ? [] : [binary]) + ["exec", "--mask", "--env", "X=svc/me", "--", "/bin/sleep", "5"]
        let masked = try XCTUnwrap(ReliabilityChild.spawn(runner.first ?? binary, maskedArgs, environment: environment))
        defer {
            masked.kill(SIGTERM)
            plain.kill()
            _ = masked.wait(timeout: 10)
            _ = plain.wait(timeout: 10)
        }
        // Wait until locket has resolved the secret and started its child.
        var child: String?
        let deadline = ReliabilityClock.now() + 10
        while child == nil && ReliabilityClock.now() < deadline {
            let children = (try? String(contentsOfFile: "/proc/\(masked.pid)/task/\(masked.pid)/children", encoding: .utf8)) ?? ""
            child = children.split(separator: " ").first.map(String.init)
            if child == nil { usleep(10_000) }
        }
        let childPid = try XCTUnwrap(child, "locket exec --mask never started its child")
        func owner(_ pid: String) -> uid_t? {
            var st = stat()
            // The files inside (not always the directory itself) go to root when the process is not dumpable.
            return stat("/proc/\(pid)/status", &st) == 0 ? st.st_uid : nil
        }
        // The contrast process may still be setpriv, running as root, until it execs sleep.
        while ReliabilityClock.now() < deadline,
              (try? String(contentsOfFile: "/proc/\(plain.pid)/comm", encoding: .utf8)) != "sleep\n" { usleep(10_000) }
        XCTAssertEqual(owner(String(plain.pid)), expectedOwner, "the contrast process shows its own uid")
        XCTAssertEqual(owner(String(masked.pid)), 0, "locket must be non-dumpable (PR_SET_DUMPABLE 0) while it holds a secret")
        let limits = (try? String(contentsOfFile: "/proc/\(masked.pid)/limits", encoding: .utf8)) ?? ""
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }.map(String.init) ?? "?"
        let soft = core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).first.map(String.init)
        XCTAssertEqual(soft, "0", "locket's soft core limit: \(core)")
        // The child gets the secret in its environment only, never on a command line.
        let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(childPid)/cmdline"))).map { Array($0) } ?? []
        XCTAssertFalse(Self.contains(cmdline, Array(Self.secret.utf8)))
        let locketCmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(masked.pid)/cmdline"))).map { Array($0) } ?? []
        XCTAssertFalse(Self.contains(locketCmdline, Array(Self.secret.utf8)))
        ReliabilityReport.print("hygiene-dumpable", [("observed_as", geteuid() == 0 ? "nobody via setpriv" : "uid \(geteuid())"),
                                                     ("proc_owner_of_locket", String(owner(String(masked.pid)).map(Int.init) ?? -1)),
                                                     ("proc_owner_of_plain_process", String(owner(String(plain.pid)).map(Int.init) ?? -1)),
                                                     ("core_limit", core.replacingOccurrences(of: "  ", with: " "))])
    }
}
