import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 4, point 5: `unlock -e APP` keeps only the app's derived
/// (class, group) keys in the session, so that any later command, even one
/// that drops its entitlements, opens that app's items and nothing else.
final class EndToEndScopedSessionTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    var appA: String!
    var appB: String!

    /// The when-unlocked and after-first-unlock class codes.
    static let whenUnlockedClasses: Set<String> = ["ak", "aku", "akpu"]
    static let firstUnlockClasses: Set<String> = ["ck", "cku"]
    static let classCodes: Set<String> = whenUnlockedClasses.union(firstUnlockClasses).union(["dk", "dku"])

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        (appA, appB) = writeApps()
        // A: one item in its default group, one after-first-unlock item in its second group.
        add(as: appA, "-s", "a-item", secret: "secret of A")
        add(as: appA, "-s", "a-later", "--access-group", Apps.groupsA[1], "--accessible", "after-first-unlock", secret: "later A")
        add(as: appB, "-s", "b-item", secret: "secret of B")
        add(as: appB, "-s", "b-later", "--accessible", "after-first-unlock", secret: "later B")
        add(as: nil, "-s", "owner-item", secret: "secret of the owner")
        ok("lock", "--all")
        ok("-e", appA, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
    }

    func add(as app: String?, _ arguments: String..., secret: String,
             file: StaticString = #filePath, line: UInt = #line) {
        let result = locket((app.map { ["-e", $0] } ?? []) + ["add"] + arguments + ["-w"],
                            input: .text(secret + "\n"), file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
    }

    func read(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) -> String {
        String(decoding: locket(["find"] + arguments + ["-w", "-n"], file: file, line: line).stdout, as: UTF8.self)
    }

    /// Asserts errSecInteractionNotAllowed (exit 36) saying the session is limited to some groups.
    func assertLimited(_ result: RunResult, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 36, result.summary, file: file, line: line)
        assertError(result, "errSecInteractionNotAllowed", -25308, file: file, line: line)
        let message = result.errLines.first ?? ""
        XCTAssertTrue(message.contains("session") && message.contains("access groups") && message.contains(Apps.groupsA[0]),
                      "the message should say the session is limited to A's groups: \(message)", file: file, line: line)
    }

    func unlockAsOwner() {
        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
    }

    // MARK: - What a scoped session opens

    func testTheAppsItemsOpenWithOrWithoutEntitlements() {
        XCTAssertEqual(read("-e", appA, "-s", "a-item"), "secret of A")
        XCTAssertEqual(read("-e", appA, "-s", "a-later"), "later A")
        // The same session, used by a command that names no entitlements.
        XCTAssertEqual(read("-s", "a-item"), "secret of A")
        XCTAssertEqual(read("-s", "a-later"), "later A")
        XCTAssertEqual(runJSONArray(["-e", appA, "dump", "--data"]).map { $0["data"] as? String }, ["secret of A", "later A"])
        // A may add and update in its groups.
        add(as: appA, "-s", "a-new", "--access-group", Apps.groupsA[3], secret: "new")
        ok("-e", appA, "update", "-s", "a-item", "--set", "comment=updated")
        XCTAssertEqual(read("-s", "a-new"), "new")
    }

    func testOtherGroupsDoNotOpenEvenWithoutEntitlements() {
        // B's items and the owner's default group: the session has no key for them.
        for service in ["b-item", "b-later", "owner-item"] {
            assertLimited(locket(["find", "-s", service, "-w"]))
            assertLimited(locket(["find", "-s", service]))
            assertLimited(locket(["find", "-s", service, "-g"]))
        }
        assertLimited(locket(["find", "--access-group", Apps.groupsB[0]]))
        assertLimited(locket(["dump", "--data"]))
        assertLimited(locket(["update", "-s", "b-item", "--set", "comment=x"]))
        assertLimited(locket(["update", "-s", "owner-item", "--set", "access-group=\(Apps.groupsA[0])"]))
        assertLimited(locket(["add", "-s", "owner-new", "-w"], input: .text("x\n")))
        assertLimited(locket(["add", "-s", "b-new", "--access-group", Apps.groupsB[0], "-w"], input: .text("x\n")))
        // B's own entitlements do not help: the keys are not there.
        XCTAssertEqual(locket(["-e", appB, "find", "-s", "b-item", "-w"]).status, 36)
        // A plain dump lists the items it cannot open as locked, without attributes.
        let dump = runJSONArray(["dump"])
        XCTAssertEqual(dump.count, 5)
        XCTAssertEqual(dump.map { $0["status"] as? String }, ["available", "available", "locked", "locked", "locked"])
        XCTAssertEqual(dump.compactMap { $0["service"] as? String }, ["a-item", "a-later"])
        // The owner may still add into A's groups: the session has their keys.
        add(as: nil, "-s", "owner-in-A", "--access-group", Apps.groupsA[2], secret: "placed")
        XCTAssertEqual(read("-e", appA, "-s", "owner-in-A"), "placed")
    }

    func testLockForgetsWhenUnlockedKeysAndKeepsAfterFirstUnlockOnesOfTheApp() {
        ok("lock")
        XCTAssertEqual(locket(["find", "-s", "a-item", "-w"]).status, 36)
        XCTAssertEqual(read("-s", "a-later"), "later A")
        assertLimited(locket(["find", "-s", "b-later", "-w"]))
    }

    func testAlwaysItemsAreNotLimitedByScoping() {
        unlockAsOwner()
        let added = locket(["-e", appB, "add", "-s", "b-always", "--accessible", "always", "-w"], input: .text("always B\n"))
        XCTAssertEqual(added.status, 0, added.summary)
        ok("lock", "--all")
        ok("-e", appA, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        // The always class opens with the device key alone (SPEC §7): documented as outside scoping.
        XCTAssertEqual(read("-s", "b-always"), "always B")
        // Policy still applies to A itself.
        expect(44, "-e", appA, "find", "-s", "b-always")
    }

    func testAGroupAddedToTheEntitlementsLaterNeedsANewUnlock() {
        // The session holds keys for the groups the app had when it unlocked.
        let grown = writeEntitlements("grown.json", #"{"keychain-access-groups": ["SKMME9E2Y8.groupA", "SKMME9E2Y8.groupC"]}"#)
        assertLimited(locket(["-e", grown, "add", "-s", "c-item", "--access-group", "SKMME9E2Y8.groupC", "-w"], input: .text("c\n")))
        XCTAssertEqual(read("-e", grown, "-s", "a-item"), "secret of A", "groupA is in both lists")
        ok("-e", grown, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        add(as: grown, "-s", "c-item", "--access-group", "SKMME9E2Y8.groupC", secret: "c")
        XCTAssertEqual(read("-s", "c-item"), "c")
        XCTAssertEqual(locket(["find", "-s", "a-later", "-w"]).status, 36, "groupB is not in the new list")
    }

    func testTheLargestEntitlementsFitASession() throws {
        // 64 groups (the limit) of 200 bytes (the longest name).
        let groups = (0..<64).map { "T.\(String($0 + 100))" + String(repeating: "g", count: 195) }
        XCTAssertTrue(groups.allSatisfy { $0.utf8.count == 200 })
        let json = try JSONSerialization.data(withJSONObject: ["keychain-access-groups": groups])
        let big = writeEntitlementBytes("big.json", Array(json))
        ok("-e", big, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(runJSONObject(["status"])["scopedTo"] as? [String], groups)
        add(as: big, "-s", "last", "--access-group", groups[63], secret: "last group")
        XCTAssertEqual(read("-s", "last"), "last group")
        XCTAssertEqual(locket(["find", "-s", "a-item", "-w"]).status, 36)
    }

    // MARK: - Deleting

    func testTheAppCannotDeleteOtherAppsItems() {
        expect(44, "-e", appA, "delete", "-s", "b-item")
        expect(44, "-e", appA, "delete", "-s", "owner-item")
        expect(30, "-e", appA, "delete", "-s", "b-item", "--access-group", Apps.groupsB[0])
        ok("-e", appA, "delete", "--all")
        unlockAsOwner()
        XCTAssertEqual(runJSONArray(["find", "--all", "-g"]).map { $0["data"] as? String },
                       ["secret of B", "later B", "secret of the owner"])
    }

    // MARK: - What the session holds

    func testTheSessionHoldsOnlyDerivedGroupKeys() throws {
        let files = sessionFileBytes()
        XCTAssertEqual(files.count, 2, "one file per lock level: \(files.keys.sorted())")
        for (name, bytes) in files {
            let record = try XCTUnwrap(SessionRecord(bytes), "\(name) is not a session record")
            let isWhenUnlocked = name.hasSuffix(".wu")
            let tierClasses = isWhenUnlocked ? Self.whenUnlockedClasses : Self.firstUnlockClasses
            XCTAssertEqual(record.scopeGroups, Apps.groupsA, name)
            let classes = Set(record.scopeClasses ?? [])
            XCTAssertTrue(classes.isSubset(of: tierClasses) && classes.contains(isWhenUnlocked ? "ak" : "ck"), "\(name): \(classes)")
            // No class key: only the blind-index key and one derived key per (class, group).
            XCTAssertTrue(Set(record.keyNames).isDisjoint(with: Self.classCodes), "\(name) holds class keys: \(record.keyNames)")
            XCTAssertEqual(record.keyNames.filter { $0 == "idx" }.count, 1, name)
            let derived = record.keyNames.filter { $0 != "idx" }
            XCTAssertTrue(derived.allSatisfy { $0.hasPrefix("g") && $0.dropFirst().allSatisfy(\.isHexDigit) && $0.count > 16 },
                          "\(name): \(derived)")
            XCTAssertEqual(Set(derived).count, derived.count)
            XCTAssertEqual(derived.count, classes.count * Apps.groupsA.count,
                           "\(name): one key per (class, group), nothing else")
            // The file's size is exactly that: header, keys, scope block.
            let expectedSize = 4 + 13 + record.keyNames.reduce(0) { $0 + 1 + $1.utf8.count + 32 }
                + SessionRecord.scopeBlock(groups: Apps.groupsA, classes: Array(classes)).count
            XCTAssertEqual(bytes.count, expectedSize, name)
        }
        // An owner unlock holds the class keys themselves (the reader's sanity check).
        unlockAsOwner()
        let owner = sessionFileBytes().values.compactMap { SessionRecord($0) }
        XCTAssertEqual(owner.count, 2)
        XCTAssertTrue(owner.allSatisfy { $0.scopeGroups == nil })
        XCTAssertTrue(Set(owner.flatMap(\.keyNames)).isSuperset(of: ["ak", "ck", "idx"]))
    }

    func testForgingTheScopeOpensNothingMore() throws {
        // A compromised job may rewrite its session: drop the scope block so
        // that it looks like an owner session, or widen the group list. The
        // keys it holds still open only A's groups.
        let originals = sessionFileBytes()
        for forge in ["strip", "widen"] {
            for (name, bytes) in originals {
                let record = try XCTUnwrap(SessionRecord(bytes))
                var forged = Array(bytes[0..<record.keysEnd])
                if forge == "widen" {
                    forged += SessionRecord.scopeBlock(groups: Apps.groupsA + Apps.groupsB + ["default"],
                                                       classes: record.scopeClasses ?? [])
                }
                let path = sessionDirectory + "/" + name
                XCTAssertNoThrow(try Data(forged).write(to: URL(fileURLWithPath: path)))
                XCTAssertEqual(chmod(path, 0o600), 0)
            }
            XCTAssertEqual(read("-s", "a-item"), "secret of A", forge)
            for service in ["b-item", "b-later", "owner-item"] {
                XCTAssertEqual(locket(["find", "-s", service, "-w"]).status, 36, "\(forge): \(service) opened")
                XCTAssertNotEqual(locket(["-e", appB, "find", "-s", service, "-w"]).status, 0, "\(forge): \(service) opened for B")
            }
            XCTAssertEqual(locket(["dump", "--data"]).status, 36, forge)
        }
    }

    func testACopyOfTheKeychainGivesNothingMore() throws {
        // The session is keyed by the keychain's identity, so a copy made
        // elsewhere uses the same scoped session, and opens no more.
        let keychain = sandbox.loginKeychain
        let copy = sandbox.root + "/copy.keychain"
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: keychain + suffix) {
            try FileManager.default.copyItem(atPath: keychain + suffix, toPath: copy + suffix)
        }
        XCTAssertEqual(read("-k", copy, "-s", "a-item"), "secret of A")
        for service in ["b-item", "owner-item"] {
            XCTAssertEqual(locket(["-k", copy, "find", "-s", service, "-w"]).status, 36, service)
        }
    }

    // MARK: - Status, owner unlock, replacement

    func testStatusShowsTheScope() {
        XCTAssertEqual(runJSONObject(["status"])["scopedTo"] as? [String], Apps.groupsA)
        XCTAssertEqual(runJSONObject(["-e", appA, "status"])["scopedTo"] as? [String], Apps.groupsA)
        let text = expect(0, "status").out
        XCTAssertTrue(text.contains("session scoped to: \(Apps.groupsA.joined(separator: ", "))\n"), text)
        unlockAsOwner()
        let status = runJSONObject(["status"])
        XCTAssertTrue(status.keys.contains("scopedTo"), "scopedTo is always present")
        XCTAssertTrue(status["scopedTo"] is NSNull, "null for an owner session: \(status)")
        XCTAssertFalse(expect(0, "status").out.contains("scoped"))
    }

    func testAnOwnerUnlockOpensEverythingAgain() {
        assertLimited(locket(["find", "-s", "b-item", "-w"]))
        unlockAsOwner()
        XCTAssertEqual(read("-s", "b-item"), "secret of B")
        XCTAssertEqual(read("-s", "b-later"), "later B")
        XCTAssertEqual(read("-s", "owner-item"), "secret of the owner")
        XCTAssertEqual(read("-s", "a-item"), "secret of A")
        XCTAssertEqual(runJSONArray(["dump", "--data"]).count, 5)
        // ... and B's own entitlements now open B's items (policy only: the session has every key).
        XCTAssertEqual(read("-e", appB, "-s", "b-item"), "secret of B")
        expect(44, "-e", appB, "find", "-s", "a-item")
    }

    func testAnAppUnlockReplacesAnOwnerSession() {
        unlockAsOwner()
        XCTAssertEqual(read("-s", "owner-item"), "secret of the owner")
        ok("-e", appB, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(runJSONObject(["status"])["scopedTo"] as? [String], Apps.groupsB)
        XCTAssertEqual(read("-s", "b-item"), "secret of B")
        XCTAssertEqual(locket(["find", "-s", "owner-item", "-w"]).status, 36)
        XCTAssertEqual(locket(["find", "-s", "a-item", "-w"]).status, 36)
    }

    func testAWrongPasswordLeavesTheScopedSessionAlone() {
        let before = sessionFileBytes()
        XCTAssertEqual(locket(["-e", appB, "unlock", "--password-stdin"], input: .text("wrong\n")).status, 51)
        XCTAssertEqual(locket(["unlock", "--password-stdin"], input: .text("wrong\n")).status, 51)
        XCTAssertEqual(sessionFileBytes(), before)
        XCTAssertEqual(read("-s", "a-item"), "secret of A")
    }

    func testScopingAddsNothingWithoutAPassword() {
        // A keychain without a password is always unlocked: an app's unlock warns and limits nothing.
        let open = sandbox.root + "/open.keychain"
        ok("-k", open, "init", "--no-password")
        add(as: appB, "-k", open, "-s", "b-open", secret: "open B")
        let unlock = locket(["-k", open, "-e", appA, "unlock"])
        XCTAssertEqual(unlock.status, 0, unlock.summary)
        XCTAssertTrue(unlock.err.contains("no password"), unlock.summary)
        XCTAssertEqual(read("-k", open, "-s", "b-open"), "open B")
        XCTAssertEqual(runJSONObject(["-k", open, "status"])["scopedTo"] is NSNull, true)
    }
}
