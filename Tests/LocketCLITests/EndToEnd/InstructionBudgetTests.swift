import Foundation
import XCTest

/// The guard of issue 43 (SPEC §11: `find -w`'s instruction count must not
/// grow): the count bench/find-instructions measures (callgrind, a keychain of
/// 50 items, the release binary) may not rise more than 1 % above
/// bench/budget/find-w.instructions. A change that needs more raises the
/// budget in the same commit, and the budget file says who raised it and why.
final class InstructionBudgetTests: EndToEndCase {
    /// One callgrind run of the lookup for the class's tests: its count and
    /// the functions it ran (callgrind's output, kept in the sandbox).
    /// XCTest runs a class's tests one after another, on one thread.
    nonisolated(unsafe) private static var measured: (count: Int, functions: Set<String>)?

    private func measure() throws -> (count: Int, functions: Set<String>) {
        if let measured = Self.measured { return measured }
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
        let output = sandbox.root + "/callgrind.out"
        let result = Spawn.run(bash, [LocketBinary.repositoryRoot + "/bench/find-instructions", binary],
                               environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "CALLGRIND_OUT": output], input: .devNull, timeout: 300)
        // 2: a tool is missing or the binary is not there, said on stderr.
        if result.status == 2 { throw XCTSkip(result.err.trimmingCharacters(in: .whitespacesAndNewlines)) }
        XCTAssertEqual(result.status, 0, result.summary)
        let count = try XCTUnwrap(Int(String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
                                  result.summary)
        let measured = (count, try Self.functions(ranIn: output))
        Self.measured = measured
        return measured
    }

    /// The names of the functions that ran, from callgrind's output: each
    /// `fn=(N) name` block is a function that executed instructions (a name
    /// is given once, the first time its number appears, as fn= or cfn=).
    /// Recursion suffixes ('2) dropped, as bench/startup-order does.
    static func functions(ranIn path: String) throws -> Set<String> {
        var names: [Substring: Substring] = [:]
        var ran: Set<String> = []
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let isFunction = line.hasPrefix("fn=(")
            guard isFunction || line.hasPrefix("cfn=("), let close = line.firstIndex(of: ")") else { continue }
            let id = line[line.index(after: line.firstIndex(of: "(")!)..<close]
            let rest = line[line.index(after: close)...]
            if rest.hasPrefix(" ") { names[id] = rest.dropFirst() }
            guard isFunction, var name = names[id] else { continue }
            if let quote = name.lastIndex(of: "'"), name[name.index(after: quote)...].allSatisfy(\.isNumber) { name = name[..<quote] }
            ran.insert(String(name))
        }
        return ran
    }

    func testALookupStaysWithinItsInstructionBudget() throws {
        let root = LocketBinary.repositoryRoot
        let file = root + "/bench/budget/find-w.instructions"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("budget:") }, "\(file) has no 'budget:' line")
        let budget = try XCTUnwrap(Int(line.dropFirst("budget:".count).filter { $0 != "," && $0 != " " }), "\(file): \(line)")
        let count = try measure().count
        print("find -w: \(count) instructions; budget \(budget)")
        XCTAssertLessThanOrEqual(count * 100, budget * 101,
                                 "find -w ran \(count) instructions, more than 1 % above its budget of \(budget): cut what the lookup "
                                     + "does not need, or raise the budget in \(file) in the same commit, saying who and why")
    }

    /// link/startup.order packs the code a lookup runs at the start of
    /// .text (bench/README.md "Page faults of a lookup"); a function it does
    /// not name lands wherever the linker puts it, and nothing else notices
    /// when code moves (a rename, a new specialization): after engine-roles'
    /// renames 113 of a lookup's functions were missing, ~10 page faults.
    /// Fails when more than 5 % of the named functions the lookup ran (C++
    /// names, which callgrind demangles, and the entry stub's aside) are not
    /// in the file: `bench/startup-order`, then `make build`, makes it anew.
    func testTheStartupOrderNamesTheFunctionsALookupRuns() throws {
        let ran = try measure().functions
        let file = LocketBinary.repositoryRoot + "/link/startup.order"
        let ordered = Set(try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init))
        // A symbol's name, as the order file holds it (callgrind's demangled C++ names have spaces, colons, parentheses).
        func isSymbol(_ name: String) -> Bool {
            guard let first = name.unicodeScalars.first, first == "_" || first == "$" || (first.isASCII && first.properties.isAlphabetic)
            else { return false }
            return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_.$".unicodeScalars.contains($0)) }
        }
        let named = ran.filter { isSymbol($0) && !$0.hasPrefix("locket_entry") }
        let missing = named.subtracting(ordered).sorted()
        print("link/startup.order: \(missing.count) of the \(named.count) functions find -w ran are not in it")
        XCTAssertGreaterThan(named.count, 500, "callgrind named too few functions: \(named.count)")
        XCTAssertLessThanOrEqual(missing.count * 100, named.count * 5,
                                 "\(missing.count) of the \(named.count) functions find -w ran are not in \(file) (first: "
                                     + "\(missing.prefix(5).joined(separator: ", "))): run bench/startup-order, then make build")
    }
}
