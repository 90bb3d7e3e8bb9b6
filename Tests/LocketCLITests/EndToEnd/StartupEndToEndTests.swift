import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// What the release binary's start-up costs depends on (SPEC §11,
/// bench/README.md "Start-up" and "Large folios"): a static executable,
/// without the standard library's regex engine, its common code advised into
/// large folios before anything runs, and one guarded region for a lookup's
/// secrets.
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
        guard result.status == 0, !result.stdout.isEmpty else { throw XCTSkip("\(path) has no symbol table (stripped)") }
        let regex = ByteSearch.lines(of: result.stdout, containing: ["17_StringProcessing", "12_RegexParser"])
        XCTAssertEqual(regex.count, 0, "linked from _StringProcessing: \(regex.prefix(5))")
    }

    /// The Swift runtime's start-up as the release build trims it
    /// (Sources/CLocketSystem/runtime.c): argv is kept from glibc's call of
    /// the constructors instead of searched for through /proc/self/maps, and
    /// the backtracer, which looked for a swift-backtrace program beside the
    /// executable and asked whether stdout and stderr are terminals, is not
    /// linked. The arguments still reach the parser whole.
    func testTheRuntimeReadsNeitherItsMapsNorTheBacktracer() throws {
        let path = try releaseBinary()
        let strace = try SystemTool.require("strace", for: "watching the release binary's start-up")
        let log = sandbox.home + "/strace-runtime.log"
        defer { unlink(log) }
        let result = Spawn.run(strace, ["-qq", "-o", log, path, "find", "-s", "two words", "--no-such-option-43"],
                               environment: sandbox.environment, input: .devNull, timeout: Self.timeout)
        XCTAssertEqual(result.status, 2, result.summary)
        XCTAssertTrue(result.err.contains("--no-such-option-43"), result.summary)
        let calls = try String(contentsOfFile: log, encoding: .utf8)
        XCTAssertFalse(calls.contains("/proc/self/maps"), calls)
        XCTAssertFalse(calls.contains("swift-backtrace") || calls.contains("libexec/swift"), calls)
        XCTAssertFalse(calls.contains("TCGETS"), "nothing asks whether stdout is a terminal before a command does: \(calls)")

        let nm = try SystemTool.require("nm", for: "reading the release binary's symbols")
        let listing = Spawn.run(nm, [path], environment: [:], input: .devNull, timeout: 60)
        guard listing.status == 0, !listing.stdout.isEmpty else { throw XCTSkip("\(path) has no symbol table (stripped)") }
        XCTAssertEqual(ByteSearch.offsets(of: "_swift_spawnBacktracer", in: listing.stdout), [], "the backtracer is linked")
        XCTAssertEqual(ByteSearch.offsets(of: "argvGrabber", in: listing.stdout), [], "CommandLine.cpp's maps reader is linked")
    }

    /// The argv the lean runtime keeps from glibc (Sources/CLocketSystem/runtime.c)
    /// is the process's, byte for byte and in place: spaces kept, an empty
    /// argument counted where it stands, and bytes that are not UTF-8
    /// refused by CLI.runProcess naming their place. (No Swift fatal error
    /// is reachable from locket's input: the release build's preconditions
    /// trap without a message, and locket calls no fatalError.)
    func testTheLeanRuntimeHandsOverEveryArgumentWhole() throws {
        let path = try releaseBinary()
        initKeychain()
        add("-s", " two  words ", "-a", "", "-l", "spaced", secret: "found")
        XCTAssertEqual(expect(0, "find", "-s", " two  words ", "-a", "", "-w").out, "found\n")
        XCTAssertTrue(expect(0, "find", "-l", "spaced").out.contains("service:  two  words \n"))
        expect(44, "find", "-s", "two words", "-a", "")

        // Argument 6 of `locket find -s x -a '' BYTES`: the empty one is counted.
        let shell = try SystemTool.require("sh", for: "passing an argument that is not UTF-8")
        let result = Spawn.run(shell, ["-c", #"exec "$0" find -s x -a '' "$(printf 'caf\351')""#, path],
                               environment: sandbox.environment, input: .devNull, timeout: Self.timeout)
        XCTAssertEqual(result.status, 206, result.summary)
        XCTAssertEqual(result.errLines, ["locket: error: argument 6 is not valid UTF-8 (errSecParam -50)"], result.summary)
        XCTAssertEqual(result.stdout, [])
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

    /// The entry stub (Sources/CLocketSystem/entry.c) has to advise the hot
    /// code before its first fault, and that code has to start a 2 MiB folio
    /// of its own: a range read in small folios stays small until evicted.
    func testHotCodeIsAdvisedIntoLargeFoliosBeforeAnythingRuns() throws {
        #if !arch(x86_64)
        throw XCTSkip("the entry stub is x86-64 only (Sources/CLocketSystem/entry.c)")
        #endif
        let path = try releaseBinary()
        let elf = try XCTUnwrap(FileManager.default.contents(atPath: path).map { [UInt8]($0) })
        func integer(_ offset: Int, _ size: Int) -> Int {
            (0..<size).reduce(0) { $0 | Int(elf[offset + $1]) << (8 * $1) }
        }
        let nm = try SystemTool.require("nm", for: "reading the release binary's symbols")
        let listing = Spawn.run(nm, [path], environment: [:], input: .devNull, timeout: 60)
        guard listing.status == 0, !listing.stdout.isEmpty else { throw XCTSkip("\(path) has no symbol table (stripped)") }
        var symbols: [String: Int] = [:]
        for line in ByteSearch.lines(of: listing.stdout, containing: ["locket_hot_text", "locket_entry"]) {
            let fields = line.split(separator: " ")
            if fields.count == 3, let address = Int(fields[0], radix: 16) { symbols[String(fields[2])] = address }
        }
        let (hot, hotEnd, entry) = (try XCTUnwrap(symbols["locket_hot_text"]), try XCTUnwrap(symbols["locket_hot_text_end"]),
                                    try XCTUnwrap(symbols["locket_entry"]))
        let folio = 2 << 20
        let advisedEnd = (hotEnd + folio - 1) / folio * folio
        XCTAssertEqual(integer(24, 8), entry, "the ELF entry point is not locket_entry")
        XCTAssertEqual(hot % folio, 0, "locket_hot_text is not 2 MiB aligned in memory")
        XCTAssertGreaterThan(hotEnd, hot, "link/startup.order does not end with locket_hot_text_end")
        XCTAssertFalse((hot..<advisedEnd).contains(entry), "the entry stub's own fault would read hot code in small folios")

        // The file offset of the hot code: its segment's offset plus its place in it.
        let (programHeaders, entrySize, count) = (integer(32, 8), integer(54, 2), integer(56, 2))
        let offsets = (0..<count).map { programHeaders + $0 * entrySize }.compactMap { header -> Int? in
            let (type, offset, address, size) = (integer(header, 4), integer(header + 8, 8), integer(header + 16, 8), integer(header + 32, 8))
            return type == 1 && (address..<address + size).contains(hot) ? offset + hot - address : nil
        }
        XCTAssertEqual(offsets.count, 1)
        XCTAssertEqual((offsets.first ?? 1) % folio, 0, "the hot code does not start a 2 MiB folio of the file")

        // Nothing runs before the advice: the first two system calls after execve.
        let strace = try SystemTool.require("strace", for: "watching the release binary's first system calls")
        let log = sandbox.home + "/strace-entry.log"
        defer { unlink(log) }
        let result = Spawn.run(strace, ["-qq", "-o", log, path, "--version"], environment: sandbox.environment, input: .devNull, timeout: Self.timeout)
        XCTAssertEqual(result.status, 0, result.summary)
        let calls = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        let range = "madvise(0x\(String(hot, radix: 16)), \(advisedEnd - hot), "
        XCTAssertGreaterThan(calls.count, 3, "\(calls)")
        guard calls.count > 3 else { return }
        XCTAssertTrue(calls[0].hasPrefix("execve("), calls[0])
        XCTAssertTrue(calls[1].hasPrefix(range + "MADV_RANDOM)"), calls[1])
        XCTAssertTrue(calls[2].hasPrefix(range + "MADV_HUGEPAGE)"), calls[2])

        // The zero-filled tail of the data (.bss) is populated in one call
        // before glibc's start-up touches it (a fault a page otherwise).
        let page = 4096
        let tails = (0..<count).map { programHeaders + $0 * entrySize }.compactMap { header -> String? in
            let (type, flags, address) = (integer(header, 4), integer(header + 4, 4), integer(header + 16, 8))
            let (start, end) = ((address + integer(header + 32, 8) + page - 1) / page * page, (address + integer(header + 40, 8) + page - 1) / page * page)
            return type == 1 && flags & 2 != 0 && end > start ? "madvise(0x\(String(start, radix: 16)), \(end - start), MADV_POPULATE_WRITE) = 0" : nil
        }
        XCTAssertFalse(tails.isEmpty, "no writable segment with a zero-filled tail")
        let entryCalls = calls.dropFirst().prefix { $0.hasPrefix("madvise(") }
        for tail in tails { XCTAssertTrue(entryCalls.contains(tail), "\(tail) is not among the entry's calls: \(Array(entryCalls))") }
    }

    /// libcrypto's CPU probe runs at its first use, not at every start-up
    /// (Sources/CLocketSystem/crypto_probe.c): read at the process's exit,
    /// its capability vector is empty after `--version` and filled after a
    /// P-256 key is made, so key commands still get the accelerated code.
    func testLibcryptoProbesTheCPUOnlyWhenUsed() throws {
        #if !arch(x86_64)
        throw XCTSkip("the capability vector read here is libcrypto's x86 one")
        #endif
        let path = try releaseBinary()
        let python = try SystemTool.require("python3", for: "reading the release binary's memory at exit")
        let nm = try SystemTool.require("nm", for: "reading the release binary's symbols")
        let listing = Spawn.run(nm, [path], environment: [:], input: .devNull, timeout: 60)
        let line = ByteSearch.lines(of: listing.stdout, containing: [" OPENSSL_ia32cap_P"]).first { $0.hasSuffix(" OPENSSL_ia32cap_P") }
        guard let address = line?.split(separator: " ").first.map(String.init) else { throw XCTSkip("\(path) has no symbol table (stripped)") }
        // Stops the command at its exit (PTRACE_O_TRACEEXIT), memory still
        // mapped, and prints the vector's 16 bytes in hex.
        let script = """
            import ctypes, os, signal, sys
            libc = ctypes.CDLL(None, use_errno=True)
            libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
            pid = os.fork()
            if pid == 0:
                os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
                libc.ptrace(0, 0, None, None)
                os.execv(sys.argv[2], sys.argv[2:])
            os.waitpid(pid, 0)
            libc.ptrace(0x4200, pid, None, ctypes.c_void_p(0x40))
            libc.ptrace(7, pid, None, None)
            while True:
                _, status = os.waitpid(pid, 0)
                if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                    break
                sig = os.WSTOPSIG(status)
                if sig == signal.SIGTRAP and status >> 16 == 6:
                    with open(f"/proc/{pid}/mem", "rb") as mem:
                        mem.seek(int(sys.argv[1], 16))
                        print(mem.read(16).hex())
                    sig = 0
                libc.ptrace(7, pid, None, ctypes.c_void_p(0 if sig == signal.SIGTRAP else sig))
            sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
            """
        func capabilities(_ arguments: [String]) -> String {
            let result = Spawn.run(python, ["-c", script, address, path] + arguments, environment: sandbox.environment,
                                   input: .devNull, timeout: Self.timeout)
            XCTAssertEqual(result.status, 0, result.summary)
            return String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        initKeychain()
        XCTAssertEqual(capabilities(["--version"]), String(repeating: "0", count: 32), "libcrypto probed the CPU at start-up")
        let probed = capabilities(["key", "generate", "--type", "p256", "--label", "probe"])
        XCTAssertEqual(probed.count, 32)
        XCTAssertNotEqual(probed, String(repeating: "0", count: 32), "a P-256 key was made without libcrypto's CPU probe")
    }
}
