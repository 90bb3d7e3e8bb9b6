import Foundation
import XCTest

/// The guard of issue 43 (SPEC §11: `find -w`'s instruction count must not
/// grow): the count bench/find-instructions measures (callgrind, a keychain of
/// 50 items, the release binary) may not rise more than 1 % above
/// bench/budget/find-w.instructions. A change that needs more raises the
/// budget in the same commit, and the budget file says who raised it and why.
final class InstructionBudgetTests: EndToEndCase {
    func testALookupStaysWithinItsInstructionBudget() throws {
        guard !binary.contains("/debug/") else {
            throw XCTSkip("\(binary!) is a debug build; the budget is the release build's (set LOCKET_BIN)")
        }
        // The count follows the code paths glibc and libsodium choose by CPU
        // (memset, memcpy, BLAKE2b, Salsa20 each have an AVX2 variant that
        // valgrind offers where the CPU has it): the budget's are those of an
        // x86-64 with AVX2, and another CPU's count can't be held to it.
        let flags = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("flags") }?.split(separator: " ") ?? []
        guard flags.contains("avx2"), flags.contains("erms") else {
            throw XCTSkip("the budget was counted on an x86-64 with AVX2 and ERMS; this CPU's glibc and libsodium take other paths")
        }
        let bash = try SystemTool.require("bash", for: "bench/find-instructions")
        _ = try SystemTool.require("valgrind", for: "counting a lookup's instructions (make test-deps installs it)")
        let root = LocketBinary.repositoryRoot
        let file = root + "/bench/budget/find-w.instructions"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("budget:") }, "\(file) has no 'budget:' line")
        let budget = try XCTUnwrap(Int(line.dropFirst("budget:".count).filter { $0 != "," && $0 != " " }), "\(file): \(line)")

        let result = Spawn.run(bash, [root + "/bench/find-instructions", binary], environment: ["PATH": "/usr/local/bin:/usr/bin:/bin"],
                               input: .devNull, timeout: 300)
        // 2: a tool is missing or the binary is not there, said on stderr.
        if result.status == 2 { throw XCTSkip(result.err.trimmingCharacters(in: .whitespacesAndNewlines)) }
        XCTAssertEqual(result.status, 0, result.summary)
        let count = try XCTUnwrap(Int(String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
                                  result.summary)
        print("find -w: \(count) instructions; budget \(budget)")
        XCTAssertLessThanOrEqual(count * 100, budget * 101,
                                 "find -w ran \(count) instructions, more than 1 % above its budget of \(budget): cut what the lookup "
                                     + "does not need, or raise the budget in \(file) in the same commit, saying who and why")
    }
}
