import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 5, item 4: the JSON output is a stable contract. These tests pin the
/// exact key set and the JSON type of every value for find, find --all, dump,
/// status, settings and errors, so that a change cannot drift in silently.
final class EndToEndJSONContractTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    /// Key -> JSON type of an item, by class (SPEC §3 names).
    static let common: [String: String] = [
        "class": "string", "account": "string", "label": "string", "description": "string", "comment": "string",
        "creator": "string", "type": "string", "accessGroup": "string", "accessible": "string",
        "creationDate": "string", "modificationDate": "string", "persistentRef": "string",
    ]
    static let genp = common.merging(["service": "string", "generic": "string"]) { $1 }
    static let inet = common.merging(["server": "string", "securityDomain": "string", "protocol": "string",
                                      "authenticationType": "string", "port": "number", "path": "string"]) { $1 }
    /// What an item that cannot be read shows (dump of a locked class).
    static let lockedItem: [String: String] = ["class": "string", "status": "string", "accessGroup": "string",
                                               "accessible": "string", "persistentRef": "string"]
    static let status: [String: Set<String>] = [
        "keychain": ["string"], "password": ["bool"], "whenUnlocked": ["string"], "afterFirstUnlock": ["string"],
        "secondsUntilAutoLock": ["number", "null"], "timeout": ["number", "string"], "session": ["string", "null"],
        "failedAttempts": ["number"], "scopedTo": ["array", "null"], "items": ["object"], "tpmBound": ["bool"], "tpm": ["object"],
    ]
    static let classNames = ["when-unlocked", "after-first-unlock", "always", "when-unlocked-this-device-only",
                             "after-first-unlock-this-device-only", "always-this-device-only",
                             "when-passcode-set-this-device-only"]

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    // MARK: - Helpers

    /// Runs locket with `--json` first; asserts exit 0, empty stderr, one document and a final newline.
    func json(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> TypedJSON {
        let result = locket(["--json"] + arguments, file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", result.summary, file: file, line: line)
        XCTAssertTrue(result.out.hasSuffix("\n"), "ends with a newline: \(result.out)", file: file, line: line)
        // JSONSerialization agrees that it is one valid document.
        XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(result.stdout)), result.out, file: file, line: line)
        return try TypedJSON.parse(result.stdout)
    }

    /// Asserts exactly these keys, each with exactly this JSON type.
    func assertShape(_ value: TypedJSON, _ shape: [String: String], file: StaticString = #filePath, line: UInt = #line) {
        assertShape(value, shape.mapValues { Set([$0]) }, file: file, line: line)
    }

    func assertShape(_ value: TypedJSON, _ shape: [String: Set<String>], file: StaticString = #filePath, line: UInt = #line) {
        guard let object = value.object else { return XCTFail("not an object: \(value)", file: file, line: line) }
        XCTAssertEqual(Set(object.keys), Set(shape.keys), "keys of \(value)", file: file, line: line)
        for (key, types) in shape {
            guard let got = object[key] else { continue }
            XCTAssertTrue(types.contains(got.type), "\(key) is a \(got.type) (\(got)), not \(types.sorted())", file: file, line: line)
        }
    }

    /// The strict reader really tells the JSON types apart.
    func testTypeReaderIsStrict() throws {
        let parsed = try TypedJSON.parse(Array(#"[true, 1, "1", null, 1.5, {}, []]"#.utf8))
        XCTAssertEqual(parsed.array?.map(\.type), ["bool", "number", "string", "null", "number", "object", "array"])
    }

    // MARK: - find

    func testFindGenericPassword() throws {
        add("-s", "svc", "-a", "me", "-l", "L", "-G", "G", secret: "sekrit")
        let item = try json("find", "-s", "svc")
        assertShape(item, Self.genp)
        XCTAssertEqual(item.object?["class"], .string("genp"))
        XCTAssertEqual(item.object?["generic"], .string("Rw=="), "bytes attributes are base64")
        XCTAssertEqual(item.object?["persistentRef"]?.string?.count, 32, "hex")
        for key in ["creationDate", "modificationDate"] {
            let text = try XCTUnwrap(item.object?[key]?.string)
            XCTAssertNotNil(text.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"#, options: .regularExpression), text)
        }
        // -g adds "data" for UTF-8 secrets, "dataBase64" for others; nothing else changes.
        let withData = try json("find", "-s", "svc", "-g")
        assertShape(withData, Self.genp.merging(["data": "string"]) { $1 })
        XCTAssertEqual(withData.object?["data"], .string("sekrit"))
        addBytes("-s", "binary", data: [0xff, 0x00, 0xfe])
        let binary = try json("find", "-s", "binary", "-g")
        assertShape(binary, Self.genp.merging(["dataBase64": "string"]) { $1 })
        XCTAssertEqual(binary.object?["dataBase64"], .string("/wD+"))
        // --show-ref does not change the JSON shape.
        assertShape(try json("find", "-s", "svc", "--show-ref"), Self.genp)
    }

    func testFindInternetPassword() throws {
        add("--class", "inet", "-s", "h.example", "-a", "me", "-r", "https", "-P", "8443", "-p", "repo.git", secret: "pw")
        let item = try json("find", "--class", "inet", "-s", "h.example")
        assertShape(item, Self.inet)
        XCTAssertEqual(item.object?["port"], .number(8443))
        XCTAssertEqual(item.object?["protocol"], .string("htps"))
        XCTAssertEqual(item.object?["class"], .string("inet"))
        assertShape(try json("find", "--class", "inet", "-s", "h.example", "-g"), Self.inet.merging(["data": "string"]) { $1 })
        // Without a port, the port is the number 0.
        add("--class", "inet", "-s", "noport.example", secret: "pw")
        XCTAssertEqual(try json("find", "--class", "inet", "-s", "noport.example").object?["port"], .number(0))
    }

    func testFindAllIsAnArrayOfItems() throws {
        add("-s", "a", secret: "1")
        add("-s", "b", secret: "2")
        let all = try json("find", "--all")
        let items = try XCTUnwrap(all.array, "an array: \(all)")
        XCTAssertEqual(items.count, 2)
        for item in items { assertShape(item, Self.genp) }
        // One match with --all is still an array.
        let one = try json("find", "-s", "a", "--all")
        XCTAssertEqual(one.array?.count, 1)
        // So is --limit, even --limit 1; -w under --json is the object with its data.
        XCTAssertEqual(try json("find", "-s", "a", "--limit", "1").array?.count, 1)
        XCTAssertEqual(try json("find", "--limit", "5").array?.count, 2)
        let secret = try json("find", "-s", "a", "-w")
        assertShape(secret, Self.genp.merging(["data": "string"]) { $1 })
    }

    // MARK: - dump

    func testDumpIsAnArrayWithStatus() throws {
        add("-s", "a", secret: "1")
        add("--class", "inet", "-s", "h.example", secret: "2")
        add("-s", "afu", "--accessible", "after-first-unlock", secret: "3")
        let dump = try json("dump")
        let items = try XCTUnwrap(dump.array)
        XCTAssertEqual(items.count, 3)
        for item in items {
            let isInet = item.object?["class"] == .string("inet")
            assertShape(item, (isInet ? Self.inet : Self.genp).merging(["status": "string"]) { $1 })
            XCTAssertEqual(item.object?["status"], .string("available"))
        }
        let withData = try XCTUnwrap(try json("dump", "--data").array)
        for item in withData {
            let isInet = item.object?["class"] == .string("inet")
            assertShape(item, (isInet ? Self.inet : Self.genp).merging(["status": "string", "data": "string"]) { $1 })
        }
        // Locked: the when-unlocked items show only what is not sealed.
        ok("lock")
        let locked = try XCTUnwrap(try json("dump").array)
        XCTAssertEqual(locked.count, 3)
        for item in locked {
            if item.object?["accessible"] == .string("after-first-unlock") {
                assertShape(item, Self.genp.merging(["status": "string"]) { $1 })
                XCTAssertEqual(item.object?["status"], .string("available"))
            } else {
                assertShape(item, Self.lockedItem)
                XCTAssertEqual(item.object?["status"], .string("locked"))
            }
        }
        // An empty keychain dumps an empty array.
        ok("-k", "empty", "init", "--no-password")
        XCTAssertEqual(try json("-k", "empty", "dump"), .array([]))
    }

    // MARK: - status and settings

    func assertStatusShape(_ status: TypedJSON, file: StaticString = #filePath, line: UInt = #line) {
        assertShape(status, Self.status, file: file, line: line)
        guard let object = status.object else { return }
        for key in ["whenUnlocked", "afterFirstUnlock"] {
            XCTAssertTrue([.string("locked"), .string("unlocked")].contains(object[key]), "\(key): \(status)", file: file, line: line)
        }
        if let timeout = object["timeout"], timeout.type == "string" {
            XCTAssertEqual(timeout, .string("none"), file: file, line: line)
        }
        if let scoped = object["scopedTo"]?.array {
            XCTAssertTrue(scoped.allSatisfy { $0.type == "string" }, "\(scoped)", file: file, line: line)
        }
        let items = object["items"]?.object ?? [:]
        XCTAssertEqual(Set(items.keys), Set(Self.classNames), file: file, line: line)
        XCTAssertTrue(items.values.allSatisfy { $0.type == "number" }, "\(items)", file: file, line: line)
    }

    func testStatusShape() throws {
        add("-s", "a", secret: "1")
        add("-s", "b", "--accessible", "after-first-unlock", secret: "2")
        // Unlocked, with a session and a countdown.
        unlockForTest(timeout: "300")
        let unlocked = try json("status")
        assertStatusShape(unlocked)
        let object = try XCTUnwrap(unlocked.object)
        XCTAssertEqual(object["keychain"], .string(sandbox.loginKeychain))
        XCTAssertEqual(object["password"], .bool(true))
        XCTAssertEqual(object["whenUnlocked"], .string("unlocked"))
        XCTAssertEqual(object["timeout"], .number(300))
        XCTAssertEqual(object["secondsUntilAutoLock"]?.type, "number")
        XCTAssertEqual(object["session"], .string("dir"))
        XCTAssertEqual(object["failedAttempts"], .number(0))
        XCTAssertEqual(object["scopedTo"], .null)
        XCTAssertEqual(object["items"]?.object?["when-unlocked"], .number(1))
        XCTAssertEqual(object["items"]?.object?["after-first-unlock"], .number(1))

        // Locked: no countdown.
        ok("lock")
        let locked = try json("status")
        assertStatusShape(locked)
        XCTAssertEqual(locked.object?["whenUnlocked"], .string("locked"))
        XCTAssertEqual(locked.object?["secondsUntilAutoLock"], .null)

        // A failed attempt is counted.
        XCTAssertNotEqual(locket(["unlock", "--password-stdin"], input: .text("wrong\n")).status, 0)
        XCTAssertEqual(try json("status").object?["failedAttempts"], .number(1))

        // No auto-lock: "none".
        ok("settings", "--timeout", "none")
        unlockForTest(timeout: "none")
        let never = try json("status")
        assertStatusShape(never)
        XCTAssertEqual(never.object?["timeout"], .string("none"))

        // A keychain without a password: password false, no session.
        ok("-k", "open", "init", "--no-password")
        let open = try json("-k", "open", "status")
        assertStatusShape(open)
        XCTAssertEqual(open.object?["password"], .bool(false))

        // A scoped session (an app's unlock): scopedTo is the app's group list.
        let app = sandbox.root + "/app.json"
        writeFile(app, #"{"application-identifier": "ABCDE12345.com.example.app", "keychain-access-groups": ["ABCDE12345.shared"]}"#)
        ok("lock", "--all")
        unlockForTest(["-e", app])
        let scoped = try json("status")
        assertStatusShape(scoped)
        XCTAssertEqual(scoped.object?["scopedTo"], .array([.string("ABCDE12345.shared"), .string("ABCDE12345.com.example.app")]))
    }

    func testSettingsShape() throws {
        let initial = try json("settings")
        assertShape(initial, ["timeout": ["number", "string"], "presenceReuse": ["number"], "lockOnSleep": ["bool"], "lockOnScreenLock": ["bool"]])
        ok("settings", "--timeout", "120")
        XCTAssertEqual(try json("settings"), .object(["timeout": .number(120), "presenceReuse": .number(0),
                                                      "lockOnSleep": .bool(true), "lockOnScreenLock": .bool(true)]))
        // A longer presence reuse window needs the password at a terminal (AccessControlTerminalTests).
        ok("settings", "--timeout", "none", "--presence-reuse", "0", "--lock-on-sleep", "no")
        XCTAssertEqual(try json("settings"), .object(["timeout": .string("none"), "presenceReuse": .number(0),
                                                      "lockOnSleep": .bool(false), "lockOnScreenLock": .bool(true)]))
    }

    // MARK: - Documentation

    /// The man page's JSON section names every key these tests pin (issue 5, item 4:
    /// "a JSON section in the man page listing every key with its type, for find,
    /// dump, status and errors").
    func testManPageJSONSectionNamesEveryKey() throws {
        let man = try String(contentsOfFile: LocketBinary.repositoryRoot + "/man/locket.1", encoding: .utf8)
        let lines = man.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try XCTUnwrap(lines.firstIndex { $0 == ".SH JSON" }, "the man page has no JSON section")
        let end = lines[(start + 1)...].firstIndex { $0.hasPrefix(".SH ") } ?? lines.endIndex
        let section = lines[start..<end].joined(separator: "\n")
        func documented(_ key: String) -> Bool {
            // In bold, as the section writes keys: `.B key`, `.BR key ,` or `\fBkey\fR`.
            let escaped = NSRegularExpression.escapedPattern(for: key)
            let pattern = #"(^\.BR? "?"# + escaped + #""?( |$))|(\\fB"# + escaped + #"\\f)"#
            guard let regex = try? NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines]) else { return false }
            return regex.firstMatch(in: section, range: NSRange(section.startIndex..., in: section)) != nil
        }
        let groups: [(String, [String])] = [
            ("find (genp)", Self.genp.keys.sorted()),
            ("find (inet)", Self.inet.keys.sorted()),
            ("find -g", ["data", "dataBase64"]),
            ("dump", ["status"]),
            ("status", Self.status.keys.sorted()),
            ("settings", ["timeout"]),
            ("errors", ["error", "status", "message", "hint"]),
        ]
        for (what, keys) in groups {
            let missing = keys.filter { !documented($0) }
            XCTAssertEqual(missing, [], "the JSON section of man/locket.1 does not name these \(what) keys")
        }
    }

    // MARK: - Errors

    /// The error object on stderr: exactly error, status, message (and an optional hint), one line, nothing on stdout.
    func assertJSONError(_ result: RunResult, _ name: String, _ status: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(result.stdout, [], file: file, line: line)
        XCTAssertEqual(result.err.filter { $0 == "\n" }.count, 1, "one line: \(result.err)", file: file, line: line)
        XCTAssertTrue(result.err.hasSuffix("\n"), file: file, line: line)
        XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(result.stderr)), result.err, file: file, line: line)
        let error = try TypedJSON.parse(result.stderr)
        let keys = Set(error.object?.keys.map { $0 } ?? [])
        let shape: [String: String] = keys.contains("hint")
            ? ["error": "string", "status": "number", "message": "string", "hint": "string"]
            : ["error": "string", "status": "number", "message": "string"]
        assertShape(error, shape, file: file, line: line)
        XCTAssertEqual(error.object?["error"], .string(name), file: file, line: line)
        XCTAssertEqual(error.object?["status"], .number(Double(status)), file: file, line: line)
        XCTAssertFalse(result.err.contains("locket: error"), "not also as text", file: file, line: line)
    }

    func testErrorShape() throws {
        let missing = locket("--json", "find", "-s", "missing")
        XCTAssertEqual(missing.status, 44)
        try assertJSONError(missing, "errSecItemNotFound", -25300)
        XCTAssertEqual(try TypedJSON.parse(missing.stderr).object?["message"], .string("the item could not be found"))

        add("-s", "dup", secret: "x")
        let duplicate = locket(["--json", "add", "-s", "dup", "-w"], input: .text("y\n"))
        XCTAssertEqual(duplicate.status, 45)
        try assertJSONError(duplicate, "errSecDuplicateItem", -25299)

        ok("lock")
        let locked = locket("--json", "find", "-s", "dup")
        XCTAssertEqual(locked.status, 36)
        try assertJSONError(locked, "errSecInteractionNotAllowed", -25308)

        let exec = locket("--json", "exec", "--env", "T=dup/", "--", "true")
        XCTAssertEqual(exec.status, 36)
        try assertJSONError(exec, "errSecInteractionNotAllowed", -25308)

        let param = locket("--json", "exec", "--env", "T=bad", "--", "true")
        XCTAssertEqual(param.status, 206)
        try assertJSONError(param, "errSecParam", -50)

        let noKeychain = locket(["find"], environment: ["LOCKET_FORMAT": "json", "LOCKET_KEYCHAIN": "absent"])
        XCTAssertEqual(noKeychain.status, 50)
        try assertJSONError(noKeychain, "errSecNoSuchKeychain", -25294)
    }
}
