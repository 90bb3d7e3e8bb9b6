import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 11 item 1 (SPEC §7, "Files next to the keychain"): a keychain in a
/// sticky shared directory like /tmp. Another user can make the names SQLite
/// opens beside it (`-wal`, `-shm`, `-journal`, the `init` temporary) before
/// locket does; then they would read every WAL frame (rows, KDF salt, keybag)
/// or block writes with a FIFO. Each such file must be refused by name, and
/// never opened, read or written. Two real accounts: a victim who runs
/// locket, and another user who plants files.
final class SharedDirectoryEndToEndTests: EndToEndCase {
    private var scratch: SharedScratch!
    private var victim: LocalAccount!
    private var other: LocalAccount!
    private var shared: String!
    private var keychain: String { shared + "/team.keychain" }

    override class func tearDown() {
        LocalAccounts.removeAll()
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        victim = try LocalAccounts.account("victim")
        other = try LocalAccounts.account("other")
        scratch = try SharedScratch(binary: binary)
        shared = scratch.sharedDirectory("shared")
    }

    override func tearDown() {
        scratch?.remove()
        super.tearDown()
    }

    /// `locket ARGS` as the victim, sessions in its own private directory.
    @discardableResult
    private func asVictim(_ arguments: [String], input: Input = .devNull,
                          file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let home = scratch.home(for: victim)
        let result = LocalAccounts.run(as: victim, scratch.binary, arguments, environment: [
            "PATH": "/usr/bin:/bin", "HOME": home, "XDG_RUNTIME_DIR": home + "/run",
            "LOCKET_SESSION": "dir",
        ], input: input)
        if result.timedOut { XCTFail("timed out: \(result.summary)", file: file, line: line) }
        return result
    }

    private func assertRefused(_ result: RunResult, naming path: String, _ problem: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 220, "errSecIO expected: \(result.summary)", file: file, line: line)
        assertError(result, "errSecIO", -36, file: file, line: line)
        XCTAssertTrue(result.err.contains(path), "the refusal must name \(path): \(result.err)", file: file, line: line)
        XCTAssertTrue(result.err.contains(problem), "the refusal must say '\(problem)': \(result.err)", file: file, line: line)
    }

    private func owner(_ path: String) -> uid_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_uid : nil
    }

    // MARK: - Companions made first by another user

    /// Each companion another user made first (mode 666, empty) stops `init`,
    /// named, before anything is written; once they are gone, `init` claims
    /// every companion as the victim's own private file.
    func testCompanionsAnotherUserMadeFirstAreRefusedByName() {
        // (No -shm: exclusive locking never opens one; see the test below.)
        for suffix in ["-wal", "-journal"] {
            let planted = keychain + suffix
            Planted.file(planted, by: other)
            let before = Planted.fingerprint(planted)
            let result = asVictim(["-k", keychain, "init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"))
            assertRefused(result, naming: planted, "another user")
            guard owner(keychain) == nil else {
                return XCTFail("\(suffix): a keychain was made next to another user's file: \(Planted.fingerprint(planted)), was \(before)")
            }
            XCTAssertEqual(Planted.fingerprint(planted), before, "\(suffix): the other user's file must be left untouched")
            XCTAssertEqual(unlink(planted), 0)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: shared), [],
                           "\(suffix): a refused init leaves nothing behind")
        }
        let made = asVictim(["-k", keychain, "init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"))
        XCTAssertEqual(made.status, 0, made.summary)
        for suffix in ["", "-wal", "-journal"] {
            XCTAssertEqual(owner(keychain + suffix), victim.uid, "\(suffix) must be the victim's")
            XCTAssertEqual(mode(keychain + suffix), 0o600, "\(suffix) must be private")
        }
        XCTAssertEqual(asVictim(["-k", keychain, "add", "-s", "svc", "-w"], input: .text("s3cret\n")).status, 0)
        XCTAssertEqual(asVictim(["-k", keychain, "find", "-s", "svc", "-w"]).out, "s3cret\n")
    }

    /// An existing keychain copied into the shared directory has no
    /// companions yet: a FIFO planted as its WAL is
    /// refused at once (never waited on), a -shm is never opened, and no
    /// secret reaches either.
    func testFilesPlantedBesideAnExistingKeychainAreRefusedNotOpened() throws {
        let home = scratch.home(for: victim)
        let own = home + "/own.keychain"
        XCTAssertEqual(asVictim(["-k", own, "init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n")).status, 0)
        XCTAssertEqual(asVictim(["-k", own, "add", "-s", "svc", "-w"], input: .text("s3cret\n")).status, 0)
        XCTAssertEqual(asVictim(["-k", own, "lock"]).status, 0)
        try FileManager.default.copyItem(atPath: own, toPath: keychain)
        XCTAssertEqual(chown(keychain, victim.uid, victim.gid), 0)

        Planted.fifo(keychain + "-wal", by: other)
        Planted.file(keychain + "-shm", by: other)
        let shm = Planted.fingerprint(keychain + "-shm")
        for arguments in [["find", "-s", "svc"], ["add", "-s", "other", "-w"], ["status"]] {
            let result = asVictim(["-k", keychain] + arguments, input: .text("x\n"))
            assertRefused(result, naming: keychain + "-wal", "FIFO")
            XCTAssertLessThan(result.duration, 10, "a FIFO must be refused, not waited on (the run is killed at 20 s)")
        }
        XCTAssertEqual(unlink(keychain + "-wal"), 0)
        // Another user's -shm is never opened (exclusive locking keeps the
        // WAL's index in memory), so it can't be used against the victim:
        // ignored, and left untouched (the sticky directory keeps the first
        // write from removing it).
        let unlocked = asVictim(["-k", keychain, "unlock", "--password-stdin"], input: .text(Self.password + "\n"))
        XCTAssertEqual(unlocked.status, 0, unlocked.summary)
        XCTAssertEqual(Planted.fingerprint(keychain + "-shm"), shm, "the other user's -shm must be left untouched")
        XCTAssertEqual(unlink(keychain + "-shm"), 0)
        XCTAssertEqual(asVictim(["-k", keychain, "find", "-s", "svc", "-w"]).out, "s3cret\n")
    }

    /// A file of the victim's that another user linked in as a companion
    /// (a second name of a private file) would be overwritten by SQLite.
    func testAHardLinkPlantedAsACompanionIsRefused() throws {
        let made = asVictim(["-k", keychain, "init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"))
        XCTAssertEqual(made.status, 0, made.summary)
        let precious = scratch.root + "/precious"
        Planted.file(precious, Array("precious bytes".utf8), by: victim, mode: 0o600)
        // As if the companion had been removed and another user made the link (fs.protected_hardlinks=0).
        XCTAssertEqual(unlink(keychain + "-wal"), 0)
        XCTAssertEqual(link(precious, keychain + "-wal"), 0)
        assertRefused(asVictim(["-k", keychain, "find", "-s", "svc"]), naming: keychain + "-wal", "hard link")
        XCTAssertEqual(try String(contentsOfFile: precious, encoding: .utf8), "precious bytes")
    }

    /// A keychain file in the shared directory that is not the victim's own
    /// is refused: its owner can rewrite it at will.
    func testAKeychainOfAnotherUserInASharedDirectoryIsRefused() throws {
        let made = asVictim(["-k", keychain, "init", "--no-password"])
        XCTAssertEqual(made.status, 0, made.summary)
        for suffix in ["", "-wal", "-shm", "-journal"] { chown(keychain + suffix, other.uid, other.gid) }
        chmod(keychain, 0o644)
        assertRefused(asVictim(["-k", keychain, "find", "-s", "svc"]), naming: keychain, "another user")
    }

    /// The owner of a sticky directory can rename or delete anyone's file in
    /// it, so a claimed companion would not stay the victim's: a shared
    /// directory must be root's (like /tmp) or the victim's own.
    func testASharedDirectoryOwnedByAnotherUserIsRefused() {
        XCTAssertEqual(chown(shared, other.uid, other.gid), 0)
        let result = asVictim(["-k", keychain, "init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"))
        assertRefused(result, naming: shared, "belongs to another user (uid \(other.uid))")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: shared), [], "nothing may be made there")
    }

    // MARK: - The init temporary

    /// `init` used to build the file at `PATH.init.PID`: a PID is predictable,
    /// so another user could make that name (and its -wal, -shm, -journal)
    /// first, and the keychain became their file. Now it is built in a private
    /// directory, and the names they made are left alone.
    func testInitIgnoresTemporaryNamesAnotherUserMadeFirst() throws {
        let next = Int((try String(contentsOfFile: "/proc/sys/kernel/ns_last_pid", encoding: .utf8))
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1
        var planted: [String: String] = [:]
        // The PIDs the next processes will get, as the other user would guess them.
        for pid in (next + 1)...(next + 400) {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let path = "\(keychain).init.\(pid)\(suffix)"
                Planted.file(path, by: other)
                planted[path] = Planted.fingerprint(path)
            }
        }
        let made = asVictim(["-k", keychain, "init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"))
        XCTAssertEqual(made.status, 0, made.summary)
        XCTAssertEqual(owner(keychain), victim.uid, "the keychain must be the victim's own file")
        var st = stat()
        XCTAssertEqual(lstat(keychain, &st), 0)
        XCTAssertEqual(st.st_nlink, 1, "the keychain must have no other name")
        for (path, before) in planted where Planted.fingerprint(path) != before {
            XCTFail("\(path) was used: \(before) -> \(Planted.fingerprint(path))")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: shared).filter { $0.contains(".init.") && planted[shared + "/" + $0] == nil }
        XCTAssertEqual(leftovers, [], "init leaves no temporary behind")
        XCTAssertEqual(asVictim(["-k", keychain, "add", "-s", "svc", "-w"], input: .text("s3cret\n")).status, 0)
        XCTAssertEqual(asVictim(["-k", keychain, "find", "-s", "svc", "-w"]).out, "s3cret\n")
    }
}
