import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 29, point 2: `unlock --password-file PATH` and `unlock --credential
/// NAME` read the password as every secret file is read: the caller's own
/// (or root's), private, a regular file, never a FIFO waited on. (The whole
/// boot path, systemd-creds included, is CredentialSocketEndToEndTests.)
final class UnattendedUnlockEndToEndTests: EndToEndCase {
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "svc", "-a", "acct", secret: "the secret")
        ok("lock")
    }

    func passwordFile(_ text: String, mode: mode_t = 0o600) -> String {
        let path = sandbox.root + "/password"
        unlink(path)
        writeFile(path, text, mode: mode)
        chmod(path, mode)
        return path
    }

    func assertUnlocks(_ arguments: [String], environment: [String: String] = [:], file: StaticString = #filePath, line: UInt = #line) {
        ok(["unlock"] + arguments, environment: environment, file: file, line: line)
        XCTAssertEqual(secret("-s", "svc", file: file, line: line), Array("the secret".utf8), file: file, line: line)
        ok("lock", file: file, line: line)
    }

    func assertRefused(_ arguments: [String], status: Int32 = 206, _ message: String, environment: [String: String] = [:],
                       file: StaticString = #filePath, line: UInt = #line) {
        let result = expect(status, ["unlock"] + arguments, environment: environment, file: file, line: line)
        XCTAssertTrue(result.err.contains(message), "stderr lacks \(message): \(result.err)", file: file, line: line)
        XCTAssertFalse(result.err.contains(Self.password), "the password reached stderr", file: file, line: line)
        XCTAssertEqual(statusJSON(file: file, line: line)["whenUnlocked"] as? String, "locked", file: file, line: line)
    }

    func testAPrivateFileUnlocks() {
        assertUnlocks(["--password-file", passwordFile(Self.password + "\n")])
        assertUnlocks(["--password-file", passwordFile(Self.password)])
        ok("unlock", "--password-file", passwordFile(Self.password + "\r\n"), "--timeout", "none")
        XCTAssertTrue(statusJSON()["secondsUntilAutoLock"] is NSNull, "--timeout none: no auto-lock")
        XCTAssertEqual(statusJSON()["whenUnlocked"] as? String, "unlocked")
        ok("lock")
        assertRefused(["--password-file", passwordFile("wrong password\n")], status: 51, "errSecAuthFailed")
    }

    func testFilesOthersCouldReadOrReplaceAreRefused() throws {
        assertRefused(["--password-file", passwordFile(Self.password, mode: 0o640)], "holds a password but its group can read or write it")
        assertRefused(["--password-file", passwordFile(Self.password, mode: 0o604)], "holds a password but other users can read or write it")
        assertRefused(["--password-file", passwordFile(Self.password, mode: 0o620)], "its group can read or write it")
        let link = sandbox.root + "/link"
        XCTAssertEqual(symlink(passwordFile(Self.password), link), 0)
        assertRefused(["--password-file", link], "is a symbolic link")
        assertRefused(["--password-file", sandbox.root], "is not a regular file (a directory)")
        assertRefused(["--password-file", sandbox.root + "/missing"], status: 220, "cannot read the password file")
        if geteuid() == 0 {
            let theirs = passwordFile(Self.password)
            XCTAssertEqual(chown(theirs, 12345, 12345), 0)
            assertRefused(["--password-file", theirs], "belongs to another user (uid 12345)")
        }
    }

    /// A FIFO is refused at once, never waited on for a writer.
    func testAFIFOIsRefusedAtOnce() {
        let fifo = sandbox.root + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let started = Date()
        assertRefused(["--password-file", fifo], "is not a regular file (a FIFO)")
        // The bound tells "refused" from "waited for a writer" (the run is
        // killed at 20 s), with room for a loaded machine's slow start.
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "a FIFO must be refused, not waited on")
    }

    func testTheFileHoldsThePasswordAlone() {
        assertRefused(["--password-file", passwordFile("")], "is empty")
        assertRefused(["--password-file", passwordFile("\n")], "is empty")
        assertRefused(["--password-file", passwordFile(Self.password + "\nsecond line\n")], "holds more than one line")
        assertRefused(["--password-file", passwordFile(String(repeating: "x", count: 5000))], status: 42, "larger than a password")
    }

    /// systemd gives a `User=` service a file of root's with an ACL entry
    /// for that user: private to it, though the mode shows the ACL's mask.
    func testAnACLEntryForTheCallerOnlyIsPrivate() throws {
        let python = try SystemTool.require("python3", for: "setting an ACL")
        let path = passwordFile(Self.password + "\n", mode: 0o400)
        // posix_acl_xattr: version 2, then (tag, permissions, id): user::r, user:UID:r, group::-, mask::r, other::-.
        func setACL(user: UInt32) -> RunResult {
            runTool(python, ["-c", """
                import os, struct, sys
                entries = [(1, 4, 0xffffffff), (2, 4, int(sys.argv[2])), (4, 0, 0xffffffff), (0x10, 4, 0xffffffff), (0x20, 0, 0xffffffff)]
                os.setxattr(sys.argv[1], "system.posix_acl_access", struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries))
                """, path, String(user)])
        }
        let mine = setACL(user: geteuid())
        guard mine.status == 0 else { throw XCTSkip("this file system takes no POSIX ACL: \(mine.err)") }
        XCTAssertEqual(mode(path), 0o440, "the mode shows the ACL's mask")
        assertUnlocks(["--password-file", path])
        XCTAssertEqual(setACL(user: 12345).status, 0)
        assertRefused(["--password-file", path], "holds a password but the user 12345 (by an ACL) can read or write it")
    }

    func testACredentialIsReadFromTheCredentialsDirectory() {
        let credentials = sandbox.root + "/credentials"
        XCTAssertEqual(mkdir(credentials, 0o700), 0)
        writeFile(credentials + "/locket-password", Self.password + "\n", mode: 0o400)
        chmod(credentials, 0o500)
        assertUnlocks(["--credential", "locket-password"], environment: ["CREDENTIALS_DIRECTORY": credentials])
        assertRefused(["--credential", "other"], status: 220, "cannot read the password file", environment: ["CREDENTIALS_DIRECTORY": credentials])
        assertRefused(["--credential", "locket-password"], "CREDENTIALS_DIRECTORY is not set to an absolute path")
        assertRefused(["--credential", "locket-password"], "CREDENTIALS_DIRECTORY is not set", environment: ["CREDENTIALS_DIRECTORY": "credentials"])
        let usage = locket("unlock", "--credential", "../locket-password", environment: ["CREDENTIALS_DIRECTORY": credentials])
        assertUsage(usage, mentions: ["--credential takes a credential's name"])
        assertUsage(locket("unlock", "--credential", "x", "--password-file", "y"), mentions: ["--password-file", "--credential"])
        assertUsage(locket("unlock", "--password-stdin", "--password-file", "y"), mentions: ["--password-stdin", "--password-file"])
    }
}
