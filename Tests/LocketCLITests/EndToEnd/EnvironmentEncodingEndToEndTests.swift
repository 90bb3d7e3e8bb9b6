import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 11 item 10: a variable locket interprets whose value is not valid
/// UTF-8 is refused with errSecParam naming it, as arguments already are;
/// it used to be "repaired" (`x\xff` became `x\u{FFFD}`) and a keychain made
/// under a name nobody typed. Variables locket does not interpret are none
/// of its business: `exec` hands them on byte for byte.
final class EnvironmentEncodingEndToEndTests: EndToEndCase {
    /// Runs with the sandbox's environment plus `extra` variables with raw
    /// values (which replace same-named ones) and raw `entries`.
    private func run(_ arguments: [String], raw extra: [(String, [UInt8])], entries more: [[UInt8]] = [], unset: [String] = [],
                     input: Input = .devNull, file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let replaced = Set(extra.map(\.0) + unset)
        var entries = sandbox.environment.filter { !replaced.contains($0.key) }.sorted { $0.key < $1.key }
            .map { Array("\($0.key)=\($0.value)".utf8) }
        entries += extra.map { Array("\($0.0)=".utf8) + $0.1 } + more
        let result = Spawn.run(binary, arguments, environmentEntries: entries, input: input, timeout: Self.timeout)
        XCTAssertFalse(result.timedOut, result.summary, file: file, line: line)
        return result
    }

    /// Every path under the sandbox.
    private func tree() -> Set<String> {
        Set(FileManager.default.enumerator(atPath: sandbox.root)?.compactMap { $0 as? String } ?? [])
    }

    private func assertRefused(_ result: RunResult, naming variable: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 206, result.summary, file: file, line: line)
        XCTAssertEqual(result.errLines.first, "locket: error: \(variable) is not valid UTF-8 (errSecParam -50)", result.summary, file: file, line: line)
        XCTAssertEqual(result.stdout, [], file: file, line: line)
    }

    func testInvalidUTF8InAVariableLocketReadsIsRefusedNamingIt() {
        let root = Array(sandbox.root.utf8)
        let bad = root + Array("/x".utf8) + [0xff]
        let password = Input.text(Self.password + "\n")
        // Each variable with a command that reads it; nothing may be created anywhere.
        let cases: [(variable: String, arguments: [String], unset: [String])] = [
            ("XDG_DATA_HOME", ["init", "--password-stdin"], []),
            ("XDG_STATE_HOME", ["init", "--password-stdin"], []),
            ("HOME", ["init", "--password-stdin"], ["XDG_DATA_HOME"]),
            ("LOCKET_KEYCHAIN", ["init", "--password-stdin"], []),
            ("LOCKET_DEVICE_KEY", ["init", "--password-stdin"], []),
            ("LOCKET_ENTITLEMENTS", ["find", "-s", "svc"], []),
            ("LOCKET_FORMAT", ["find", "-s", "svc"], []),
        ]
        for c in cases {
            let before = tree()
            let result = run(c.arguments, raw: [(c.variable, bad)], unset: c.unset, input: password)
            assertRefused(result, naming: c.variable)
            XCTAssertEqual(tree(), before, "\(c.variable): nothing may be created")
        }
        XCTAssertFalse(tree().contains { $0.contains("\u{FFFD}") }, "no name with a replacement character: \(tree())")

        // Read once a keychain exists: the session's variables.
        initKeychain()
        assertRefused(run(["find", "-s", "svc"], raw: [("XDG_RUNTIME_DIR", bad)]), naming: "XDG_RUNTIME_DIR")
        assertRefused(run(["find", "-s", "svc"], raw: [("LOCKET_SESSION", [0x64, 0x69, 0x72, 0xc0])]), naming: "LOCKET_SESSION")
        // Valid UTF-8 that is not ASCII is a name like any other.
        let accented = run(["-k", sandbox.root + "/caf\u{e9}.keychain", "init", "--no-password"], raw: [])
        XCTAssertEqual(accented.status, 0, accented.summary)
        let viaVariable = run(["find", "-s", "svc"], raw: [("LOCKET_KEYCHAIN", Array((sandbox.root + "/caf\u{e9}.keychain").utf8))])
        XCTAssertEqual(viaVariable.status, 44, viaVariable.summary)
    }

    /// `exec` passes every variable it does not resolve to the command byte
    /// for byte, including values and names that are not UTF-8.
    func testExecHandsOnVariablesThatAreNotUTF8ByteForByte() {
        let value: [UInt8] = [0x61, 0xff, 0xfe, 0x62, 0xc3]
        let oddName: [UInt8] = [0x4e, 0xe9, 0x4d, 0x3d, 0x76, 0xe9]
        let result = run(["exec", "--", "/usr/bin/env"], raw: [("LOCKET_BYTES", value)], entries: [oddName])
        XCTAssertEqual(result.status, 0, result.summary)
        let lines = result.stdout.split(separator: 0x0a).map(Array.init)
        XCTAssertTrue(lines.contains(Array("LOCKET_BYTES=".utf8) + value), "the value must arrive unchanged: \(result.out)")
        XCTAssertTrue(lines.contains(oddName), "a name that is not UTF-8 must arrive unchanged: \(result.out)")
        XCTAssertFalse(Self.contains(result.stdout, [0xef, 0xbf, 0xbd]), "nothing may be replaced by U+FFFD: \(result.out)")
    }

    /// A reference in the environment (`NAME=locket:REF`) is interpreted, so its bytes must be text.
    func testExecRefusesAReferenceThatIsNotUTF8() {
        initKeychain()
        add("-s", "svc", "-a", "me")
        let result = run(["exec", "--", "/usr/bin/env"], raw: [("TOKEN", Array("locket:svc/m".utf8) + [0xe9])])
        assertRefused(result, naming: "TOKEN")
    }
}
