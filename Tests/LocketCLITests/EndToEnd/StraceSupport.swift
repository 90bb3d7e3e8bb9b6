import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// What a command asked the kernel for, counted with strace where a test
// needs a count that a loaded machine can't change (a wall-clock bound can
// fail there): the sleeps it requested, the reads of the keychain's file.
// Without strace (make test-deps installs it) each gives nil and the caller
// keeps its other checks.
extension EndToEndCase {
    /// Runs `locket ARGS` under strace, if installed: the result and the total of
    /// the sleeps it asked the kernel for (nil without strace).
    func sleeps(_ arguments: [String], input: Input = .devNull) throws -> (RunResult, Double?) {
        guard let strace = SystemTool.path("strace") else { return (locket(arguments, input: input), nil) }
        let log = sandbox.home + "/sleeps.log"
        defer { unlink(log) }
        let result = Spawn.run(strace, ["-f", "-qq", "-e", "trace=nanosleep,clock_nanosleep", "-o", log, binary] + arguments,
                               environment: sandbox.environment, input: input, timeout: Self.timeout)
        // clock_nanosleep(CLOCK_REALTIME, 0, {tv_sec=0, tv_nsec=999000000}, NULL) = 0
        var total = 0.0
        for line in (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n") ?? [] {
            guard let sec = line.firstRange(of: "tv_sec="), let nsec = line.firstRange(of: "tv_nsec=") else { continue }
            let seconds = Double(line[sec.upperBound...].prefix { $0.isNumber }) ?? 0
            let nanoseconds = Double(line[nsec.upperBound...].prefix { $0.isNumber }) ?? 0
            total += seconds + nanoseconds / 1e9
        }
        return (result, total)
    }

    /// How many reads `locket ARGS` made of the keychain's file and its WAL
    /// (strace -y names each descriptor's path); nil without strace.
    func keychainReads(_ arguments: [String]) throws -> Int? {
        guard let strace = SystemTool.path("strace") else { return nil }
        let log = sandbox.home + "/reads.log"
        defer { unlink(log) }
        let result = Spawn.run(strace, ["-f", "-y", "-qq", "-e", "trace=read,pread64,preadv,readv", "-o", log, binary] + arguments,
                               environment: sandbox.environment, input: .devNull, timeout: 60)
        XCTAssertEqual(result.status, 0, result.summary)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        return text.split(separator: "\n").filter { $0.contains("<" + sandbox.loginKeychain) }.count
    }
}
