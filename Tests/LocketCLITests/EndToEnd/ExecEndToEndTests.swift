import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 5, item 1 (SPEC §9): `locket exec [--env NAME=REF]... [--mask] -- COMMAND`.
/// References, `locket:` variables, failures that start nothing, exit status,
/// signals, argv as given, exec in place. (The --mask filter: EndToEndMaskTests.)
final class EndToEndExecTests: EndToEndCase {
    static let token = "tok-123"

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "github", "-a", "deploy", secret: Self.token)
    }

    /// A file in the sandbox that a child creates when (if) it runs.
    var marker: String { sandbox.root + "/child-ran" }

    /// `sh -c SCRIPT sh ARGS...`: a child that sees its arguments as $1, $2...
    func sh(_ script: String, _ arguments: String...) -> [String] {
        ["sh", "-c", script, "sh"] + arguments
    }

    /// Runs `locket exec ARGS`, expecting `status`.
    @discardableResult
    func exec(_ status: Int32, _ arguments: [String], environment: [String: String] = [:],
              file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(["exec"] + arguments, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }

    // MARK: - Injection

    func testEnvOptionInjectsTheSecret() {
        let result = exec(0, ["--env", "GH_TOKEN=github/deploy", "--", "printenv", "GH_TOKEN"])
        XCTAssertEqual(result.out, Self.token + "\n")
        XCTAssertEqual(result.err, "")
        // The rest of the environment passes through unchanged.
        let env = exec(0, ["--env", "GH_TOKEN=github/deploy", "--", "env"], environment: ["PLAIN": "as is", "EMPTY": ""])
        let lines = Set(env.out.split(separator: "\n").map(String.init))
        XCTAssertTrue(lines.isSuperset(of: ["GH_TOKEN=\(Self.token)", "PLAIN=as is", "EMPTY=", "HOME=\(sandbox.home)"]), env.out)
        XCTAssertEqual(env.out.components(separatedBy: "GH_TOKEN=").count, 2, "one GH_TOKEN: \(env.out)")
    }

    func testSeveralVariablesAndTheLastEnvOptionWins() {
        add("-s", "npm", "-a", "ci", secret: "npm-secret")
        let result = exec(0, ["--env", "A=github/deploy", "--env", "B=npm/ci", "--env", "C=npm/ci", "--env", "C=github/deploy",
                              "--", "printenv", "A", "B", "C"])
        XCTAssertEqual(result.out, "\(Self.token)\nnpm-secret\n\(Self.token)\n")
    }

    /// All references are looked up in one transaction, before the child
    /// starts: the keychain file is opened once, not once per reference
    /// (each opening also parses its schema again: bench/README.md, "exec").
    func testEveryReferenceIsLookedUpInOneOpeningOfTheKeychain() throws {
        let strace = try SystemTool.require("strace", for: "counting the keychain's openings")
        add("-s", "npm", "-a", "ci", secret: "npm-secret")
        add("-s", "pypi", "-a", "ci", secret: "pypi-secret")
        let log = sandbox.home + "/strace-exec.log"
        defer { unlink(log) }
        let arguments = ["exec", "--env", "A=github/deploy", "--env", "B=npm/ci", "--env", "C=pypi/ci", "--", "printenv", "A", "B", "C"]
        let result = Spawn.run(strace, ["-qq", "-e", "trace=openat", "-o", log, binary] + arguments,
                               environment: sandbox.environment, input: .devNull, timeout: Self.timeout)
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(String(decoding: result.stdout, as: UTF8.self), "\(Self.token)\nnpm-secret\npypi-secret\n")
        let opens = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").filter { $0.contains(sandbox.loginKeychain + "\"") }
        XCTAssertEqual(opens.count, 1, "\(opens)")
    }

    /// Where the Swift runtime finds swift-backtrace (here named by
    /// SWIFT_BACKTRACE; next to a toolchain it finds one itself) it catches
    /// the crash signals to have it print registers and stack: locket, which
    /// refuses core dumps, gives those signals back to the kernel. Seen from
    /// the child of `exec --mask`, while locket holds the secret.
    func testTheRuntimesCrashReporterIsTurnedOff() throws {
        let result = exec(0, ["--mask", "--env", "T=github/deploy", "--", "sh", "-c", "grep '^SigCgt:' /proc/$PPID/status"],
                          environment: ["SWIFT_BACKTRACE": "enable=yes,swift-backtrace=/bin/true"])
        let field = try XCTUnwrap(result.out.split(separator: "\t").last, result.out)
        let caught = try XCTUnwrap(UInt64(field.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16), result.out)
        // SIGQUIT is caught again, by the filter, to pass it on to the child.
        for (name, signal) in [("SIGILL", SIGILL), ("SIGTRAP", SIGTRAP), ("SIGABRT", SIGABRT), ("SIGBUS", SIGBUS),
                               ("SIGFPE", SIGFPE), ("SIGSEGV", SIGSEGV)] {
            XCTAssertEqual(caught >> UInt64(signal - 1) & 1, 0, "locket catches \(name): \(result.out)")
        }
    }

    func testPercentTwoFEscapesASlashInNames() {
        add("-s", "ci/github", "-a", "bot/one", secret: "slashed")
        add("-s", "ci", "-a", "github", secret: "not this one")
        XCTAssertEqual(exec(0, ["--env", "T=ci%2Fgithub/bot%2Fone", "--", "printenv", "T"]).out, "slashed\n")
        XCTAssertEqual(exec(0, ["--env", "T=ci/github", "--", "printenv", "T"]).out, "not this one\n")
        // An unescaped extra slash is no reference.
        let bad = exec(206, ["--env", "T=ci/github/bot/one", "--", "true"])
        XCTAssertTrue(bad.err.contains("T: "), bad.err)
    }

    func testEmptyAccountReference() {
        add("-s", "solo", secret: "no account")
        XCTAssertEqual(exec(0, ["--env", "T=solo/", "--", "printenv", "T"]).out, "no account\n")
    }

    func testInternetReferences() {
        add("--class", "inet", "-s", "git.example.com", "-a", "alice", "-r", "https", "-P", "8443", "-p", "api",
            secret: "alice-secret")
        add("--class", "inet", "-s", "git.example.com", "-a", "bob", "-r", "https", "-P", "8443", "-p", "api",
            secret: "bob-secret")
        add("--class", "inet", "-s", "plain.example.com", "-a", "carol", "-r", "http", secret: "carol-secret")
        func value(_ reference: String, file: StaticString = #filePath, line: UInt = #line) -> String {
            exec(0, ["--env", "T=\(reference)", "--", "printenv", "T"], file: file, line: line).out
        }
        XCTAssertEqual(value("https://alice@git.example.com:8443/api"), "alice-secret\n")
        XCTAssertEqual(value("https://bob@git.example.com:8443/api"), "bob-secret\n")
        // Left-out parts are wildcards; the scheme is case-insensitive.
        XCTAssertEqual(value("https://bob@git.example.com"), "bob-secret\n")
        XCTAssertEqual(value("HTTPS://alice@git.example.com:8443"), "alice-secret\n")
        XCTAssertEqual(value("http://plain.example.com"), "carol-secret\n")
        XCTAssertEqual(value("http://carol@plain.example.com/"), "carol-secret\n")
        // Each given part must match.
        exec(44, ["--env", "T=http://alice@git.example.com:8443/api", "--", "true"])
        exec(44, ["--env", "T=https://alice@git.example.com:9999/api", "--", "true"])
        exec(44, ["--env", "T=https://alice@git.example.com:8443/other", "--", "true"])
        exec(44, ["--env", "T=https://mallory@git.example.com", "--", "true"])
        // Malformed URLs: unknown scheme, no host, bad port.
        for reference in ["nosuch://host", "https://", "https://alice@", "https://host:port", "https://host:70000"] {
            let result = exec(206, ["--env", "URL_REF=\(reference)", "--", "true"])
            XCTAssertTrue(result.err.contains("URL_REF"), result.err)
        }
    }

    func testLocketVariablesInTheEnvironmentAreResolved() {
        add("--class", "inet", "-s", "registry.example", "-a", "ci", "-r", "https", secret: "registry-secret")
        let result = exec(0, ["--", "env"], environment: [
            "GH_TOKEN": "locket:github/deploy",
            "REGISTRY": "locket:https://ci@registry.example",
            "PLAIN": "not locket:github/deploy",
            "ALMOST": "Locket:github/deploy",
        ])
        let lines = Set(result.out.split(separator: "\n").map(String.init))
        XCTAssertTrue(lines.isSuperset(of: ["GH_TOKEN=\(Self.token)", "REGISTRY=registry-secret",
                                            "PLAIN=not locket:github/deploy", "ALMOST=Locket:github/deploy"]), result.out)
        XCTAssertEqual(result.err, "")
    }

    func testEnvOptionWinsOverAnEnvironmentReference() {
        add("-s", "other", "-a", "x", secret: "other-secret")
        let result = exec(0, ["--env", "GH_TOKEN=github/deploy", "--", "printenv", "GH_TOKEN"],
                          environment: ["GH_TOKEN": "locket:other/x"])
        XCTAssertEqual(result.out, Self.token + "\n")
        // The overridden reference is not even resolved: a missing one is no failure.
        let overridden = exec(0, ["--env", "GH_TOKEN=github/deploy", "--", "printenv", "GH_TOKEN"],
                              environment: ["GH_TOKEN": "locket:missing/item"])
        XCTAssertEqual(overridden.out, Self.token + "\n")
    }

    func testEntitlementsApply() {
        // An app sees only its access groups: the owner's item is not there for it.
        let app = sandbox.root + "/app.json"
        writeFile(app, #"{"application-identifier": "ABCDE12345.com.example.app", "keychain-access-groups": ["ABCDE12345.shared"]}"#)
        let foreign = locket(["-e", app, "exec", "--env", "T=github/deploy", "--", "sh", "-c", ": > \"$1\"", "sh", marker])
        XCTAssertEqual(foreign.status, 44, foreign.summary)
        XCTAssertFalse(fileExists(marker))
        let added = locket(["-e", app, "add", "-s", "app", "-a", "ci", "-w"], input: .text("app-secret\n"))
        XCTAssertEqual(added.status, 0, added.summary)
        let own = locket(["exec", "--env", "T=app/ci", "--", "printenv", "T"], environment: ["LOCKET_ENTITLEMENTS": app])
        XCTAssertEqual(own.status, 0, own.summary)
        XCTAssertEqual(own.out, "app-secret\n")
    }

    // MARK: - Failures start nothing

    /// Runs an exec that must fail with `status` before starting its child.
    func assertStartsNothing(_ status: Int32, _ arguments: [String], variable: String, environment: [String: String] = [:],
                             file: StaticString = #filePath, line: UInt = #line) {
        for mask in [false, true] {
            let args = (mask ? ["--mask"] : []) + arguments + ["--"] + sh(": > \"$1\"", marker)
            let result = exec(status, args, environment: environment, file: file, line: line)
            XCTAssertFalse(fileExists(marker), "the child ran: \(result.summary)", file: file, line: line)
            XCTAssertEqual(result.stdout, [], file: file, line: line)
            XCTAssertTrue(result.errLines.first?.hasPrefix("locket: error: \(variable): ") == true,
                          "the message names \(variable): \(result.err)", file: file, line: line)
            for secret in [Self.token, "other-secret"] {
                XCTAssertFalse(result.err.contains(secret), "a secret in the message: \(result.err)", file: file, line: line)
            }
        }
    }

    func testMissingItemStartsNothing() {
        add("-s", "other", "-a", "x", secret: "other-secret")
        // The good references come first: they resolved, and still nothing starts.
        assertStartsNothing(44, ["--env", "GOOD=github/deploy", "--env", "ALSO_GOOD=other/x", "--env", "DEPLOY_TOKEN=github/missing"],
                            variable: "DEPLOY_TOKEN")
        assertStartsNothing(44, ["--env", "GOOD=github/deploy"], variable: "FROM_ENV",
                            environment: ["FROM_ENV": "locket:nothing/here"])
        assertStartsNothing(44, ["--env", "GOOD=github/deploy", "--env", "WEB=https://nobody@nowhere.example"], variable: "WEB")
        let failed = exec(44, ["--env", "DEPLOY_TOKEN=github/missing", "--", "true"])
        XCTAssertTrue(failed.err.hasSuffix("(errSecItemNotFound -25300)\n"), failed.err)
    }

    func testMalformedReferenceStartsNothing() {
        for reference in ["no-slash", "a/b/c", "/account", "svc%2/acct", "svc%zz/acct", "svc%ff/acct", "ftp:///path"] {
            assertStartsNothing(206, ["--env", "GOOD=github/deploy", "--env", "BAD_REF=\(reference)"], variable: "BAD_REF")
        }
        assertStartsNothing(206, [], variable: "ENV_REF", environment: ["ENV_REF": "locket:no-slash"])
    }

    func testLockedKeychainStartsNothing() {
        ok("lock")
        assertStartsNothing(36, ["--env", "DEPLOY_TOKEN=github/deploy"], variable: "DEPLOY_TOKEN")
        let result = exec(36, ["--env", "DEPLOY_TOKEN=github/deploy", "--", "true"])
        XCTAssertTrue(result.errLines.first?.hasSuffix("(errSecInteractionNotAllowed -25308)") == true, result.err)
        // A command that needs no secret runs whatever the keychain's state.
        XCTAssertEqual(exec(0, ["--", "printf", "ran"]).out, "ran")
    }

    func testNoKeychainStartsNothing() {
        let result = exec(50, ["--env", "DEPLOY_TOKEN=github/deploy", "--"] + sh(": > \"$1\"", marker),
                          environment: ["LOCKET_KEYCHAIN": "absent"])
        XCTAssertFalse(fileExists(marker), "the child ran: \(result.summary)")
        XCTAssertTrue(result.err.contains("errSecNoSuchKeychain"), result.err)
    }

    func testSecretWithNULCannotBeInjected() {
        addBytes("-s", "binary", "-a", "nul", data: [0x61, 0x00, 0x62])
        assertStartsNothing(206, ["--env", "NUL_SECRET=binary/nul"], variable: "NUL_SECRET")
        let result = exec(206, ["--env", "NUL_SECRET=binary/nul", "--", "true"])
        XCTAssertTrue(result.err.contains("NUL"), result.err)
    }

    func testJSONErrorNamesTheVariable() throws {
        let result = exec(44, ["--env", "DEPLOY_TOKEN=github/missing", "--", "true"], environment: ["LOCKET_FORMAT": "json"])
        let object = try result.jsonError()
        XCTAssertEqual(object["error"] as? String, "errSecItemNotFound")
        XCTAssertEqual(object["status"] as? Int, -25300)
        XCTAssertTrue((object["message"] as? String)?.hasPrefix("DEPLOY_TOKEN: ") == true, result.err)
    }

    func testUsageErrors() {
        assertUsage(locket("exec"), mentions: ["exec"])
        assertUsage(locket("exec", "--env", "NOEQUALS", "--", "true"))
        assertUsage(locket("exec", "--env", "1BAD=github/deploy", "--", "true"))
        assertUsage(locket("exec", "--env", "=github/deploy", "--", "true"))
    }

    // MARK: - The command: status, argv, exec in place

    func testExitStatusPassesThrough() {
        for mask in [[], ["--mask"]] {
            exec(7, mask + ["--env", "T=github/deploy", "--"] + sh("exit 7"))
            exec(0, mask + ["--env", "T=github/deploy", "--", "true"])
            exec(1, mask + ["--", "false"])
            exec(255, mask + ["--"] + sh("exit 255"))
        }
        // With the filter, locket is the parent: a child killed by signal N gives 128+N.
        exec(128 + SIGTERM, ["--mask", "--"] + sh("kill -TERM $$"))
        exec(128 + SIGKILL, ["--mask", "--"] + sh("kill -KILL $$"))
        // Without it locket became the command: the waiter sees the signal itself, as for the command.
        let inPlace = Spawn.run(binary, ["exec", "--"] + sh("kill -TERM $$"), environment: sandbox.environment,
                                input: .devNull, timeout: Self.timeout)
        XCTAssertEqual(inPlace.signal, SIGTERM, inPlace.summary)
    }

    func testMissingProgramExits127() {
        for mask in [[], ["--mask"]] {
            let absent = exec(127, mask + ["--env", "T=github/deploy", "--", "/nonexistent/program"])
            XCTAssertTrue(absent.err.contains("/nonexistent/program"), absent.err)
            XCTAssertEqual(absent.errLines.count, 1, absent.err)
            exec(127, mask + ["--", "no-such-program-anywhere"])
        }
        let script = sandbox.root + "/not-executable"
        writeFile(script, "#!/bin/sh\necho ran\n", mode: 0o644)
        exec(126, ["--", script])
        exec(126, ["--mask", "--", script])
    }

    func testArgvIsExactlyAsGiven() {
        let arguments = ["a b", "$GH_TOKEN", "*", "", ";", "'\"", "--env", "x\ny"]
        for mask in [[], ["--mask"]] {
            let result = exec(0, mask + ["--env", "GH_TOKEN=github/deploy", "--", "printf", "[%s]"] + arguments)
            XCTAssertEqual(result.out, arguments.map { "[\($0)]" }.joined(), "no shell: nothing expanded or split")
        }
        // PATH is searched as execvp does, in the child's environment.
        let bin = sandbox.root + "/bin"
        XCTAssertEqual(mkdir(bin, 0o755), 0)
        writeFile(bin + "/hello-locket", "#!/bin/sh\necho \"hello $*\"\n", mode: 0o755)
        XCTAssertEqual(exec(0, ["--", "hello-locket", "there"], environment: ["PATH": bin + ":/usr/bin:/bin"]).out, "hello there\n")
    }

    func testNoSecretInAnyCommandLine() throws {
        // Without the filter, the command's own /proc/self/cmdline is its argv, and no secret.
        let direct = exec(0, ["--env", "GH_TOKEN=github/deploy", "--", "cat", "/proc/self/cmdline"])
        XCTAssertEqual(direct.stdout, Array("cat\0/proc/self/cmdline\0".utf8))
        // The secret is in the environment, where it belongs.
        let environ = exec(0, ["--env", "GH_TOKEN=github/deploy", "--", "cat", "/proc/self/environ"])
        XCTAssertTrue(Self.contains(environ.stdout, Array("\0GH_TOKEN=\(Self.token)\0".utf8))
                      || environ.stdout.starts(with: Array("GH_TOKEN=\(Self.token)\0".utf8)), environ.out)
        // With the filter: the command's and locket's (its parent's) command lines.
        let child = sandbox.root + "/child-cmdline", parent = sandbox.root + "/parent-cmdline"
        let args = ["exec", "--mask", "--env", "GH_TOKEN=github/deploy", "--"]
            + sh("cat /proc/$$/cmdline > \"$1\"; cat /proc/$PPID/cmdline > \"$2\"", child, parent)
        let result = locket(args, environment: ["FROM_ENV": "locket:github/deploy"])
        XCTAssertEqual(result.status, 0, result.summary)
        let childLine = try XCTUnwrap(readText(child))
        let parentLine = try XCTUnwrap(readText(parent))
        XCTAssertEqual(childLine.split(separator: "\0", omittingEmptySubsequences: false).dropLast().map(String.init),
                       sh("cat /proc/$$/cmdline > \"$1\"; cat /proc/$PPID/cmdline > \"$2\"", child, parent))
        XCTAssertEqual(parentLine.split(separator: "\0", omittingEmptySubsequences: false).dropLast().map(String.init),
                       [binary] + args, "the parent is locket, with the argv it was given")
        for line in [childLine, parentLine] { XCTAssertFalse(line.contains(Self.token), line) }
        // A program's own /proc/self/cmdline, under the filter.
        let copy = sandbox.root + "/cp-cmdline"
        exec(0, ["--mask", "--env", "GH_TOKEN=github/deploy", "--", "cp", "/proc/self/cmdline", copy])
        XCTAssertEqual(readText(copy), "cp\0/proc/self/cmdline\0\(copy)\0")
    }

    func testWithoutMaskLocketBecomesTheCommand() throws {
        let process = try startLocket(["exec", "--env", "GH_TOKEN=github/deploy", "--"] + sh("echo $$"))
        XCTAssertTrue(process.wait(timeout: 10), process.summary)
        XCTAssertEqual(process.status, 0, process.summary)
        XCTAssertEqual(process.out, "\(process.pid)\n", "the command runs in locket's process: same pid")
        // With --mask locket stays, as the command's parent.
        let masked = try startLocket(["exec", "--mask", "--env", "GH_TOKEN=github/deploy", "--"] + sh("echo $$ $PPID"))
        XCTAssertTrue(masked.wait(timeout: 10), masked.summary)
        let pids = masked.out.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        XCTAssertEqual(pids.count, 2, masked.summary)
        XCTAssertNotEqual(pids.first, String(masked.pid))
        XCTAssertEqual(pids.last, String(masked.pid), "locket is the parent")
    }

    // MARK: - Signals

    static let signals: [(number: Int32, name: String)] = [(SIGTERM, "TERM"), (SIGINT, "INT"), (SIGHUP, "HUP")]

    /// Starts `locket exec [--mask] -- CHILD`, waits until the child wrote `ready`, sends `signal` to locket's pid.
    func signalRun(mask: Bool, _ child: [String], ready: String, signal: Int32,
                   file: StaticString = #filePath, line: UInt = #line) throws -> BackgroundProcess {
        let process = try startLocket(["exec"] + (mask ? ["--mask"] : []) + ["--env", "GH_TOKEN=github/deploy", "--"] + child)
        XCTAssertTrue(process.waitUntil(timeout: 10) { self.fileExists(ready) || process.hasExited },
                      "the child never got ready: \(process.summary)", file: file, line: line)
        XCTAssertFalse(process.hasExited, process.summary, file: file, line: line)
        XCTAssertEqual(kill(process.pid, signal), 0, file: file, line: line)
        XCTAssertTrue(process.wait(timeout: 10), "still running after the signal: \(process.summary)", file: file, line: line)
        return process
    }

    func testSignalsReachATrappingChild() throws {
        for mask in [true, false] {
            for (number, name) in Self.signals {
                let caught = sandbox.root + "/caught-\(name)-\(mask)", ready = sandbox.root + "/ready-\(name)-\(mask)"
                // Bounded (10 s), so that a failed test leaves no endless loop behind.
                let script = "trap 'echo \(name) > \"$1\"; exit 3' \(name); : > \"$2\"; i=0; "
                    + "while [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done; exit 9"
                let process = try signalRun(mask: mask, sh(script, caught, ready), ready: ready, signal: number)
                XCTAssertEqual(readText(caught), "\(name)\n", "mask \(mask): the child did not get SIG\(name): \(process.summary)")
                XCTAssertEqual(process.status, 3, "mask \(mask), SIG\(name): locket exits with the child's status: \(process.summary)")
            }
        }
    }

    func testSignalThatKillsTheChildGives128PlusN() throws {
        for (number, name) in Self.signals {
            let ready = sandbox.root + "/ready-\(name)"
            let process = try signalRun(mask: true, sh(": > \"$1\"; exec sleep 10", ready), ready: ready, signal: number)
            XCTAssertEqual(process.status, 128 + number, "SIG\(name): \(process.summary)")
            XCTAssertNil(process.signal, "locket itself was not killed")
        }
    }
}
