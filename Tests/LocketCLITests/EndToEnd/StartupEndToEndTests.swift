import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// What the release binary's start-up costs depends on (SPEC §11,
/// bench/README.md "Start-up"): a static executable, without the standard
/// library's regex engine, and one guarded region for a lookup's secrets.
final class StartupEndToEndTests: EndToEndCase {
    /// The debug build is dynamically linked and unordered: only the release build is pinned.
    private func releaseBinary() throws -> String {
        guard !binary.contains("/debug/") else { throw XCTSkip("\(binary!) is a debug build; set LOCKET_BIN to the release build") }
        return binary
    }

    func testReleaseBinaryIsStaticWithoutTheRegexEngine() throws {
        let path = try releaseBinary()
        let elf = try XCTUnwrap(FileManager.default.contents(atPath: path).map { [UInt8]($0) })
        func integer(_ offset: Int, _ size: Int) -> Int {
            (0..<size).reduce(0) { $0 | Int(elf[offset + $1]) << (8 * $1) }
        }
        XCTAssertEqual(Array(elf.prefix(4)), [0x7f, 0x45, 0x4c, 0x46], "not an ELF file")
        let (programHeaders, entrySize, count) = (integer(32, 8), integer(54, 2), integer(56, 2))
        let types = (0..<count).map { integer(programHeaders + $0 * entrySize, 4) }
        XCTAssertFalse(types.contains(3), "the release binary asks for a dynamic loader (PT_INTERP)")

        // Any one call into _StringProcessing (firstRange(of:), a string's
        // contains(_:), split with a string separator) links it and the regex
        // parser: 1.5 MB more to read on a cold start.
        let nm = try SystemTool.require("nm", for: "reading the release binary's symbols")
        let result = Spawn.run(nm, [path], environment: [:], input: .devNull, timeout: 60)
        let symbols = String(decoding: result.stdout, as: UTF8.self)
        guard result.status == 0, !symbols.isEmpty else { throw XCTSkip("\(path) has no symbol table (stripped)") }
        let regex = symbols.split(separator: "\n").filter { $0.contains("17_StringProcessing") || $0.contains("12_RegexParser") }
        XCTAssertEqual(regex.count, 0, "linked from _StringProcessing: \(regex.prefix(5))")
    }

    /// A lookup's keys and opened record share one guarded region: each more
    /// costs an mmap, three mprotect, a madvise and an mlock.
    func testLookupLocksOneGuardedRegion() throws {
        let strace = try SystemTool.require("strace", for: "counting a lookup's guarded regions")
        initKeychain()
        add("-s", "svc", "-a", "acct", secret: "secret-one")
        let log = sandbox.home + "/strace.log"
        defer { unlink(log) }
        let result = Spawn.run(strace, ["-f", "-qq", "-e", "trace=mlock", "-o", log, binary, "find", "-s", "svc", "-a", "acct", "-w"],
                               environment: sandbox.environment, input: .devNull, timeout: Self.timeout)
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(String(decoding: result.stdout, as: UTF8.self), "secret-one\n")
        let calls = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").filter { $0.contains("mlock(") }
        XCTAssertEqual(calls.count, 1, "\(calls)")
    }
}
