import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// Support for the issue-5 end-to-end tests (exec, credential helper, git
// clone, JSON contract, completion): system tools and a strict JSON type
// reader. A process left running in the background is LocketTestSupport's
// BackgroundProcess.

/// System programs the tests drive (git, python3, shells).
enum SystemTool {
    /// The first executable `name` in the usual directories or the test's PATH.
    static func path(_ name: String) -> String? {
        var directories = ["/usr/local/bin", "/usr/bin", "/bin"]
        if let path = ProcessInfo.processInfo.environment["PATH"] {
            directories += path.split(separator: ":").map(String.init)
        }
        for directory in directories {
            let candidate = directory + "/" + name
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// The path of `name`, or XCTSkip naming what is missing.
    static func require(_ name: String, for purpose: String) throws -> String {
        guard let path = path(name) else {
            throw XCTSkip("\(name) is not installed: \(purpose) needs it")
        }
        return path
    }
}

/// A JSON value with its exact type: the strict decoder keeps `true` and `1`
/// (and `"1"`) apart, which JSONSerialization's NSNumber does not.
indirect enum TypedJSON: Decodable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([TypedJSON])
    case object([String: TypedJSON])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null; return }
        if let value = try? container.decode(Bool.self) { self = .bool(value); return }
        if let value = try? container.decode(Double.self) { self = .number(value); return }
        if let value = try? container.decode(String.self) { self = .string(value); return }
        if let value = try? container.decode([TypedJSON].self) { self = .array(value); return }
        self = .object(try container.decode([String: TypedJSON].self))
    }

    static func parse(_ bytes: [UInt8]) throws -> TypedJSON {
        try JSONDecoder().decode(TypedJSON.self, from: Data(bytes))
    }

    /// The JSON type's name: null, bool, number, string, array, object.
    var type: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    var object: [String: TypedJSON]? { if case .object(let o) = self { o } else { nil } }
    var array: [TypedJSON]? { if case .array(let a) = self { a } else { nil } }
    var string: String? { if case .string(let s) = self { s } else { nil } }
    var number: Double? { if case .number(let n) = self { n } else { nil } }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): String(b)
        case .number(let n): String(n)
        case .string(let s): "\"\(s)\""
        case .array(let a): "[" + a.map(\.description).joined(separator: ",") + "]"
        case .object(let o): "{" + o.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        }
    }
}

extension EndToEndCase {
    /// Writes `text` to `path` (mode `mode`).
    func writeFile(_ path: String, _ text: String, mode: mode_t = 0o644, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(text.utf8),
                                                     attributes: [.posixPermissions: Int(mode)]),
                      "cannot write \(path)", file: file, line: line)
    }

    /// Whether a file exists (without following a final symlink).
    func fileExists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// A file's contents as text, or nil.
    func readText(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `locket [ARGS] unlock --password-stdin [--timeout T]`; asserts success and silence.
    func unlockForTest(_ arguments: [String] = [], timeout: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
        let args = arguments + ["unlock", "--password-stdin"] + (timeout.map { ["--timeout", $0] } ?? [])
        let result = locket(args, input: .text(Self.password + "\n"), file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", result.summary, file: file, line: line)
    }

    /// Starts `locket ARGS` in the background in the sandbox.
    func startLocket(_ arguments: [String], environment extra: [String: String] = [:],
                     file: StaticString = #filePath, line: UInt = #line) throws -> BackgroundProcess {
        var environment = sandbox.environment
        for (name, value) in extra { environment[name] = value }
        return try BackgroundProcess(binary, arguments, environment: environment)
    }

    /// Runs a system program (not locket) with the sandbox environment plus `extra`; killed after `timeout`.
    func runTool(_ executable: String, _ arguments: [String], input: Input = .devNull,
                 environment extra: [String: String] = [:], timeout: Double = 10,
                 file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        var environment = sandbox.environment
        for (name, value) in extra { environment[name] = value }
        let result = Spawn.run(executable, arguments, environment: environment, input: input, timeout: timeout)
        if result.timedOut {
            XCTFail("\(executable) timed out after \(timeout) s: \(result.summary)", file: file, line: line)
        }
        return result
    }
}
