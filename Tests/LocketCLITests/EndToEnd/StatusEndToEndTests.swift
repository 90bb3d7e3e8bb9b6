import Foundation
import XCTest

/// Issue 3, point 3: `status` reports the lock state per tier, the auto-lock
/// countdown, whether a password is set and the items per class, and needs
/// no password.
final class EndToEndStatusTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    typealias PC = ProtectionClassName

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    static let statusKeys: Set<String> = ["keychain", "password", "whenUnlocked", "afterFirstUnlock", "secondsUntilAutoLock",
                                          "timeout", "session", "failedAttempts", "scopedTo", "items", "tpmBound", "tpm"]

    func testStatusJSONKeySetIsPinned() throws {
        let status = statusJSON()
        XCTAssertEqual(Set(status.keys), Self.statusKeys, "status --json is a stable contract: \(status)")
        XCTAssertEqual(Set((status["items"] as? [String: Any] ?? [:]).keys), Set(PC.all.map(\.name)))
        XCTAssertEqual(status["keychain"] as? String, sandbox.loginKeychain)
        XCTAssertEqual(status["password"] as? Bool, true)
        XCTAssertEqual(status["whenUnlocked"] as? String, "unlocked")
        XCTAssertEqual(status["afterFirstUnlock"] as? String, "unlocked")
        XCTAssertTrue((299...300).contains(status["secondsUntilAutoLock"] as? Int ?? -1), "init leaves the keychain unlocked with the default timeout: \(status)")
        XCTAssertEqual(status["timeout"] as? Int, 300)
        XCTAssertEqual(status["session"] as? String, "dir", "the sandbox forces LOCKET_SESSION=dir")
        XCTAssertEqual(status["failedAttempts"] as? Int, 0)
        XCTAssertTrue(status["scopedTo"] is NSNull, "an owner session is not scoped to access groups: \(status)")
        // One line of JSON.
        let raw = ok("--json", "status").out
        XCTAssertTrue(raw.hasSuffix("}\n"), raw)
        XCTAssertEqual(raw.filter { $0 == "\n" }.count, 1, raw)
        // LOCKET_FORMAT=json is the same.
        XCTAssertEqual(ok("status", environment: ["LOCKET_FORMAT": "json"]).out, raw)
    }

    func testStatusPerTierWithoutThePassword() throws {
        for (i, pc) in PC.all.enumerated() {
            for n in 0...i {
                let result = locket(["add", "-s", "\(pc.code)-\(n)", "--accessible", pc.code, "-w"], input: .text("x\n"))
                XCTAssertEqual(result.status, 0, result.summary)
            }
        }
        let counts = Dictionary(uniqueKeysWithValues: PC.all.enumerated().map { ($1.name, $0 + 1) })
        XCTAssertEqual(itemCounts(), counts)

        ok("lock")
        var status = statusJSON()
        XCTAssertEqual(status["whenUnlocked"] as? String, "locked")
        XCTAssertEqual(status["afterFirstUnlock"] as? String, "unlocked")
        XCTAssertTrue(status["secondsUntilAutoLock"] is NSNull, "locked: no countdown: \(status)")
        XCTAssertEqual(status["session"] as? String, "dir", "the after-first-unlock keys are still in the session")
        XCTAssertEqual(status["password"] as? Bool, true)
        XCTAssertEqual(itemCounts(), counts, "counts need no key")

        ok("lock", "--all")
        status = statusJSON()
        XCTAssertEqual(status["whenUnlocked"] as? String, "locked")
        XCTAssertEqual(status["afterFirstUnlock"] as? String, "locked")
        XCTAssertTrue(status["secondsUntilAutoLock"] is NSNull)
        XCTAssertTrue(status["session"] is NSNull, "\(status)")
        XCTAssertEqual(itemCounts(), counts)

        // Text output: one `name: value` line each.
        let text = ok("status")
        let fields = text.fields
        XCTAssertEqual(fields["keychain"], sandbox.loginKeychain)
        XCTAssertEqual(fields["password"], "set")
        XCTAssertEqual(fields["when-unlocked"], "locked")
        XCTAssertEqual(fields["after-first-unlock"], "locked")
        XCTAssertEqual(fields["auto-lock timeout"], "300")
        XCTAssertNil(fields["auto-lock in"], "no countdown while locked: \(text.out)")
        for pc in PC.all { XCTAssertEqual(fields["items \(pc.name)"], String(counts[pc.name]!), text.out) }

        unlock(timeout: "60")
        status = statusJSON()
        XCTAssertEqual(status["whenUnlocked"] as? String, "unlocked")
        XCTAssertEqual(status["afterFirstUnlock"] as? String, "unlocked")
        XCTAssertTrue((59...60).contains(status["secondsUntilAutoLock"] as? Int ?? -1), "\(status)")
        let unlockedText = ok("status").fields
        XCTAssertEqual(unlockedText["when-unlocked"], "unlocked")
        XCTAssertTrue(["59 s", "60 s"].contains(unlockedText["auto-lock in"] ?? ""), "\(unlockedText)")
        XCTAssertEqual(unlockedText["session"], "dir")
    }

    func testStatusOfAKeychainWithoutAPassword() throws {
        let other = sandbox.root + "/open.keychain"
        ok("-k", other, "init", "--no-password")
        add("-k", other, "-s", "x", "--accessible", "cku")
        for lockArgs in [[String](), ["lock"], ["lock", "--all"]] {
            if !lockArgs.isEmpty { _ = expect(0, ["-k", other] + lockArgs) }
            let status = statusJSON(["-k", other])
            XCTAssertEqual(status["password"] as? Bool, false)
            XCTAssertEqual(status["whenUnlocked"] as? String, "unlocked", "\(lockArgs): \(status)")
            XCTAssertEqual(status["afterFirstUnlock"] as? String, "unlocked")
            XCTAssertTrue(status["secondsUntilAutoLock"] is NSNull)
            XCTAssertEqual((status["items"] as? [String: Any])?["after-first-unlock-this-device-only"] as? Int, 1)
        }
        XCTAssertEqual(ok("-k", other, "status").fields["password"], "none (always unlocked)")
    }

    func testStatusOfAMissingKeychainIsNoSuchKeychain() {
        let result = expect(50, "-k", sandbox.root + "/absent.keychain", "status")
        assertError(result, "errSecNoSuchKeychain", -25294)
    }

    func testHelpDescribesStatusAndSettings() {
        XCTAssertTrue(ok("help", "status").out.contains("locked"))
        let settings = ok("help", "settings").out
        XCTAssertTrue(settings.contains("--timeout") && settings.contains("none"), settings)
        let unlock = ok("help", "unlock").out
        XCTAssertTrue(unlock.contains("--timeout") && unlock.contains("none"), unlock)
    }
}
