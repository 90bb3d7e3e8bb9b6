import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 4, points 1 to 4, through the binary: entitlements files given by
/// `-e` or `LOCKET_ENTITLEMENTS`, the access-group list and its default,
/// other apps' items invisible, errSecMissingEntitlement, the owner, and
/// every refused file. (Cryptographic scoping: EndToEndScopedSessionTests.)
class EndToEndEntitlementsTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    var appA: String!
    var appB: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        (appA, appB) = writeApps()
    }

    /// `locket [-e APP] add ARGS -w` with the secret on stdin; asserts success.
    func add(as app: String?, _ arguments: String..., secret: String = "s3cret",
             file: StaticString = #filePath, line: UInt = #line) {
        let result = locket((app.map { ["-e", $0] } ?? []) + ["add"] + arguments + ["-w"],
                            input: .text(secret + "\n"), file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", result.summary, file: file, line: line)
    }

    /// The access group of the one item `find ARGS` returns, as the app sees it.
    func group(as app: String?, _ arguments: String..., file: StaticString = #filePath, line: UInt = #line) -> String? {
        runJSONObject((app.map { ["-e", $0] } ?? []) + ["find"] + arguments, file: file, line: line)["accessGroup"] as? String
    }

    /// One item per caller, all with the same service: A's, B's and the owner's.
    func addOneItemPerCaller() {
        add(as: appA, "-s", "db", "-a", "alice", secret: "secret of A")
        add(as: appB, "-s", "db", "-a", "bob", secret: "secret of B")
        add(as: nil, "-s", "db", "-a", "owner", secret: "secret of the owner")
    }

    // MARK: - Point 1: files, -e and LOCKET_ENTITLEMENTS

    func testXcodeEntitlementsFileGivesItsGroupsInOrder() {
        // keychain-access-groups (with both prefix variables, a duplicate
        // dropped), then the application identifier, then the application
        // groups (one a duplicate): an app's unlock reports the whole list.
        ok("lock", "--all")
        ok("-e", appA, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(runJSONObject(["status"])["scopedTo"] as? [String], Apps.groupsA)
        XCTAssertEqual(runJSONObject(["-e", appB, "status"])["scopedTo"] as? [String], Apps.groupsA,
                       "the scope belongs to the session, whoever asks")
        ok("lock", "--all")
        ok("-e", appB, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(runJSONObject(["status"])["scopedTo"] as? [String], Apps.groupsB)
        // Every group of the list may be named; the unexpanded spelling is not a group of A's.
        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
        for (i, group) in Apps.groupsA.enumerated() {
            add(as: appA, "-s", "svc\(i)", "--access-group", group)
            XCTAssertEqual(self.group(as: appA, "-s", "svc\(i)"), group)
        }
        assertMissingEntitlement(locket(["-e", appA, "add", "-s", "literal", "--access-group", "$(AppIdentifierPrefix)groupA"]))
    }

    func testDefaultGroupIsTheFirstOfTheList() {
        add(as: appA, "-s", "github", "-a", "ci")
        XCTAssertEqual(group(as: appA, "-s", "github"), "SKMME9E2Y8.groupA")
        XCTAssertEqual(group(as: nil, "-s", "github"), "SKMME9E2Y8.groupA", "the owner sees where the app put it")
        add(as: appB, "-s", "github", "-a", "ci")
        XCTAssertEqual(group(as: appB, "-s", "github"), "Z9Y8X7W6V5.b-shared", "JSON: the expanded first group")
        // The owner's default is `default`.
        add(as: nil, "-s", "github", "-a", "ci")
        XCTAssertEqual(group(as: nil, "-s", "github", "--access-group", "default"), "default")
        // Three items with the same service and account: the group is part of the primary key.
        XCTAssertEqual(runJSONArray(["find", "-s", "github", "--all"]).count, 3)
    }

    func testJSONEntitlementsWithAppleApplicationIdentifierOnly() {
        // The macOS spelling, and nothing else: the list is the application identifier.
        let mac = writeEntitlements("mac.json", #"{"com.apple.application-identifier": "T1.com.example.mac"}"#)
        add(as: mac, "-s", "svc")
        XCTAssertEqual(group(as: mac, "-s", "svc"), "T1.com.example.mac")
        let plist = writeEntitlements("mac.entitlements", """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>com.apple.application-identifier</key>
            \t<string>T1.com.example.mac</string>
            </dict>
            </plist>
            """)
        XCTAssertEqual(String(decoding: secret("-e", plist, "-s", "svc"), as: UTF8.self), "s3cret",
                       "the same identifier in XML sees the same item")
    }

    func testEntitlementsEnvironmentVariableAndDashEWins() {
        add(as: appA, "-s", "a-item")
        add(as: appB, "-s", "b-item")
        // LOCKET_ENTITLEMENTS works like -e.
        let envA = ["LOCKET_ENTITLEMENTS": appA!]
        XCTAssertEqual(locket(["find", "-s", "a-item", "-w", "-n"], environment: envA).out, "s3cret")
        expect(44, "find", "-s", "b-item", environment: envA)
        let added = locket(["add", "-s", "from-env", "-w"], input: .text("x\n"), environment: envA)
        XCTAssertEqual(added.status, 0, added.summary)
        XCTAssertEqual(group(as: nil, "-s", "from-env"), Apps.groupsA[0])
        expect(30, "find", "--access-group", Apps.groupsB[0], environment: envA)
        // -e wins over the variable, in either position.
        XCTAssertEqual(locket(["-e", appB, "find", "-s", "b-item", "-w", "-n"], environment: envA).out, "s3cret")
        expect(44, "-e", appB, "find", "-s", "a-item", environment: envA)
        expect(44, "find", "-s", "a-item", "-e", appB, environment: envA)
        // ... and the variable's file is not even read then.
        let broken = writeEntitlements("broken.json", "{")
        expect(0, "-e", appA, "find", "-s", "a-item", environment: ["LOCKET_ENTITLEMENTS": broken])
        let refused = expect(206, "find", "-s", "a-item", environment: ["LOCKET_ENTITLEMENTS": broken])
        XCTAssertTrue(refused.errLines.first?.hasPrefix("locket: error: \(broken): ") == true, refused.summary)
        // An empty variable is no entitlements: the owner.
        XCTAssertEqual(runJSONArray(["find", "--all"], environment: ["LOCKET_ENTITLEMENTS": ""]).count, 3)
    }

    // MARK: - Point 2: other apps' items are invisible

    func testFindSeesOnlyTheAppsGroups() {
        addOneItemPerCaller()
        let seen = runJSONArray(["-e", appA, "find", "-s", "db", "--all"])
        XCTAssertEqual(seen.map { $0["account"] as? String }, ["alice"])
        XCTAssertEqual(runJSONArray(["-e", appA, "find", "--all"]).count, 1, "a query without attributes too")
        XCTAssertEqual(runJSONArray(["-e", appA, "find", "--limit", "5"]).count, 1)
        for account in ["bob", "owner"] {
            let result = expect(44, "-e", appA, "find", "-s", "db", "-a", account)
            assertError(result, "errSecItemNotFound", -25300)
            expect(44, "-e", appA, "find", "-s", "db", "-a", account, "-w")
            expect(44, "-e", appA, "find", "--ref", persistentRef(account))
        }
        XCTAssertEqual(String(decoding: secret("-e", appB, "-s", "db"), as: UTF8.self), "secret of B")
        // Same primary key as B's item, in A's group: no duplicate, and nothing learned about B's.
        add(as: appA, "-s", "db", "-a", "bob", secret: "A's own bob")
        XCTAssertEqual(String(decoding: secret("-e", appB, "-s", "db", "-a", "bob"), as: UTF8.self), "secret of B")
    }

    /// The persistent reference of the item whose account is `account` (owner's view).
    func persistentRef(_ account: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        runJSONObject(["find", "-a", account], file: file, line: line)["persistentRef"] as? String ?? "missing"
    }

    func testDeleteCannotReachOtherAppsItems() {
        addOneItemPerCaller()
        for account in ["bob", "owner"] {
            assertError(expect(44, "-e", appA, "delete", "-s", "db", "-a", account), "errSecItemNotFound", -25300)
            expect(44, "-e", appA, "delete", "--ref", persistentRef(account))
        }
        // A delete matching every caller's item removes A's only.
        ok("-e", appA, "delete", "-s", "db")
        let left = runJSONArray(["find", "-s", "db", "--all", "-g"])
        XCTAssertEqual(left.map { $0["account"] as? String }, ["bob", "owner"])
        XCTAssertEqual(left.map { $0["data"] as? String }, ["secret of B", "secret of the owner"])
        // --all, as A, with nothing of A's left: not found, and nothing else goes.
        expect(44, "-e", appA, "delete", "--all")
        XCTAssertEqual(runJSONArray(["find", "--all"]).count, 2)
        add(as: appA, "-s", "mine")
        ok("-e", appA, "delete", "--all")
        XCTAssertEqual(runJSONArray(["find", "--all"]).map { $0["account"] as? String }, ["bob", "owner"])
    }

    func testUpdateCannotReachOtherAppsItems() {
        addOneItemPerCaller()
        let before = runJSONArray(["find", "--all", "-g"])
        for account in ["bob", "owner"] {
            expect(44, "-e", appA, "update", "-s", "db", "-a", account, "--set", "comment=changed by A")
            let secretChange = locket(["-e", appA, "update", "-s", "db", "-a", account, "-w"], input: .text("overwritten\n"))
            XCTAssertEqual(secretChange.status, 44, secretChange.summary)
        }
        let after = runJSONArray(["find", "--all", "-g"])
        XCTAssertEqual(after.count, 3)
        for (old, new) in zip(before, after) {
            XCTAssertEqual(new["comment"] as? String, old["comment"] as? String)
            XCTAssertEqual(new["data"] as? String, old["data"] as? String)
            XCTAssertEqual(new["modificationDate"] as? String, old["modificationDate"] as? String)
        }
        // An update matching every caller's item changes A's only.
        ok("-e", appA, "update", "-s", "db", "--set", "comment=A was here")
        XCTAssertEqual(runJSONArray(["find", "--all"]).map { $0["comment"] as? String }, ["A was here", "", ""])
    }

    func testDumpListsOnlyTheAppsItems() {
        addOneItemPerCaller()
        let text = expect(0, "-e", appA, "dump").out
        XCTAssertTrue(text.contains("alice"), text)
        for hidden in ["bob", "owner", "Z9Y8X7W6V5", "access-group: default", "status:"] {
            XCTAssertFalse(text.contains(hidden), "A's dump shows \(hidden): \(text)")
        }
        let items = runJSONArray(["-e", appA, "dump", "--data"])
        XCTAssertEqual(items.map { $0["account"] as? String }, ["alice"])
        XCTAssertEqual(items.map { $0["data"] as? String }, ["secret of A"])
        XCTAssertEqual(runJSONArray(["-e", appB, "dump"]).map { $0["account"] as? String }, ["bob"])
        XCTAssertEqual(runJSONArray(["dump"]).count, 3, "the owner's dump has everything")
        // An app with no item dumps nothing, successfully.
        let empty = writeEntitlements("empty.json", #"{"keychain-access-groups": ["T.nothing-here"]}"#)
        XCTAssertEqual(expect(0, "-e", empty, "dump").out, "")
    }

    func testStatusCountsOnlyTheAppsItems() {
        addOneItemPerCaller()
        add(as: appA, "-s", "later", "--accessible", "after-first-unlock")
        func counts(_ app: String?) -> [String: Int] {
            (runJSONObject((app.map { ["-e", $0] } ?? []) + ["status"])["items"] as? [String: Int]) ?? [:]
        }
        XCTAssertEqual(counts(appA)["when-unlocked"], 1)
        XCTAssertEqual(counts(appA)["after-first-unlock"], 1)
        XCTAssertEqual(counts(appB)["when-unlocked"], 1)
        XCTAssertEqual(counts(appB)["after-first-unlock"], 0)
        XCTAssertEqual(counts(nil)["when-unlocked"], 3)
        XCTAssertEqual(counts(nil)["after-first-unlock"], 1)
        XCTAssertTrue(expect(0, "-e", appA, "status").out.contains("items when-unlocked: 1\n"))
    }

    // MARK: - Point 2: errSecMissingEntitlement

    func testNamingAGroupOutsideTheListIsMissingEntitlement() {
        addOneItemPerCaller()
        let foreign = Apps.groupsB[0]
        for group in [foreign, "default", "SKMME9E2Y8.groupC", "skmme9e2y8.groupa"] {
            assertMissingEntitlement(locket(["-e", appA, "add", "-s", "new", "--access-group", group, "-w"], input: .text("x\n")))
            assertMissingEntitlement(locket(["-e", appA, "find", "--access-group", group]))
            assertMissingEntitlement(locket(["-e", appA, "find", "-s", "db", "--access-group", group, "-w"]))
            assertMissingEntitlement(locket(["-e", appA, "update", "--access-group", group, "--set", "comment=x"]))
            assertMissingEntitlement(locket(["-e", appA, "update", "-s", "db", "--access-group", group, "-w"], input: .text("x\n")))
            assertMissingEntitlement(locket(["-e", appA, "delete", "--access-group", group]))
            assertMissingEntitlement(locket(["-e", appA, "delete", "-s", "db", "--access-group", group, "--all"]))
        }
        // The same with the inet class.
        assertMissingEntitlement(locket(["-e", appA, "find", "--class", "inet", "--access-group", foreign]))
        // Refused while a matching item exists in that group: 30, never 44 or a result.
        XCTAssertEqual(locket(["-e", appA, "find", "-s", "db", "-a", "bob", "--access-group", foreign]).status, 30)
        // Nothing was added, changed or deleted.
        XCTAssertEqual(runJSONArray(["find", "--all", "-g"]).map { $0["data"] as? String },
                       ["secret of A", "secret of B", "secret of the owner"])
        XCTAssertEqual(runJSONArray(["find", "--all"]).map { $0["comment"] as? String }, ["", "", ""])
    }

    func testMovingAnItemOutsideTheListIsMissingEntitlementAndChangesNothing() {
        addOneItemPerCaller()
        let before = runJSONObject(["find", "-a", "alice", "-g"])
        for spelling in ["access-group", "agrp"] {
            for target in [Apps.groupsB[0], "default", "elsewhere"] {
                assertMissingEntitlement(locket(["-e", appA, "update", "-s", "db", "--set", "\(spelling)=\(target)"]))
                assertMissingEntitlement(locket(["-e", appA, "update", "-s", "db", "--set", "comment=x", "--set", "\(spelling)=\(target)"]))
            }
        }
        let after = runJSONObject(["find", "-a", "alice", "-g"])
        for key in ["accessGroup", "comment", "data", "modificationDate", "persistentRef"] {
            XCTAssertEqual(after[key] as? String, before[key] as? String, key)
        }
        expect(44, "find", "--access-group", "elsewhere")
        // Within the list, a move works, and the secret survives the re-sealing.
        ok("-e", appA, "update", "-s", "db", "--set", "access-group=group.com.example.waffle")
        let moved = runJSONObject(["-e", appA, "find", "-s", "db", "-g"])
        XCTAssertEqual(moved["accessGroup"] as? String, "group.com.example.waffle")
        XCTAssertEqual(moved["data"] as? String, "secret of A")
        XCTAssertEqual(moved["persistentRef"] as? String, before["persistentRef"] as? String)
    }

    // MARK: - Point 3: the owner

    func testOwnerSeesEveryGroupAndMayNameAny() {
        addOneItemPerCaller()
        XCTAssertEqual(runJSONArray(["find", "-s", "db", "--all"]).map { $0["accessGroup"] as? String },
                       [Apps.groupsA[0], Apps.groupsB[0], "default"])
        for (group, account) in [(Apps.groupsA[0], "alice"), (Apps.groupsB[0], "bob"), ("default", "owner")] {
            XCTAssertEqual(runJSONObject(["find", "--access-group", group])["account"] as? String, account)
        }
        add(as: nil, "-s", "anywhere", "--access-group", "any.group.at.all")
        XCTAssertEqual(group(as: nil, "-s", "anywhere"), "any.group.at.all")
        // The owner moves B's item into A's group; A then sees it, and B no longer does.
        ok("update", "-a", "bob", "--set", "access-group=\(Apps.groupsA[1])")
        XCTAssertEqual(String(decoding: secret("-e", appA, "-a", "bob"), as: UTF8.self), "secret of B")
        expect(44, "-e", appB, "find", "-a", "bob")
        ok("delete", "--access-group", Apps.groupsA[1])
        expect(44, "-e", appA, "find", "-a", "bob")
    }

    func testPasswordAndSettingsChangesAreForTheOwner() {
        ok("settings", "--timeout", "600")
        let before = fileSnapshot(times: false)
        assertMissingEntitlement(locket(["-e", appA, "passwd"], input: .text(Self.password + "\nnew password\nnew password\n")))
        assertMissingEntitlement(locket(["-e", appA, "passwd", "--remove", "--yes"], input: .text(Self.password + "\n")))
        assertMissingEntitlement(locket(["-e", appA, "settings", "--timeout", "60"]))
        assertMissingEntitlement(locket(["-e", appA, "settings", "--timeout", "none"]))
        // Neither the keychain nor its settings changed. (The session was
        // read, which touches it, and reading may update SQLite's -shm index.)
        func durable(_ files: [String: String]) -> [String: String] {
            files.filter { !$0.key.hasPrefix(sessionDirectory) && !$0.key.hasSuffix("-shm") }
        }
        assertUnchanged(durable(before), durable(fileSnapshot(times: false)), "an app's passwd/settings")
        XCTAssertEqual(expect(0, "settings").out, "timeout: 600\n")
        ok("lock")
        expect(51, "unlock", "--password-stdin", input: .text("new password\n"))
        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
    }

    // MARK: - Point 4: bad entitlements files

    /// Each case: a file name, its bytes, its mode, and words the message must contain.
    var malformedCases: [(name: String, bytes: [UInt8], mode: mode_t, problem: String)] {
        let xml = { (body: String) in Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \(body)
            </dict>
            </plist>

            """.utf8) }
        let good = Array(#"{"keychain-access-groups": ["T.ok"]}"#.utf8)
        return [
            ("truncated.entitlements", Array(Apps.xcodeA.utf8.prefix(300)), 0o644, "malformed"),
            ("invalid.json", Array(#"{"keychain-access-groups": ["T.a",}"#.utf8), 0o644, "malformed"),
            ("not-array.json", Array(#"{"keychain-access-groups": "T.a"}"#.utf8), 0o644, "keychain-access-groups must be an array of strings"),
            ("not-array.entitlements", xml("\t<key>keychain-access-groups</key>\n\t<string>T.a</string>"), 0o644,
             "keychain-access-groups must be an array of strings"),
            ("numbers.json", Array(#"{"keychain-access-groups": [1, 2]}"#.utf8), 0o644, "keychain-access-groups must be an array of strings"),
            ("numbers.entitlements", xml("\t<key>keychain-access-groups</key>\n\t<array>\n\t\t<integer>1</integer>\n\t</array>"), 0o644,
             "keychain-access-groups must be an array of strings"),
            ("app-groups.json", Array(#"{"com.apple.security.application-groups": {"a": 1}}"#.utf8), 0o644,
             "com.apple.security.application-groups must be an array of strings"),
            ("app-id.json", Array(#"{"application-identifier": 12345}"#.utf8), 0o644, "application-identifier must be a string"),
            ("app-id.entitlements", xml("\t<key>com.apple.application-identifier</key>\n\t<array/>"), 0o644,
             "com.apple.application-identifier must be a string"),
            ("empty-group.json", Array(#"{"keychain-access-groups": ["T.a", ""]}"#.utf8), 0o644, "empty"),
            ("control.json", Array(#"{"keychain-access-groups": ["T.a\u001b[2J"]}"#.utf8), 0o644, "control characters"),
            ("newline.entitlements", xml("\t<key>keychain-access-groups</key>\n\t<array>\n\t\t<string>T.a\nT.b</string>\n\t</array>"), 0o644,
             "control characters"),
            ("no-group.json", Array(#"{"aps-environment": "development"}"#.utf8), 0o644, "no access group"),
            ("no-group.entitlements", xml("\t<key>keychain-access-groups</key>\n\t<array/>"), 0o644, "no access group"),
            ("no-app-id.entitlements", xml("\t<key>keychain-access-groups</key>\n\t<array>\n\t\t<string>$(AppIdentifierPrefix)shared</string>\n\t</array>"),
             0o644, "$(AppIdentifierPrefix)"),
            ("group-writable.json", good, 0o664, "writable"),
            ("other-writable.json", good, 0o646, "writable"),
            ("empty-file.json", [], 0o644, "not an entitlements file"),
            ("not-entitlements.txt", Array("keychain-access-groups = T.a\n".utf8), 0o644, "not an entitlements file"),
        ]
    }

    /// Asserts the one-line errSecParam failure naming `path` and `problem`.
    func assertRefusedFile(_ result: RunResult, _ path: String, _ problem: String,
                           file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 206, result.summary, file: file, line: line)
        XCTAssertEqual(result.errLines.count, 1, "one line: \(result.err)", file: file, line: line)
        let message = result.errLines.first ?? ""
        XCTAssertTrue(message.hasPrefix("locket: error: \(path): "), "must name the file first: \(message)", file: file, line: line)
        XCTAssertTrue(message.contains(problem), "must say what is wrong (\(problem)): \(message)", file: file, line: line)
        XCTAssertTrue(message.hasSuffix("(errSecParam -50)"), message, file: file, line: line)
        XCTAssertEqual(result.stdout, [], file: file, line: line)
    }

    func testEachMalformedFileIsRefusedWithOneLineNamingItAndNothingIsTouched() {
        add(as: nil, "-s", "db", "-a", "owner", secret: "kept")
        let before = fileSnapshot()
        for c in malformedCases {
            let path = writeEntitlementBytes(c.name, c.bytes, mode: c.mode)
            assertRefusedFile(locket(["-e", path, "find", "-s", "db", "-w"]), path, c.problem)
            assertRefusedFile(locket(["find", "-s", "db"], environment: ["LOCKET_ENTITLEMENTS": path]), path, c.problem)
            // JSON errors keep the file's name in the message.
            let json = locket(["--json", "-e", path, "find", "-s", "db"])
            XCTAssertEqual(json.status, 206, json.summary)
            XCTAssertTrue((try? json.jsonError())?["message"].map { "\($0)".hasPrefix("\(path): ") } == true, json.summary)
        }
        assertUnchanged(before, fileSnapshot(), "refused entitlements files")
    }

    func testMissingAndUnreadableFiles() {
        let missing = sandbox.root + "/no-such.entitlements"
        assertRefusedFile(locket(["-e", missing, "find"]), missing, "cannot read")
        let relative = locket(["-e", "relative/missing.entitlements", "find"])
        assertRefusedFile(relative, "relative/missing.entitlements", "cannot read")
        let directory = sandbox.root + "/dir.entitlements"
        XCTAssertEqual(mkdir(directory, 0o755), 0)
        assertRefusedFile(locket(["-e", directory, "find"]), directory, "not a regular file")
        if geteuid() != 0 {
            // root reads anything; elsewhere a mode-0200 file cannot be read.
            let unreadable = writeEntitlements("unreadable.json", #"{"keychain-access-groups": ["T.a"]}"#, mode: 0o200)
            assertRefusedFile(locket(["-e", unreadable, "find"]), unreadable, "cannot read")
        }
    }

    func testEveryCommandRefusesABadFileBeforeTouchingAnything() {
        add(as: nil, "-s", "db", "-a", "owner", secret: "kept")
        ok("lock")
        let bad = writeEntitlements("other-writable.entitlements", Apps.xcodeA, mode: 0o646)
        let before = fileSnapshot()
        let commands: [([String], Input)] = [
            (["add", "-s", "new", "-w"], .text("secret\n")),
            (["add", "-s", "new", "--data-file", "-"], .text("secret")),
            (["find", "-s", "db"], .devNull),
            (["find", "-s", "db", "-w"], .devNull),
            (["update", "-s", "db", "--set", "comment=x"], .devNull),
            (["update", "-s", "db", "--set", "access-group=elsewhere"], .devNull),
            (["delete", "-s", "db"], .devNull),
            (["delete", "--all"], .devNull),
            (["dump"], .devNull),
            (["dump", "--data"], .devNull),
            (["unlock", "--password-stdin"], .text(Self.password + "\n")),
            (["unlock", "--password-stdin"], .text("a wrong password\n")),
            (["lock", "--all"], .devNull),
            (["status"], .devNull),
            (["settings"], .devNull),
            (["settings", "--timeout", "5"], .devNull),
            (["passwd"], .text(Self.password + "\nnew\nnew\n")),
        ]
        for (arguments, input) in commands {
            assertRefusedFile(locket(["-e", bad] + arguments, input: input), bad, "writable")
        }
        assertUnchanged(before, fileSnapshot(), "commands with a refused entitlements file")
        // Still locked, the wrong password not counted, the item where it was.
        XCTAssertEqual(runJSONObject(["status"])["failedAttempts"] as? Int, 0)
        expect(36, "find", "-s", "db", "-w")
        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(String(decoding: secret("-s", "db"), as: UTF8.self), "kept")
    }

    func testABadFileIsReportedBeforeAMissingKeychain() {
        let bad = writeEntitlements("numbers.json", #"{"keychain-access-groups": [1]}"#)
        let nowhere = sandbox.root + "/nowhere.keychain"
        for arguments in [["find"], ["add", "-s", "x"], ["unlock"], ["status"], ["dump"]] {
            let result = locket(["-k", nowhere, "-e", bad] + arguments)
            assertRefusedFile(result, bad, "keychain-access-groups must be an array of strings")
            XCTAssertFalse(result.err.contains("errSecNoSuchKeychain"), result.summary)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: nowhere))
        // With a good file, the missing keychain is what is reported.
        expect(50, "-k", nowhere, "-e", appA, "find")
    }

    func testInitRefusesABadFileAndCreatesNothing() {
        let bad = writeEntitlements("broken.entitlements", String(Apps.xcodeA.prefix(200)))
        let path = sandbox.root + "/new.keychain"
        let before = fileSnapshot()
        let result = locket(["-k", path, "-e", bad, "init", "--password-stdin"], input: .text("pw\n"))
        assertRefusedFile(result, bad, "malformed")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "init created a keychain despite a malformed entitlements file")
        assertUnchanged(before, fileSnapshot(), "init with a malformed entitlements file")
        let other = writeEntitlements("group-writable.json", #"{"keychain-access-groups": ["T.a"]}"#, mode: 0o664)
        let second = sandbox.root + "/second.keychain"
        assertRefusedFile(locket(["-k", second, "-e", other, "init", "--no-password"]), other, "writable")
        XCTAssertFalse(FileManager.default.fileExists(atPath: second))
    }
}

/// `exec` replaces the process it runs in: through the binary (the rest of
/// the entitlements suite runs in-process). XCTest on Linux runs only the
/// tests a class declares, not those it inherits.
final class EndToEndEntitlementsExecTests: EndToEndEntitlementsTests {
    override class var inProcess: Bool { false }

    func testExecAndTheCredentialHelperSeeOnlyTheAppsGroups() {
        // SPEC §9: "Entitlements apply as everywhere."
        addOneItemPerCaller()
        XCTAssertEqual(expect(0, "-e", appA, "exec", "--env", "X=db/alice", "--", "/bin/sh", "-c", "printf %s \"$X\"").out,
                       "secret of A")
        let refused = expect(44, "-e", appA, "exec", "--env", "X=db/bob", "--", "/bin/sh", "-c", "echo started")
        XCTAssertEqual(refused.out, "", "nothing starts when a reference is not visible")
        expect(44, "-e", appA, "exec", "--", "/bin/sh", "-c", "echo started", environment: ["X": "locket:db/owner"])
        // git's helper: B stores, A neither gets nor erases it.
        let store = "protocol=https\nhost=git.example.com\nusername=bob\npassword=b-pass\n\n"
        expect(0, "-e", appB, "credential", "store", input: .text(store))
        let get = "protocol=https\nhost=git.example.com\n\n"
        XCTAssertFalse(expect(0, "-e", appA, "credential", "get", input: .text(get)).out.contains("b-pass"))
        expect(0, "-e", appA, "credential", "erase", input: .text(get))
        XCTAssertTrue(expect(0, "-e", appB, "credential", "get", input: .text(get)).out.contains("password=b-pass\n"))
        XCTAssertEqual(group(as: nil, "--class", "inet", "-s", "git.example.com"), Apps.groupsB[0])
    }
}
