import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// Support for the entitlements and scoped-session end-to-end tests (issue 4):
// snapshots of everything locket may write, and a reader for session files
// (the entitlements files of the two apps: Apps, in LocketTestSupport).

/// A session file as `SessionStore` writes it: "LKS1", timeout (4), last use
/// (8), key count (1), per key a name length (1), the name and 32 key bytes;
/// then, in a scoped session, the groups and classes it was unlocked for.
struct SessionRecord {
    var keyNames: [String]
    var scopeGroups: [String]?
    var scopeClasses: [String]?
    /// Where the keys end (the scope block, if any, follows).
    var keysEnd: Int

    init?(_ b: [UInt8]) {
        guard b.count >= 17, Array(b[0..<4]) == Array("LKS1".utf8) else { return nil }
        var i = 16
        let count = Int(b[i]); i += 1
        keyNames = []
        for _ in 0..<count {
            guard i < b.count else { return nil }
            let n = Int(b[i]); i += 1
            guard i + n + 32 <= b.count else { return nil }
            keyNames.append(String(decoding: b[i..<i + n], as: UTF8.self))
            i += n + 32
        }
        keysEnd = i
        guard i < b.count else { return }
        func u16() -> Int? {
            guard i + 2 <= b.count else { return nil }
            defer { i += 2 }
            return Int(b[i]) << 8 | Int(b[i + 1])
        }
        guard let groupCount = u16() else { return nil }
        var groups: [String] = []
        for _ in 0..<groupCount {
            guard let n = u16(), i + n <= b.count else { return nil }
            groups.append(String(decoding: b[i..<i + n], as: UTF8.self)); i += n
        }
        guard i < b.count else { return nil }
        let classCount = Int(b[i]); i += 1
        var classes: [String] = []
        for _ in 0..<classCount {
            guard i < b.count else { return nil }
            let n = Int(b[i]); i += 1
            guard i + n <= b.count else { return nil }
            classes.append(String(decoding: b[i..<i + n], as: UTF8.self)); i += n
        }
        guard i == b.count else { return nil }
        scopeGroups = groups
        scopeClasses = classes
    }

    /// Encodes a scope block for `groups` and `classes` (to forge one in tests).
    static func scopeBlock(groups: [String], classes: [String]) -> [UInt8] {
        var out: [UInt8] = [UInt8(groups.count >> 8), UInt8(groups.count & 0xff)]
        for group in groups {
            let bytes = Array(group.utf8)
            out += [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] + bytes
        }
        out.append(UInt8(classes.count))
        for name in classes.sorted() { out += [UInt8(name.utf8.count)] + Array(name.utf8) }
        return out
    }
}

extension EndToEndCase {
    /// Writes an entitlements file into the sandbox with `mode`; returns its path.
    @discardableResult
    func writeEntitlements(_ name: String, _ text: String, mode: mode_t = 0o644,
                           file: StaticString = #filePath, line: UInt = #line) -> String {
        writeEntitlementBytes(name, Array(text.utf8), mode: mode, file: file, line: line)
    }

    @discardableResult
    func writeEntitlementBytes(_ name: String, _ bytes: [UInt8], mode: mode_t = 0o644,
                               file: StaticString = #filePath, line: UInt = #line) -> String {
        let path = sandbox.root + "/" + name
        XCTAssertNoThrow(try Data(bytes).write(to: URL(fileURLWithPath: path)), file: file, line: line)
        XCTAssertEqual(chmod(path, mode), 0, "chmod \(path)", file: file, line: line)
        return path
    }

    /// App A's and app B's entitlements files in the sandbox.
    func writeApps() -> (a: String, b: String) {
        (writeEntitlements("WaffleVarnisher.entitlements", Apps.xcodeA), writeEntitlements("other.json", Apps.jsonB))
    }

    /// The session directory the sandbox's `LOCKET_SESSION=dir` uses.
    var sessionDirectory: String { sandbox.runtimeDir + "/locket" }

    /// The session files, by name.
    func sessionFileBytes() -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: sessionDirectory)) ?? [] {
            out[name] = (try? Data(contentsOf: URL(fileURLWithPath: sessionDirectory + "/" + name))).map { Array($0) }
        }
        return out
    }

    /// Every file locket keeps under the sandbox's data, state and runtime
    /// directories, with its bytes and modification time: equal snapshots
    /// mean nothing was written, and no session was even read (reading one
    /// touches it to extend its timeout).
    /// Without `times`, only kinds, modes and bytes count (SQLite may rewrite
    /// identical pages when a connection closes).
    func fileSnapshot(times: Bool = true) -> [String: String] {
        var out: [String: String] = [:]
        for base in [sandbox.dataHome, sandbox.stateHome, sandbox.runtimeDir] {
            guard let walker = FileManager.default.enumerator(atPath: base) else { continue }
            while let relative = walker.nextObject() as? String {
                let path = base + "/" + relative
                var st = stat()
                guard lstat(path, &st) == 0 else { continue }
                let kind = st.st_mode & S_IFMT == S_IFDIR ? "dir" : "file"
                let bytes = kind == "file" ? (try? Data(contentsOf: URL(fileURLWithPath: path))).map { Array($0) } ?? [] : []
                let mtime = times ? "mtime \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec) " : ""
                out[path] = "\(kind) mode \(String(st.st_mode & 0o7777, radix: 8)) \(mtime)"
                    + "size \(bytes.count) hash \(bytes.reduce(UInt64(14_695_981_039_346_656_037)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 })"
            }
        }
        return out
    }

    /// Asserts two snapshots are equal, naming what changed.
    func assertUnchanged(_ before: [String: String], _ after: [String: String], _ what: String,
                         file: StaticString = #filePath, line: UInt = #line) {
        guard before != after else { return }
        let changed = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
        XCTFail("\(what) changed files: " + changed.map { "\($0): \(before[$0] ?? "absent") -> \(after[$0] ?? "absent")" }
            .joined(separator: "; "), file: file, line: line)
    }

    /// `locket --json ARGS` parsed as one object (asserting exit 0).
    func runJSONObject(_ arguments: [String], environment: [String: String] = [:],
                    file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        let result = locket(["--json"] + arguments, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        return (try? result.jsonObject(file: file, line: line)) ?? [:]
    }

    /// `locket --json ARGS` parsed as an array of objects; [] on failure.
    func runJSONArray(_ arguments: [String], environment: [String: String] = [:],
                   file: StaticString = #filePath, line: UInt = #line) -> [[String: Any]] {
        let result = locket(["--json"] + arguments, environment: environment, file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        return (try? result.jsonArray(file: file, line: line)) ?? []
    }

    /// Asserts `result` is the errSecMissingEntitlement failure (exit 30).
    func assertMissingEntitlement(_ result: RunResult, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 30, result.summary, file: file, line: line)
        assertError(result, "errSecMissingEntitlement", -34018, file: file, line: line)
    }
}
