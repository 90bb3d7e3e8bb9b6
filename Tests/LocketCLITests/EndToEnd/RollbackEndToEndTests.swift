import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 11 item 6, SPEC §7 "Rollback": an older copy of the keychain file put
/// back (a sync tool, a backup restore, another account) is refused with
/// errSecDecode and a message saying it was rolled back, until the owner runs
/// `locket restore --accept-rollback` with the copy's password. Each of the
/// three things a put-back copy would bring back is shown: a deleted secret,
/// an old password, a reset failure count.
final class EndToEndRollbackTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    /// The keychain file as `cp` would copy it (after a checkpoint: no WAL).
    private func copyOfKeychain(_ path: String? = nil) throws -> [UInt8] {
        let path = path ?? sandbox.loginKeychain
        try ReliabilityDatabase.checkpoint(path)
        return try XCTUnwrap(ReliabilityFiles.read(path))
    }

    /// Puts `bytes` back in place of the keychain, as a backup restore would.
    private func putBack(_ bytes: [UInt8], at path: String? = nil) {
        let path = path ?? sandbox.loginKeychain
        for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        ReliabilityFiles.write(path, bytes)
    }

    private func assertRolledBack(_ result: RunResult, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 93, result.summary, file: file, line: line)
        assertError(result, "errSecDecode", -26275, file: file, line: line)
        XCTAssertTrue(result.errLines.first?.contains("was rolled back") == true, result.summary, file: file, line: line)
        XCTAssertEqual(result.errLines.last, "locket: hint: if it was put back on purpose, accept it with 'locket restore --accept-rollback'",
                       result.summary, file: file, line: line)
    }

    private func restore(_ password: String = EndToEndCase.password) -> RunResult {
        locket(["restore", "--accept-rollback", "--password-stdin"], input: .text(password + "\n"))
    }

    // MARK: - What a put-back copy would bring back

    func testADeletedSecretComesBackOnlyThroughRestore() throws {
        initKeychain()
        add("-s", "kept", secret: "kept-secret")
        add("-s", "gone", secret: "deleted-secret")
        let old = try copyOfKeychain()
        ok("delete", "-s", "gone")
        putBack(old)

        for args in [["find", "-s", "gone", "-w"], ["find", "-s", "kept"], ["dump", "--data"], ["status"], ["settings", "--timeout", "9"],
                     ["delete", "-s", "kept"], ["update", "-s", "kept", "--set", "comment=x"]] {
            let result = locket(args)
            assertRolledBack(result)
            XCTAssertFalse(result.out.contains("deleted-secret"))
        }
        assertRolledBack(locket(["add", "-s", "new", "-w"], input: .text("x\n")))
        assertRolledBack(locket(["unlock", "--password-stdin"], input: .text(Self.password + "\n")))
        XCTAssertEqual(try copyOfKeychain(), old, "a refused command wrote the older copy")
        ok("lock", "--all")  // forgetting keys is always allowed

        let restored = restore()
        XCTAssertEqual(restored.status, 0, restored.summary)
        XCTAssertEqual(restored.err, "", restored.summary)
        XCTAssertEqual(secret("-s", "gone"), Array("deleted-secret".utf8), "accepted on purpose: the copy is the keychain now")
        XCTAssertEqual(secret("-s", "kept"), Array("kept-secret".utf8))
    }

    func testAnOldPasswordOfAPutBackCopyDoesNotUnlock() throws {
        initKeychain()
        add("-s", "svc", secret: "v")
        let old = try copyOfKeychain()
        ok(["passwd"], input: .text(Self.password + "\nthe new password\n"))
        putBack(old)
        assertRolledBack(locket(["unlock", "--password-stdin"], input: .text(Self.password + "\n")))
        assertRolledBack(locket(["passwd"], input: .text(Self.password + "\nanother\n")))
        // Accepting the copy takes the copy's own password, not the current one.
        XCTAssertEqual(restore("the new password").status, 51)
        assertRolledBack(locket(["find", "-s", "svc"]))
        XCTAssertEqual(restore().status, 0)
        unlock()
        XCTAssertEqual(secret("-s", "svc"), Array("v".utf8))
    }

    func testAFailureCountResetByAPutBackCopyIsRefused() throws {
        initKeychain()
        let old = try copyOfKeychain()
        for _ in 0..<3 { expect(51, ["unlock", "--password-stdin"], input: .text("wrong\n")) }
        XCTAssertEqual(statusJSON()["failedAttempts"] as? Int, 3)
        putBack(old)
        assertRolledBack(locket(["status"]))
        assertRolledBack(locket(["unlock", "--password-stdin"], input: .text("wrong again\n")))
    }

    // MARK: - restore

    func testRestoreIsTheOwnersNeedsItsFlagAndTheRightPassword() throws {
        initKeychain()
        add("-s", "svc", secret: "v")
        let old = try copyOfKeychain()
        add("-s", "later", secret: "l")
        putBack(old)
        let app = sandbox.root + "/app.json"
        XCTAssertTrue(FileManager.default.createFile(atPath: app, contents: Data(#"{"keychain-access-groups": ["T.app"]}"#.utf8),
                                                    attributes: [.posixPermissions: 0o644]))
        let asApp = locket(["-e", app, "restore", "--accept-rollback", "--password-stdin"], input: .text(Self.password + "\n"))
        assertError(asApp, "errSecMissingEntitlement", -34018)
        assertUsage(locket(["restore"], input: .text(Self.password + "\n")), mentions: ["--accept-rollback"])
        let wrong = restore("not it")
        assertError(wrong, "errSecAuthFailed", -25293)
        XCTAssertEqual(try copyOfKeychain(), old, "nothing is written to an older copy before it is accepted")
        assertRolledBack(locket(["find", "-s", "svc"]))
        XCTAssertEqual(restore().status, 0)
        XCTAssertEqual(secret("-s", "svc"), Array("v".utf8), "the password restore took unlocks the copy")
    }

    /// Issue 30, point 5: restore took the password and still left the
    /// keychain locked, so the next command asked again. It unlocks with the
    /// password it was given, as `unlock` would: the copy's keys, its
    /// default timeout; and a command without a password stays as it was.
    func testRestoreUnlocksWithThePasswordItWasGiven() throws {
        initKeychain()
        add("-s", "svc", secret: "v")
        ok("settings", "--timeout", "120")
        let old = try copyOfKeychain()
        add("-s", "later", secret: "l")
        ok("settings", "--timeout", "3600")
        putBack(old)
        ok("lock", "--all")
        let restored = restore()
        XCTAssertEqual(restored.status, 0, restored.summary)
        XCTAssertEqual(restored.err, "", restored.summary)
        let status = statusJSON()
        XCTAssertEqual(status["whenUnlocked"] as? String, "unlocked", "\(status)")
        XCTAssertEqual(status["afterFirstUnlock"] as? String, "unlocked", "\(status)")
        XCTAssertEqual(status["timeout"] as? Int, 120, "the copy's own timeout: \(status)")
        XCTAssertLessThanOrEqual(status["secondsUntilAutoLock"] as? Int ?? .max, 120, "\(status)")
        XCTAssertEqual(secret("-s", "svc"), Array("v".utf8))
        assertError(locket(["find", "-s", "later"]), "errSecItemNotFound", -25300)

        // Nothing to accept: the password still unlocks, as it was checked.
        ok("lock")
        XCTAssertEqual(restore().status, 0)
        XCTAssertEqual(secret("-s", "svc"), Array("v".utf8))
    }

    func testRestoreOfACurrentKeychainChangesNothingAndSaysSo() throws {
        initKeychain()
        add("-s", "svc", secret: "v")
        let result = restore()
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: warning: ") && result.err.contains("nothing to accept"), result.summary)
        XCTAssertEqual(secret("-s", "svc"), Array("v".utf8), "still unlocked")
    }

    func testACopyWithoutAPasswordIsAcceptedWithoutOne() throws {
        ok("init", "--no-password")
        add("-s", "svc", secret: "v")
        let old = try copyOfKeychain()
        ok("delete", "-s", "svc")
        putBack(old)
        assertRolledBack(locket(["find", "-s", "svc"]))
        XCTAssertEqual(ok("restore", "--accept-rollback").out, "")
        XCTAssertEqual(secret("-s", "svc"), Array("v".utf8))
    }

    // MARK: - Rotation

    /// The copy stolen before `passwd --rotate` can't be put back either: the
    /// thief's way in through the owner's device is closed too.
    func testACopyFromBeforeARotationIsRefused() throws {
        initKeychain()
        add("-s", "before", secret: "b")
        let old = try copyOfKeychain()
        ok(["passwd", "--rotate"], input: .text(Self.password + "\nrotated\n"))
        add("-s", "after", secret: "a")
        XCTAssertEqual(secret("-s", "before"), Array("b".utf8))
        putBack(old)
        assertRolledBack(locket(["find", "-s", "before", "-w"]))
        assertRolledBack(locket(["unlock", "--password-stdin"], input: .text(Self.password + "\n")))
    }

    // MARK: - Devices and files

    func testANewDeviceStartsFromTheKeychainsOwnGenerationAndGuardsItThere() throws {
        initKeychain(kdf: .interactive)  // unlocked elsewhere, where locket's floor applies
        add("-s", "svc", secret: "v")
        let elsewhere = try Sandbox()
        defer { elsewhere.remove() }
        try FileManager.default.createDirectory(atPath: elsewhere.dataHome + "/locket", withIntermediateDirectories: true)
        putBack(try copyOfKeychain(), at: elsewhere.loginKeychain)
        unlock(in: elsewhere)
        XCTAssertEqual(locket(in: elsewhere, "find", "-s", "svc", "-w").out, "v\n")
        let mirrors = try FileManager.default.contentsOfDirectory(atPath: elsewhere.stateHome + "/locket").filter { $0.hasSuffix(".generation") }
        XCTAssertEqual(mirrors.count, 1, "the new device keeps its own record")
        let record = try XCTUnwrap(mirrors.first)
        XCTAssertEqual(mode(elsewhere.stateHome + "/locket/" + record), 0o600)

        let there = try copyOfKeychain(elsewhere.loginKeychain)
        let delete = locket(in: elsewhere, "delete", "-s", "svc")
        XCTAssertEqual(delete.status, 0, delete.summary)
        putBack(there, at: elsewhere.loginKeychain)
        let refused = locket(in: elsewhere, "find", "-s", "svc", "-w")
        XCTAssertEqual(refused.status, 93, refused.summary)
        XCTAssertTrue(refused.err.contains("rolled back"), refused.summary)
    }

    /// A backup copy kept beside the original and written to (even by a
    /// wrong password) must not make the original look rolled back.
    func testACopyBesideTheOriginalHasItsOwnRecord() throws {
        initKeychain()
        add("-s", "svc", secret: "v")
        let backup = sandbox.dataHome + "/locket/backup.keychain"
        putBack(try copyOfKeychain(), at: backup)
        for i in 0..<3 { add("-k", backup, "-s", "extra-\(i)") }
        XCTAssertEqual(secret("-s", "svc"), Array("v".utf8))
        add("-s", "more")
        XCTAssertEqual(locket(["-k", backup, "find", "-s", "extra-0"]).status, 0)
    }

    func testReadsWriteNothingButTheFirstRecordOfAKeychain() throws {
        initKeychain()
        add("-s", "svc", secret: "v")
        let state = sandbox.stateHome + "/locket"
        let mirror = try XCTUnwrap(FileManager.default.contentsOfDirectory(atPath: state).first { $0.hasSuffix(".generation") })
        let before = try XCTUnwrap(ReliabilityFiles.read(state + "/" + mirror))
        var st = stat()
        XCTAssertEqual(stat(state + "/" + mirror, &st), 0)
        let modified = st.st_mtim
        for args in [["find", "-s", "svc", "-w"], ["dump"], ["status"]] { ok(args) }
        XCTAssertEqual(ReliabilityFiles.read(state + "/" + mirror), before)
        XCTAssertEqual(stat(state + "/" + mirror, &st), 0)
        XCTAssertTrue(st.st_mtim.tv_sec == modified.tv_sec && st.st_mtim.tv_nsec == modified.tv_nsec, "a read rewrote the record")
        // Gone (a lost state directory): the next look starts it again from the keychain.
        unlink(state + "/" + mirror)
        ok("find", "-s", "svc")
        XCTAssertEqual(ReliabilityFiles.read(state + "/" + mirror), before)
    }
}
