import LocketCore
import XCTest

/// SecureBytes come from growable guarded arenas (64 B and 1 KiB slots) and
/// fall back to one sodium_malloc each when those are full.
final class SecureBytesTests: XCTestCase {
    /// More live buffers of each size than the arenas hold: no two may share
    /// bytes, and every new one starts zeroed, including reused slots.
    func testManyLiveBuffersNeverOverlapAndStartZeroed() throws {
        for size in [1, 32, 64, 65, 700, 1024, 1025] {
            var live: [SecureBytes] = []
            for i in 0..<600 {
                let b = try SecureBytes(count: size)
                XCTAssertTrue(b.withUnsafeBytes { $0.allSatisfy { $0 == 0 } }, "size \(size), buffer \(i) not zeroed")
                _ = b.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: i)) }
                live.append(b)
            }
            for (i, b) in live.enumerated() {
                XCTAssertTrue(b.withUnsafeBytes { $0.allSatisfy { $0 == UInt8(truncatingIfNeeded: i) } }, "size \(size), buffer \(i) overwritten")
            }
            // Free every other one, then refill: the reused slots must come back wiped.
            live = live.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
            for _ in 0..<300 {
                let b = try SecureBytes(count: size)
                XCTAssertTrue(b.withUnsafeBytes { $0.allSatisfy { $0 == 0 } }, "size \(size): a reused slot was not wiped")
                live.append(b)
            }
        }
    }

    /// The first chunks of the two arenas share one guarded region: slots of
    /// both sizes, live at once, must keep to their own bytes.
    func testSmallAndMediumSlotsNeverOverlap() throws {
        var live: [(SecureBytes, UInt8)] = []
        for i in 0..<200 {
            let size = i % 3 == 0 ? 1024 : 64
            let b = try SecureBytes(count: size)
            XCTAssertTrue(b.withUnsafeBytes { $0.allSatisfy { $0 == 0 } }, "buffer \(i) (\(size) B) not zeroed")
            let mark = UInt8(truncatingIfNeeded: i + 1)
            _ = b.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: mark) }
            live.append((b, mark))
        }
        for (i, (b, mark)) in live.enumerated() {
            XCTAssertTrue(b.withUnsafeBytes { $0.allSatisfy { $0 == mark } }, "buffer \(i) (\(b.count) B) overwritten")
        }
    }

    /// Guarded memory that can't be had is errSecAllocate, not a crash: a
    /// petabyte is past any process's address space.
    func testAnAllocationThatFailsThrowsErrSecAllocate() {
        XCTAssertThrowsError(try SecureBytes(count: 1 << 50)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .allocate, "\(error)")
        }
        XCTAssertEqual(try SecureBytes(count: 16).count, 16)
    }

    /// A short value in a large slot: wiping only what was used must still
    /// leave the whole slot zero for the next, longer value.
    func testShortThenLongValueInTheSameSlotSize() throws {
        for _ in 0..<2_000 {
            let short = try SecureBytes(copying: [UInt8](repeating: 0xAA, count: 3))
            XCTAssertEqual(short.bytes, [0xAA, 0xAA, 0xAA])
            let long = try SecureBytes(count: 1024)
            XCTAssertTrue(long.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
            let small = try SecureBytes(count: 64)
            XCTAssertTrue(small.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
        }
    }

    /// The pool gives back every secret exactly, empty and larger-than-a-chunk
    /// ones included, and holds 100,000 of them, which guarded mappings of
    /// their own could not (the kernel's map count).
    func testPoolHoldsManySecretsAndGivesEachBack() throws {
        let pool = SecureBytesPool()
        let big = [UInt8](repeating: 7, count: (1 << 20) + 3)
        for i in 0..<100_000 {
            try pool.append(SecureBytes(copying: Array("secret \(i)".utf8)))
            if i == 500 { try pool.append(SecureBytes(copying: big)) }
            if i == 501 { try pool.append(SecureBytes(count: 0)) }
        }
        XCTAssertEqual(pool.count, 100_002)
        XCTAssertEqual(try pool[0].bytes, Array("secret 0".utf8))
        XCTAssertEqual(try pool[501].bytes, big)
        XCTAssertEqual(try pool[503].count, 0)
        XCTAssertEqual(try pool[100_001].bytes, Array("secret 99999".utf8))
        var held: [SecureBytes] = []
        for i in stride(from: 0, to: pool.count, by: 997) { held.append(try pool[i]) }
        XCTAssertEqual(held.count, (100_002 + 996) / 997)
    }
}
