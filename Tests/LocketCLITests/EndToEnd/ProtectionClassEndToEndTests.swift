import Foundation
import XCTest

/// SPEC §5 / issue 3, points 1 and 2: the seven protection classes, chosen at
/// `add`, and what `lock` and `lock --all` leave readable, class by class.
final class EndToEndProtectionClassTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    typealias PC = ProtectionClassName

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    /// One item per class: service = code, account = "acct-CODE", secret = "secret-CODE".
    private func addOneOfEach(prefix: String = "") {
        for pc in PC.all {
            let result = locket(["add", "-s", prefix + pc.code, "-a", "acct-" + prefix + pc.code, "--accessible", pc.name, "-w"],
                                input: .text("secret-\(prefix)\(pc.code)\n"))
            XCTAssertEqual(result.status, 0, result.summary)
        }
    }

    private func assertReadable(_ code: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        let result = locket(["find", "-s", code, "-w"], file: file, line: line)
        XCTAssertEqual(result.status, 0, "\(PC.name(code)) should be readable \(context): \(result.summary)", file: file, line: line)
        XCTAssertEqual(result.out, "secret-\(code)\n", file: file, line: line)
    }

    /// find (with and without -w, -g, by another attribute, --all), add and update of `code` all fail with 36, never 44.
    private func assertLocked(_ code: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        let name = PC.name(code)
        for args in [["find", "-s", code], ["find", "-s", code, "-w"], ["find", "-s", code, "-g"],
                     ["find", "-a", "acct-" + code], ["--json", "find", "-s", code, "-w"],
                     ["update", "-s", code, "--set", "comment=changed"]] {
            let result = locket(args, file: file, line: line)
            XCTAssertEqual(result.status, 36, "\(name) \(context): \(args.joined(separator: " ")) must be errSecInteractionNotAllowed: \(result.summary)",
                           file: file, line: line)
            XCTAssertEqual(result.stdout, [], result.summary, file: file, line: line)
            XCTAssertTrue(result.err.contains("errSecInteractionNotAllowed"), result.summary, file: file, line: line)
        }
        let update = locket(["update", "-s", code, "-w"], input: .text("changed\n"), file: file, line: line)
        XCTAssertEqual(update.status, 36, "\(name) \(context): update -w: \(update.summary)", file: file, line: line)
        let add = locket(["add", "-s", "new-" + code, "--accessible", name, "-w"], input: .text("x\n"), file: file, line: line)
        XCTAssertEqual(add.status, 36, "\(name) \(context): add: \(add.summary)", file: file, line: line)
        let upsert = locket(["add", "-s", code, "-a", "acct-" + code, "--accessible", name, "-U", "-w"], input: .text("changed\n"),
                            file: file, line: line)
        XCTAssertEqual(upsert.status, 36, "\(name) \(context): add -U: \(upsert.summary)", file: file, line: line)
    }

    // MARK: - Point 1: choosing a class

    func testEverySpellingOfEveryClassIsAcceptedAndShown() throws {
        for pc in PC.all {
            for (spelling, service) in [(pc.name, "name-" + pc.code), (pc.apple, "apple-" + pc.code), (pc.code, "code-" + pc.code)] {
                let result = locket(["add", "-s", service, "--accessible", spelling, "-w"], input: .text("x\n"))
                XCTAssertEqual(result.status, 0, result.summary)
                XCTAssertEqual(expect(0, "find", "-s", service).fields["accessible"], pc.name, "--accessible \(spelling)")
                XCTAssertEqual(try expect(0, "--json", "find", "-s", service).jsonObject()["accessible"] as? String, pc.name)
            }
        }
        XCTAssertEqual(itemCounts(), Dictionary(uniqueKeysWithValues: PC.all.map { ($0.name, 3) }))
        // Close is not good enough: unknown names, other cases and the Apple constant's base name are refused.
        for bad in ["sometimes", "AK", "When-Unlocked", "kSecAttrAccessible", "whenunlocked", ""] {
            let result = locket(["add", "-s", "bad", "--accessible", bad, "-w"], input: .text("x\n"))
            XCTAssertEqual(result.status, 206, "--accessible '\(bad)': \(result.summary)")
        }
        expect(44, "find", "-s", "bad")
    }

    func testDefaultIsWhenUnlocked() throws {
        add("-s", "plain", "-a", "me")
        XCTAssertEqual(expect(0, "find", "-s", "plain").fields["accessible"], "when-unlocked")
        XCTAssertEqual(try expect(0, "--json", "find", "-s", "plain").jsonObject()["accessible"] as? String, "when-unlocked")
        XCTAssertEqual(try expect(0, "--json", "find", "-s", "plain", "--all").jsonArray().first?["accessible"] as? String, "when-unlocked")
        XCTAssertEqual(itemCounts()["when-unlocked"], 1)
        // ... and behaves as one: locked by lock.
        ok("lock")
        expect(36, "find", "-s", "plain", "-w")
    }

    func testAlwaysClassesWarnOnceAndNeedNoUnlockAtAll() throws {
        for pc in PC.all {
            let result = locket(["add", "-s", pc.code, "--accessible", pc.code, "-w"], input: .text("secret-\(pc.code)\n"))
            XCTAssertEqual(result.status, 0, result.summary)
            if PC.always.contains(pc.code) {
                XCTAssertEqual(result.errLines.count, 1, "one warning line for \(pc.name): \(result.summary)")
                XCTAssertTrue(result.err.hasPrefix("locket: warning: "), result.summary)
                XCTAssertTrue(result.err.contains("deprecated"), result.summary)
                XCTAssertTrue(result.err.contains(pc.name), "the warning names the class: \(result.summary)")
            } else {
                XCTAssertEqual(result.err, "", "only the always classes warn: \(result.summary)")
            }
        }
        // The Apple spelling warns too.
        let apple = locket(["add", "-s", "apple-dk", "--accessible", "kSecAttrAccessibleAlways", "-w"], input: .text("x\n"))
        XCTAssertEqual(apple.status, 0, apple.summary)
        XCTAssertTrue(apple.err.hasPrefix("locket: warning: "), apple.summary)
        ok("lock", "--all")
        // As after a reboot: never unlocked, and stdin has no password to give.
        for code in PC.always { assertReadable(code, "with no unlock at all") }
        // Written without an unlock too, and updated.
        let add = locket(["add", "-s", "later-dku", "--accessible", "dku", "-w"], input: .text("later\n"))
        XCTAssertEqual(add.status, 0, add.summary)
        XCTAssertEqual(secret("-s", "later-dku"), Array("later".utf8))
        ok("update", "-s", "dk", "--set", "comment=edited while locked")
        XCTAssertEqual(expect(0, "find", "-s", "dk").fields["comment"], "edited while locked")
    }

    func testUpdateMovesTheItemToAnotherClass() throws {
        // SPEC §4 (revised): update may change the class, the item sealed again under it.
        add("-s", "svc", "-a", "me", "--accessible", "after-first-unlock", secret: "value")
        let before = dumpWithData()
        // An unknown class is errSecParam, also combined with an allowed change: all or nothing.
        assertError(expect(206, "update", "-s", "svc", "--set", "accessible=sometimes"), "errSecParam", -50)
        expect(206, "update", "-s", "svc", "--set", "comment=x", "--set", "accessible=sometimes")
        expect(206, "update", "-s", "svc", "--set", "accessible=sometimes", "-w", input: .text("new\n"))
        // add -U on an existing item does not move it (delete and add it again, or update).
        expect(206, "add", "-s", "svc", "-a", "me", "--accessible", "always", "-U", "-w", input: .text("new\n"))
        XCTAssertEqual(dumpWithData(), before, "a refused update changed the keychain")
        for (set, name) in [("accessible=when-unlocked", "when-unlocked"), ("accessible=ak", "when-unlocked"),
                            ("pdmn=dk", "always"), ("accessible=kSecAttrAccessibleAfterFirstUnlock", "after-first-unlock")] {
            ok("update", "-s", "svc", "--set", set)
            XCTAssertEqual(expect(0, "find", "-s", "svc", "--accessible", name).fields["accessible"], name)
            XCTAssertEqual(secret("-s", "svc"), Array("value".utf8))
        }
    }

    func testHelpAddNamesTheClassesItsErrorPointsTo() throws {
        // An unknown class says "see --accessible in locket help add": that help must list them.
        let error = expect(206, "add", "-s", "x", "--accessible", "sometimes", "-w", input: .text("x\n"))
        XCTAssertTrue(error.err.contains("locket help add"), error.summary)
        let help = ok("help", "add").out
        let missing = PC.all.map(\.name).filter { !help.contains($0) }
        XCTAssertEqual(missing, [], "locket help add does not name these protection classes")
    }

    func testManPageDescribesEveryClassAsImplemented() throws {
        let man = try String(contentsOfFile: LocketBinary.repositoryRoot + "/man/locket.1", encoding: .utf8)
            .replacingOccurrences(of: "\\-", with: "-")
        let section = try XCTUnwrap(man.range(of: ".SH PROTECTION CLASSES").map { String(man[$0.upperBound...]) })
        let classes = String(section[..<(section.range(of: "\n.SH ")?.lowerBound ?? section.endIndex)])
        for pc in PC.all {
            XCTAssertTrue(classes.contains(pc.name) && classes.contains("(\(pc.code)"), "man PROTECTION CLASSES lacks \(pc.name) (\(pc.code))")
        }
        XCTAssertTrue(classes.contains("unlock") && classes.contains("lock --all"), classes)
        // The lifecycle is implemented: the page must not say otherwise.
        XCTAssertFalse(classes.contains("still being completed"), "man PROTECTION CLASSES says the classes' lifecycle is unfinished")
        XCTAssertTrue(man.contains("unavailable-on-this-device"), "the dump status of a copied keychain's bound items is documented")
    }

    // MARK: - Point 2: lock semantics per class

    func testAfterLockOnlyTheWhenUnlockedClassesAreUnavailable() throws {
        addOneOfEach()
        let before = dumpWithData()
        ok("lock")
        for code in PC.whenUnlocked { assertLocked(code, "after lock") }
        for code in PC.afterFirstUnlock + PC.always { assertReadable(code, "after lock") }
        // dump --data refuses up front, text and JSON, and prints nothing.
        for args in [["dump", "--data"], ["--json", "dump", "--data"]] {
            let result = locket(args)
            XCTAssertEqual(result.status, 36, result.summary)
            XCTAssertEqual(result.stdout, [], result.summary)
        }
        // A search spanning a locked and an open class fails as a whole, never a partial answer or 44.
        expect(36, "find", "--all")
        expect(36, "find", "--all", "-w")
        // A query that matches nothing is still errSecItemNotFound while locked.
        expect(44, "find", "-s", "nothing-here")
        expect(44, "update", "-s", "nothing-here", "--set", "comment=x")
        unlock()
        XCTAssertEqual(dumpWithData(), before, "a failed read, add or update while locked changed the keychain")
    }

    func testAfterLockAllOnlyTheAlwaysClassesAreAvailable() throws {
        addOneOfEach()
        let before = dumpWithData()
        ok("lock", "--all")
        for code in PC.whenUnlocked + PC.afterFirstUnlock { assertLocked(code, "after lock --all") }
        for code in PC.always { assertReadable(code, "after lock --all") }
        expect(36, "dump", "--data")
        // Without --data the dump lists every item, the locked ones with their status only.
        let dump = try expect(0, "--json", "dump").jsonArray()
        XCTAssertEqual(dump.count, PC.all.count)
        for object in dump {
            let accessible = try XCTUnwrap(object["accessible"] as? String)
            let code = try XCTUnwrap(PC.all.first { $0.name == accessible }).code
            XCTAssertEqual(object["status"] as? String, PC.always.contains(code) ? "available" : "locked", accessible)
            if !PC.always.contains(code) { XCTAssertNil(object["service"], "a locked item shows no attributes: \(object)") }
        }
        unlock()
        XCTAssertEqual(dumpWithData(), before, "a failed read, add or update while locked changed the keychain")
        for pc in PC.all { assertReadable(pc.code, "after unlock") }
    }

    func testUnlockAfterLockRestoresEveryClass() throws {
        addOneOfEach()
        ok("lock")
        unlock()
        for pc in PC.all { assertReadable(pc.code, "after lock then unlock") }
        ok("lock", "--all")
        unlock()
        for pc in PC.all { assertReadable(pc.code, "after lock --all then unlock") }
    }

    func testDeleteWorksWhileLockedForEveryClass() throws {
        addOneOfEach(prefix: "lock-")
        addOneOfEach(prefix: "all-")
        addOneOfEach(prefix: "keep-")
        for (lockArgs, prefix) in [(["lock"], "lock-"), (["lock", "--all"], "all-")] {
            ok(lockArgs)
            for pc in PC.all {
                let result = locket(["delete", "-s", prefix + pc.code])
                XCTAssertEqual(result.status, 0, "\(lockArgs.joined(separator: " ")): delete \(pc.name): \(result.summary)")
                // Gone now, and the keychain says so (not locked).
                expect(44, "delete", "-s", prefix + pc.code)
            }
            unlock()
            for pc in PC.all { expect(44, "find", "-s", prefix + pc.code) }
        }
        // By another attribute and by persistent reference while locked, too.
        let ref = try XCTUnwrap(expect(0, "find", "-s", "keep-ak", "--show-ref").fields["ref"])
        ok("lock", "--all")
        ok("delete", "--ref", ref)
        ok("delete", "-a", "acct-keep-cku")
        unlock()
        XCTAssertEqual(itemCounts(), Dictionary(uniqueKeysWithValues: PC.all.map {
            ($0.name, ["ak", "cku"].contains($0.code) ? 0 : 1)
        }))
        for pc in PC.all where !["ak", "cku"].contains(pc.code) {
            XCTAssertEqual(secret("-s", "keep-" + pc.code), Array("secret-keep-\(pc.code)".utf8))
        }
    }

    func testRepeatedFailedReadsNeverDeleteOrChangeAnything() throws {
        addOneOfEach()
        let before = dumpWithData()
        let counts = itemCounts()
        ok("lock", "--all")
        for _ in 0..<3 {
            for pc in PC.all where !PC.always.contains(pc.code) {
                expect(36, "find", "-s", pc.code, "-w")
                expect(36, "update", "-s", pc.code, "-w", input: .text("overwritten\n"))
            }
            expect(36, "dump", "--data")
            expect(36, "find", "--all", "-g")
            XCTAssertEqual(itemCounts(), counts, "a failed read changed the item counts")
        }
        unlock()
        XCTAssertEqual(dumpWithData(), before)
    }
}
