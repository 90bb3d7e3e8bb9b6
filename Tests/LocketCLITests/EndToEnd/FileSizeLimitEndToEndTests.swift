import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 44, point 12: under a file size limit (`ulimit -f`, RLIMIT_FSIZE)
/// every writer died of SIGXFSZ (exit 153, not a word). Now each fails with
/// errSecIO and a line that names the limit, as a full disk does, and the
/// keychain is as it was. The limit is set on the one command by prlimit(1).
final class FileSizeLimitEndToEndTests: EndToEndCase {
    private var prlimit: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        prlimit = try SystemTool.require("prlimit", for: "a file size limit on one command (util-linux)")
        initKeychain()
        add("-s", "kept", "-a", "a", secret: "old")
    }

    /// `locket ARGS` with a file size limit of `bytes`.
    private func limited(_ bytes: Int, _ arguments: [String], input: Input = .devNull) -> RunResult {
        Spawn.run(prlimit, ["--fsize=\(bytes)", "--", binary] + arguments, environment: sandbox.environment, input: input, timeout: Self.timeout)
    }

    /// What the keychain holds, secrets and dates included, and its state.
    private func snapshot() -> String {
        let dump = locket(["--json", "dump", "--data"])
        XCTAssertEqual(dump.status, 0, dump.summary)
        return dump.out + (statusJSON()["failedAttempts"].map { "\($0)" } ?? "")
    }

    func testEveryWriterFailsWithErrSecIONamingTheLimitAndChangesNothing() throws {
        let before = snapshot()
        let template = sandbox.root + "/template"
        writeFile(template, "token={{ locket:kept/a }}\n")
        let writers: [([String], Input)] = [
            (["add", "-s", "new", "-a", "a", "-w"], .text("new secret\n")),
            (["update", "-s", "kept", "-a", "a", "--set", "comment=changed"], .devNull),
            (["update", "-s", "kept", "-a", "a", "-w"], .text("changed\n")),
            (["delete", "-s", "kept", "-a", "a"], .devNull),
            (["passwd"], .text(Self.password + "\nnew password\n")),
            (["passwd", "--rotate"], .text(Self.password + "\nnew password\n")),
            (["-k", "other", "init", "--password-stdin", "--kdf", "interactive"], .text("other password\nother password\n")),
            (["inject", "-i", template, "-o", sandbox.root + "/rendered"], .devNull),
        ]
        for (arguments, input) in writers {
            let result = limited(0, arguments, input: input)
            XCTAssertNil(result.signal, "killed by a signal: \(result.summary)")
            XCTAssertEqual(result.status, 220, result.summary)
            XCTAssertEqual(result.errLines.count, 1, result.summary)
            let line = result.errLines.first ?? ""
            XCTAssertTrue(line.hasPrefix("locket: error: ") && line.hasSuffix("(errSecIO -36)") && line.contains("file size limit"), result.summary)
        }
        XCTAssertEqual(snapshot(), before, "a writer that failed changed the keychain")
        XCTAssertFalse(fileExists(sandbox.dataHome + "/locket/other.keychain"), "a failed init left a keychain")
        XCTAssertFalse(fileExists(sandbox.root + "/rendered"), "a failed inject left its output")
        // Nothing was lost: the old password, the old secret.
        ok("lock", "--all")
        unlock()
        XCTAssertEqual(secret("-s", "kept", "-a", "a"), Array("old".utf8))

        // A limit some writes fit under: each command either did all of it or none, and says which.
        let size = Int(try XCTUnwrap(FileManager.default.attributesOfItem(atPath: sandbox.dataHome + "/locket/login.keychain")[.size] as? NSNumber).intValue)
        for (k, limit) in [size / 2, size, size + 8192].enumerated() {
            let result = limited(limit, ["add", "-s", "more\(k)", "-a", "a", "-w"], input: .text("secret \(k)\n"))
            XCTAssertNil(result.signal, "killed by a signal: \(result.summary)")
            if result.status == 0 {
                XCTAssertEqual(secret("-s", "more\(k)", "-a", "a"), Array("secret \(k)".utf8))
            } else {
                XCTAssertEqual(result.status, 220, result.summary)
                XCTAssertTrue(result.err.contains("file size limit"), result.summary)
                expect(44, "find", "-s", "more\(k)", "-a", "a")
            }
        }
        XCTAssertEqual(secret("-s", "kept", "-a", "a"), Array("old".utf8))
    }

    /// locket ignores SIGXFSZ for itself only: a program it starts gets the
    /// default back (killed at the limit, as from a shell), with or without --mask.
    func testAProgramExecStartsGetsSIGXFSZBack() throws {
        for mask in [[], ["--mask"]] {
            let result = locket(["exec"] + mask + ["--", "/bin/sh", "-c", "grep '^SigIgn:' /proc/self/status"])
            XCTAssertEqual(result.status, 0, result.summary)
            let ignored = try XCTUnwrap(UInt64(result.out.dropFirst("SigIgn:".count).trimmingCharacters(in: .whitespacesAndNewlines), radix: 16),
                                        result.summary)
            XCTAssertEqual(ignored & (1 << (UInt64(SIGXFSZ) - 1)), 0, "SIGXFSZ ignored in the child: \(result.summary)")
            XCTAssertEqual(ignored & (1 << (UInt64(SIGPIPE) - 1)), 0, "SIGPIPE ignored in the child: \(result.summary)")
        }
    }
}
