import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 11 item 2 (SPEC §2): without XDG_RUNTIME_DIR (cron, su, ssh
/// sessions, CI runners) the session directory falls back to
/// `/dev/shm/locket-UID`, which any other user can make first. Such a
/// directory must read as "no session": every command works (with the kernel
/// keyring when there is one), `lock` and `lock --all` still forget the keys,
/// and nothing is ever read from it or written to it. Two real accounts: the
/// victim, and the other user who made the directory.
final class SessionDirectorySquatEndToEndTests: EndToEndCase {
    private var scratch: SharedScratch!
    private var victim: LocalAccount!
    private var other: LocalAccount!
    private var squatted: String!

    override class func tearDown() {
        LocalAccounts.removeAll()
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        victim = try LocalAccounts.account("victim")
        other = try LocalAccounts.account("other")
        scratch = try SharedScratch(binary: binary)
        squatted = "/dev/shm/locket-\(victim.uid)"
        try? FileManager.default.removeItem(atPath: squatted)
        Planted.directory(squatted, by: other, mode: 0o777)
    }

    override func tearDown() {
        if victim != nil, scratch != nil {
            // Keyring entries outlive the process.
            _ = asVictim(["lock", "--all"])
        }
        if let squatted { try? FileManager.default.removeItem(atPath: squatted) }
        scratch?.remove()
        super.tearDown()
    }

    /// `locket ARGS` as the victim: no XDG_RUNTIME_DIR, no LOCKET_SESSION unless given.
    @discardableResult
    private func asVictim(_ arguments: [String], input: Input = .devNull, environment extra: [String: String] = [:],
                          file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        var environment = ["PATH": "/usr/bin:/bin", "HOME": scratch.home(for: victim)]
        for (name, value) in extra { environment[name] = value }
        let result = LocalAccounts.run(as: victim, scratch.binary, arguments, environment: environment, input: input)
        if result.timedOut { XCTFail("timed out: \(result.summary)", file: file, line: line) }
        return result
    }

    private func status(environment: [String: String] = [:], file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        let result = asVictim(["--json", "status"], environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", result.summary, file: file, line: line)
        return (try? result.jsonObject(file: file, line: line)) ?? [:]
    }

    /// Session files under the names this keychain's would have, planted by
    /// the other user, plus an unrelated one; returns their fingerprints.
    private func plantSessionFiles() throws -> [String: String] {
        let keychain = scratch.home(for: victim) + "/.local/share/locket/login.keychain"
        let rows = try ReliabilityDatabase(keychain, readOnly: true).rows("SELECT value FROM meta WHERE name = 'id'")
        let id = try XCTUnwrap(rows.first?.first ?? nil).map { String(format: "%02x", $0) }.joined()
        var planted: [String: String] = [:]
        for name in ["\(id).wu", "\(id).afu", "\(id).wu.tmp.1", "\(id).afu.tmp.2", "unrelated"] {
            let path = squatted + "/" + name
            Planted.file(path, Array("LKS1 forged by the other user".utf8), by: other)
            Planted.ageAccessTime(path)
            planted[path] = Planted.fingerprint(path)
        }
        return planted
    }

    private func assertUntouched(_ planted: [String: String], file: StaticString = #filePath, line: UInt = #line) {
        for (path, before) in planted.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(Planted.fingerprint(path), before, "\(path) was read or written", file: file, line: line)
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: squatted)) ?? []
        XCTAssertEqual(Set(names.map { squatted + "/" + $0 }), Set(planted.keys), "nothing may be added to \(squatted ?? "")", file: file, line: line)
    }

    /// With the kernel keyring: every command works, lock forgets the keys,
    /// and a forced directory session is refused by name.
    func testASquattedFallbackDirectoryDoesNotStopTheKeyringSession() throws {
        let made = asVictim(["init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"))
        if made.status != 0, made.err.contains("the kernel keyring refused") {
            throw XCTSkip("the kernel keyring is not available here: \(made.err)")
        }
        XCTAssertEqual(made.status, 0, made.summary)
        let planted = try plantSessionFiles()
        XCTAssertEqual(asVictim(["add", "-s", "svc", "-w"], input: .text("s3cret\n")).status, 0)
        XCTAssertEqual(asVictim(["find", "-s", "svc", "-w"]).out, "s3cret\n")
        var s = status()
        XCTAssertEqual(s["whenUnlocked"] as? String, "unlocked")
        XCTAssertEqual(s["afterFirstUnlock"] as? String, "unlocked")
        XCTAssertEqual(s["session"] as? String, "keyring")

        let lock = asVictim(["lock"])
        XCTAssertEqual(lock.status, 0, lock.summary)
        s = status()
        XCTAssertEqual(s["whenUnlocked"] as? String, "locked")
        XCTAssertEqual(s["afterFirstUnlock"] as? String, "unlocked")

        let lockAll = asVictim(["lock", "--all"])
        XCTAssertEqual(lockAll.status, 0, lockAll.summary)
        s = status()
        XCTAssertEqual(s["whenUnlocked"] as? String, "locked")
        XCTAssertEqual(s["afterFirstUnlock"] as? String, "locked", "lock --all must forget the after-first-unlock key in the keyring")
        XCTAssertEqual(asVictim(["find", "-s", "svc", "-w"]).status, 36)

        let unlock = asVictim(["unlock", "--password-stdin"], input: .text(Self.password + "\n"))
        XCTAssertEqual(unlock.status, 0, unlock.summary)
        XCTAssertEqual(asVictim(["find", "-s", "svc", "-w"]).out, "s3cret\n")

        let forced = asVictim(["unlock", "--password-stdin"], input: .text(Self.password + "\n"), environment: ["LOCKET_SESSION": "dir"])
        XCTAssertEqual(forced.status, 220, forced.summary)
        assertError(forced, "errSecIO", -36)
        XCTAssertTrue(forced.err.contains(squatted) && forced.err.contains("not private"), forced.summary)
        XCTAssertEqual(asVictim(["lock", "--all"]).status, 0)
        assertUntouched(planted)
    }

    /// Sessions kept in directories (LOCKET_SESSION=dir, or no keyring):
    /// the squatted directory is no session, lock --all succeeds, unlock is
    /// refused naming it, and nothing there is read or written.
    func testASquattedDirectoryReadsAsNoSessionAndIsNeverUsed() throws {
        let home = scratch.home(for: victim)
        let own = ["LOCKET_SESSION": "dir", "XDG_RUNTIME_DIR": home + "/run"]
        XCTAssertEqual(asVictim(["init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"), environment: own).status, 0)
        XCTAssertEqual(asVictim(["add", "-s", "svc", "-w"], input: .text("s3cret\n"), environment: own).status, 0)
        let planted = try plantSessionFiles()

        let fallback = ["LOCKET_SESSION": "dir"]
        let s = status(environment: fallback)
        XCTAssertEqual(s["whenUnlocked"] as? String, "locked")
        XCTAssertEqual(s["afterFirstUnlock"] as? String, "locked")
        XCTAssertTrue(s["session"] is NSNull, "\(s)")
        let find = asVictim(["find", "-s", "svc", "-w"], environment: fallback)
        XCTAssertEqual(find.status, 36, find.summary)
        for arguments in [["lock"], ["lock", "--all"]] {
            let lock = asVictim(arguments, environment: fallback)
            XCTAssertEqual(lock.status, 0, lock.summary)
            XCTAssertEqual(lock.err, "", lock.summary)
        }
        let unlock = asVictim(["unlock", "--password-stdin"], input: .text(Self.password + "\n"), environment: fallback)
        XCTAssertEqual(unlock.status, 220, unlock.summary)
        assertError(unlock, "errSecIO", -36)
        XCTAssertTrue(unlock.err.contains(squatted) && unlock.err.contains("not private"), unlock.summary)
        assertUntouched(planted)
        // The victim's own session, elsewhere, was never affected.
        XCTAssertEqual(asVictim(["find", "-s", "svc", "-w"], environment: own).out, "s3cret\n")
    }
}
