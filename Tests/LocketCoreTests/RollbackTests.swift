import Foundation
import LocketCore
import XCTest

/// Issue 11 item 6, SPEC §7 "Rollback": every committed write advances a
/// generation sealed in the header and mirrored on the device; an older copy
/// put back is refused (errSecDecode, reason rolledBack) until the owner
/// accepts it with the password.
final class RollbackTests: KeychainTestCase {
    /// The generation in the file, through a fresh object.
    private func generation() throws -> UInt64 { try temporary.open().generation }

    /// The file's bytes with every connection closed.
    private func snapshot() throws -> Data {
        keychain = nil
        return try temporary.file.bytes()
    }

    private func putBack(_ bytes: Data) throws {
        keychain = nil
        try temporary.file.putBack(bytes)
    }

    private func assertRolledBack(_ body: @autoclosure () throws -> Keychain, _ message: String = "",
                                  file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try body()
            XCTFail("an older copy opened: \(message)", file: file, line: line)
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .decode, "\(error) \(message)", file: file, line: line)
            XCTAssertEqual(error.reason, .rolledBack, "\(error) \(message)", file: file, line: line)
            XCTAssertTrue(error.message.contains("rolled back"), error.message, file: file, line: line)
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }

    // MARK: - The counter

    func testEveryCommittedWriteAdvancesTheGenerationByOne() throws {
        var last = try generation()
        XCTAssertEqual(last, 1, "a new keychain is at generation 1")
        func next(_ what: String, by step: UInt64 = 1, _ body: () throws -> Void) throws {
            try body()
            let now = try generation()
            XCTAssertEqual(now, last + step, what)
            last = now
        }
        var ref: [UInt8] = []
        try next("add") { ref = try addGenp("svc", "a").persistentRef }
        try next("add -U") { try keychain.add(genp("svc", "a"), data: secret("v2"), updateExisting: true) }
        try next("update") { try keychain.update(query(.genericPassword, [.account: "a"]), changes: [.comment: bytes("c")]) }
        try next("addBatch") { try keychain.addBatch([(item: genp("b", "1"), data: secret("1")), (item: genp("b", "2"), data: secret("2"))]) }
        try next("delete") { try keychain.delete(query(ref: ref)) }
        try next("settings") { try keychain.session.setDefaultTimeout(60) }
        // A wrong password is counted (one write); the next success resets the count (another).
        try next("a wrong password") { XCTAssertKeychainError(.authFailed, try temporary.open().session.unlock(password: secret("wrong"), timeout: nil)) }
        // An attempt is counted before the hash and the count reset after it: two writes.
        try next("unlock", by: 2) { try temporary.unlock() }
        try next("passwd", by: 3) {
            try temporary.open().session.changePassword(old: secret(temporary.password!), new: secret("second"))
        }
    }

    func testReadsAndFailedWritesLeaveTheGenerationAndTheFileAlone() throws {
        try addGenp("svc", "a")
        keychain = nil
        let before = try temporary.file.bytes()
        let generation = try generation()
        let opened = try temporary.open()
        _ = try opened.search(query(.genericPassword, [.account: "a"]), returnData: true)
        try opened.dump(returnData: true) { _ in }
        _ = try opened.session.status()
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "a", in: opened))
        XCTAssertKeychainError(.itemNotFound, try opened.delete(query(.genericPassword, [.account: "nobody"])))
        XCTAssertKeychainError(.itemNotFound, try opened.update(query(.genericPassword, [.account: "nobody"]), changes: [.comment: bytes("x")]))
        XCTAssertEqual(try self.generation(), generation)
        XCTAssertEqual(try temporary.file.bytes(), before, "a read or a failed write wrote the keychain")
    }

    // MARK: - Putting back an older copy

    func testAnOlderCopyIsRefusedUntilTheOwnerAcceptsItWithThePassword() throws {
        try addGenp("svc", "kept", secret: "k")
        let old = try snapshot()
        keychain = try temporary.open()
        try addGenp("svc", "later", secret: "l")
        try putBack(old)

        assertRolledBack(try temporary.open())
        let accepting = try temporary.open(acceptRollback: true)
        XCTAssertTrue(accepting.isRolledBack)
        keychain = nil
        let copy = try temporary.file.bytes()
        XCTAssertKeychainError(.authFailed, try accepting.session.acceptRollback(password: secret("wrong")))
        assertRolledBack(try temporary.open(), "a wrong password accepted nothing")
        XCTAssertEqual(try temporary.file.bytes(), copy, "an older copy is not written before it is accepted")

        let appCaller = Caller.app(try Entitlements.parse(bytes(#"{"keychain-access-groups": ["T.app"]}"#), name: "app.json"))
        var app = try temporary.open(caller: appCaller, acceptRollback: true)
        XCTAssertKeychainError(.missingEntitlement, try app.session.acceptRollback(password: secret(temporary.password!)))
        app = try temporary.open(acceptRollback: true)

        XCTAssertTrue(try app.session.acceptRollback(password: secret(temporary.password!)))
        // The session's keys may be newer than the copy's: they are dropped, and
        // the password accepted unlocks with the copy's own (issue 30, point 5).
        let back = try temporary.open()
        XCTAssertTrue(back.session.isUnlocked, "accepting with the password leaves the copy unlocked")
        XCTAssertEqual(try allGenp(in: back).map { $0.string(.account) }, ["kept"])
        XCTAssertFalse(try temporary.open(acceptRollback: true).session.acceptRollback(password: secret(temporary.password!)),
                       "nothing to accept any more")
    }

    func testTheCopyCannotClaimANewerGeneration() throws {
        let old = try snapshot()
        keychain = try temporary.open()
        for i in 0..<3 { try addGenp("svc", "n\(i)") }
        // A wrong password counted: the header itself differs from the old copy's.
        XCTAssertKeychainError(.authFailed, try temporary.open().session.unlock(password: secret("wrong"), timeout: nil))
        keychain = nil
        let current = try XCTUnwrap(temporary.file.meta("generation"))
        let currentMAC = try XCTUnwrap(temporary.file.meta("header_mac"))
        try putBack(old)
        // The newer generation written into the older copy: the MAC no longer verifies.
        temporary.file.execute("UPDATE meta SET value = \(hexLiteral(current)) WHERE name = 'generation'")
        XCTAssertKeychainError(.decode, try temporary.open(), "a forged generation")
        // With the newer MAC too: it covers the rest of the header (here the failure count), which differs.
        temporary.file.execute("UPDATE meta SET value = \(hexLiteral(currentMAC)) WHERE name = 'header_mac'")
        XCTAssertKeychainError(.decode, try temporary.open(), "a newer generation and MAC pasted onto an older header")
        // Stripped of its MAC, a header counts as generation 0: older than the mirror.
        temporary.file.execute("DELETE FROM meta WHERE name IN ('header_mac', 'generation', 'key_check')")
        assertRolledBack(try temporary.open())
    }

    func testHeaderEditsAreDecodeWhereTheHeaderAuthenticates() throws {
        let pristine = try snapshot()
        let edits = [
            ("failure counter", "INSERT OR REPLACE INTO meta(name, value) VALUES ('failures', x'0000000000000000')"),
            ("timeout", "INSERT OR REPLACE INTO meta(name, value) VALUES ('timeout', x'0000000000000001')"),
            ("kdf salt", "UPDATE meta SET value = randomblob(16) || substr(value, 17) WHERE name = 'kdf'"),
            ("kdf removed", "DELETE FROM meta WHERE name = 'kdf'"),
            ("keybag row removed", "DELETE FROM keybag WHERE class = 'ck'"),
            ("keybag row copied", "UPDATE keybag SET kek = (SELECT kek FROM keybag WHERE class = 'ak') WHERE class = 'ck'"),
        ]
        for (name, sql) in edits {
            try putBack(pristine)
            temporary.file.execute(sql)
            XCTAssertKeychainError(.decode, try temporary.open(), name)
        }
        try putBack(pristine)
        XCTAssertNoThrow(try temporary.open())
    }

    // MARK: - The mirror

    func testTheMirrorIsKeptOnTheDeviceAndNeverLowered() throws {
        let mirror = try XCTUnwrap(temporary.mirrors.first, "init starts the mirror")
        XCTAssertEqual(temporary.mirrors.count, 1)
        var st = stat()
        XCTAssertEqual(stat(mirror, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        try addGenp("svc", "a")
        let seen = try Data(contentsOf: URL(fileURLWithPath: mirror))
        // A second object that opened before the write and writes after it: the mirror only goes up.
        let early = try temporary.open()
        try addGenp("svc", "b")
        try addGenp("svc", "c", in: early)
        XCTAssertNotEqual(try Data(contentsOf: URL(fileURLWithPath: mirror)), seen)
        XCTAssertNoThrow(try temporary.open())
    }

    func testAMissingOrDamagedMirrorIsStartedAgainFromTheKeychain() throws {
        try addGenp("svc", "a")
        let old = try snapshot()
        keychain = try temporary.open()
        try addGenp("svc", "b")
        keychain = nil
        let mirror = try XCTUnwrap(temporary.mirrors.first)

        // A damaged mirror (or one made with a device key since replaced) counts as none: no refusal.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: mirror))
        bytes[bytes.count - 1] ^= 1
        try bytes.write(to: URL(fileURLWithPath: mirror))
        XCTAssertNoThrow(try temporary.open())
        // ...and the look rewrote it, so detection works again.
        try putBack(old)
        assertRolledBack(try temporary.open())

        // No mirror at all (a new device, or state lost): the keychain's own generation starts it.
        unlink(mirror)
        XCTAssertNoThrow(try temporary.open())
        XCTAssertEqual(temporary.mirrors.count, 1)
    }

    func testAKeychainFromBeforeGenerationsOpensAndGetsOneAtItsFirstWrite() throws {
        try addGenp("svc", "a", secret: "a")
        keychain = nil
        // What a format-1 release wrote: no MAC, no generation, no mirror.
        temporary.file.execute("DELETE FROM meta WHERE name IN ('header_mac', 'generation', 'key_check')")
        for mirror in temporary.mirrors { unlink(mirror) }
        let legacy = try temporary.open()
        XCTAssertEqual(legacy.generation, 0)
        XCTAssertEqual(try allGenp(in: legacy).map { $0.secretString }, ["a"])
        XCTAssertTrue(temporary.mirrors.isEmpty, "nothing to mirror before the first write")
        try addGenp("svc", "b", in: legacy)
        XCTAssertEqual(try generation(), 1)
        XCTAssertNotNil(try temporary.file.meta("header_mac"))
        XCTAssertEqual(temporary.mirrors.count, 1)
    }
}
