import Foundation
import LocketCore
import XCTest

/// Guarded memory that runs out (sodium_malloc returning NULL, here under a
/// small RLIMIT_AS) is errSecAllocate: one line, exit 148 (-108 modulo 256),
/// the keychain unchanged; never a crash (it was a fatalError).
final class EndToEndGuardedMemoryLimitTests: EndToEndCase {
    /// `locket ARGS` under `ulimit -v KIB`, set by sh, which then execs the binary.
    private func limited(_ kib: Int, _ arguments: [String], input: Input) -> RunResult {
        Spawn.run("/bin/sh", ["-c", "ulimit -v \(kib) && exec \"$0\" \"$@\"", binary] + arguments,
                  environment: sandbox.environment, input: input, timeout: Self.timeout)
    }

    func testATenMegabyteSecretBeyondTheLimitIsErrSecAllocateAndNothingIsWritten() throws {
        initKeychain()
        expect(0, "add", "-s", "kept", "-a", "a", "--data-file", "-", input: .bytes([1, 2, 3]))
        // The process's own footprint: the smallest limit, in 2 MiB steps,
        // under which a one-byte add runs (below it the binary cannot start).
        var floor: Int?
        for kib in stride(from: 8 << 10, through: 256 << 10, by: 2 << 10) {
            let probe = limited(kib, ["add", "-U", "-s", "probe", "-a", "a", "--data-file", "-"], input: .bytes([1]))
            if probe.status == 0 { floor = kib; break }
        }
        let base = try XCTUnwrap(floor, "no address-space limit up to 256 MiB let a one-byte add run")
        let before = locket("dump", "--data")
        XCTAssertEqual(before.status, 0, before.summary)

        // 4 MiB above that: reading a 10 MB secret needs a 16 MiB guarded buffer.
        let big = [UInt8](repeating: 0x5a, count: 10_000_000)
        let run = limited(base + (4 << 10), ["add", "-s", "big", "-a", "a", "--data-file", "-"], input: .bytes(big))
        XCTAssertNil(run.signal, "killed by a signal: \(run.summary)")
        XCTAssertEqual(run.status, 148, run.summary)
        XCTAssertEqual(run.stdout, [], run.summary)
        XCTAssertEqual(run.err.split(separator: "\n").count, 1, "one line: \(run.summary)")
        XCTAssertTrue(run.err.hasPrefix("locket: error: ") && run.err.hasSuffix(" (errSecAllocate -108)\n"), run.summary)

        expect(44, "find", "-s", "big", "-a", "a")
        let after = locket("dump", "--data")
        XCTAssertEqual(after.stdout, before.stdout, "the keychain changed")
        XCTAssertEqual(secret("-s", "kept", "-a", "a"), [1, 2, 3])
    }

    /// The password hash's memory (Argon2id's 64 MiB at `--kdf interactive`)
    /// refused by the limit is errSecAllocate too, and `init` leaves no keychain.
    func testAPasswordHashBeyondTheLimitIsErrSecAllocateAndNoKeychainIsMade() throws {
        // `--version` runs under 32 MiB; Argon2id's 64 MiB can't fit in it.
        XCTAssertEqual(limited(32 << 10, ["--version"], input: .devNull).status, 0, "the binary does not start under 32 MiB")
        let run = limited(32 << 10, ["init", "--password-stdin", "--kdf", "interactive"], input: .text("pw\n"))
        XCTAssertNil(run.signal, "killed by a signal: \(run.summary)")
        XCTAssertEqual(run.status, 148, run.summary)
        XCTAssertEqual(run.err.split(separator: "\n").count, 1, "one line: \(run.summary)")
        XCTAssertTrue(run.err.contains("Argon2id needs 64 MiB") && run.err.hasSuffix(" (errSecAllocate -108)\n"), run.summary)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.loginKeychain), "a keychain was left behind")
    }
}
