import Foundation
import LocketCore
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// locket-tpm holds no secret past its request (SPEC §21, STYLE "wipe
/// buffers"): its memory, read through /proc/PID/mem, no longer holds an
/// unsealed secret or a shared one once it has served the request (it wipes
/// its buffers and the stack right after the reply), and a helper given
/// an authorization value ends with that request (ESAPI keeps the value in
/// its session record). Reading another process's memory needs
/// CAP_SYS_PTRACE (the helper is not dumpable): root, as CI runs.
final class TPMSecretHygieneTests: TPMTestCase {
    func testTheHelperKeepsNoSecretPastItsRequest() throws {
        let tpm = try sharedTPM()
        let client = try client(tpm)
        let secret = Array("an unsealed secret, 30 bytes!!".utf8)
        let sealed = try client.seal(try SecureBytes(copying: secret))
        XCTAssertEqual(try client.unseal(sealed).withUnsafeBytes { Array($0) }, secret)
        let key = try client.createKey()
        let peer = try client.createKey().publicKey
        let shared = try client.sharedSecret(with: peer, key: key).withUnsafeBytes { Array($0) }
        // The helper wipes right after its reply: read it once it waits for the next request.
        let helper = try XCTUnwrap(client.helperProcessID)
        try waitUntilReading(helper)
        let memory = try readableMemory(helper)
        XCTAssertFalse(memory.contains(secret), "the unsealed secret is still in the helper's memory")
        XCTAssertFalse(memory.contains(shared), "the shared secret is still in the helper's memory")
        XCTAssertTrue(memory.contains(Array("LKTP".utf8)), "the scan reads the helper's memory at all")

        // A key with an application password: the helper that saw it is gone after each use.
        let password = try password("an application password")
        let protected = try client.createKey(authorization: password)
        XCTAssertNil(client.helperProcessID)
        XCTAssertTrue(isGone(helper))
        _ = try client.sign(Array("m".utf8), algorithm: .ecdsaMessageX962SHA256, with: key)
        let signer = try XCTUnwrap(client.helperProcessID)
        _ = try client.sign(Array("m".utf8), algorithm: .ecdsaMessageX962SHA256, with: protected, authorization: password)
        XCTAssertNil(client.helperProcessID)
        XCTAssertTrue(isGone(signer))
    }

    /// Waits until `pid` is blocked in read(2) on its stdin: done with the last request.
    func waitUntilReading(_ pid: pid_t) throws {
        #if arch(x86_64)
        let read = "0"
        #elseif arch(arm64)
        let read = "63"
        #else
        throw XCTSkip("read(2)'s system call number on this architecture is not listed here")
        #endif
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            // "NR 0x0 ...": read(2) on descriptor 0.
            if let call = try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8), call.hasPrefix("\(read) 0x0 ") { return }
            usleep(2_000)
        }
        throw XCTSkip("could not see locket-tpm wait in read(2) through /proc/\(pid)/syscall")
    }

    /// The readable, private mappings of `pid` (heap, stacks, data), concatenated.
    func readableMemory(_ pid: pid_t) throws -> [UInt8] {
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        let mem = open("/proc/\(pid)/mem", O_RDONLY)
        guard mem >= 0 else { throw XCTSkip("reading /proc/\(pid)/mem needs CAP_SYS_PTRACE (errno \(errno)): run as root, as CI does") }
        defer { close(mem) }
        var out: [UInt8] = []
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, fields[1].hasPrefix("r"), fields[1].contains("p"), !(fields.last ?? "").hasPrefix("[v") else { continue }
            let bounds = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
            guard bounds.count == 2, bounds[1] > bounds[0], bounds[1] - bounds[0] <= 256 << 20 else { continue }
            var chunk = [UInt8](repeating: 0, count: Int(bounds[1] - bounds[0]))
            let got = chunk.withUnsafeMutableBytes { pread(mem, $0.baseAddress, $0.count, off_t(Int64(bitPattern: bounds[0]))) }
            if got > 0 { out += chunk[0..<got] }
        }
        return out
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes: memchr and memcmp, since the
    /// scan covers tens of MiB, which a Swift loop in a debug build takes seconds for.
    func contains(_ needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return false }
        return withUnsafeBytes { haystack in
            needle.withUnsafeBytes { pin in
                guard var cursor = haystack.baseAddress else { return false }
                let end = cursor + haystack.count
                while end - cursor >= pin.count {
                    guard let found = memchr(cursor, Int32(first), end - cursor) else { return false }
                    let hit = UnsafeRawPointer(found)
                    guard end - hit >= pin.count else { return false }
                    if memcmp(hit, pin.baseAddress!, pin.count) == 0 { return true }
                    cursor = hit + 1
                }
                return false
            }
        }
    }
}
