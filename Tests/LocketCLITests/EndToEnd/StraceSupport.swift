import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// What a command asked the kernel for, counted with strace where a test
// needs a count that a loaded machine can't change: the reads of the
// keychain's file.
// Without strace (make test-deps installs it) each gives nil and the caller
// keeps its other checks.
extension EndToEndCase {
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
