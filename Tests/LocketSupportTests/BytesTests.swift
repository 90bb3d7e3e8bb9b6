import Foundation
import Glibc
import LocketSupport
import XCTest

final class HexTests: XCTestCase {
    func testRoundTripsEveryByte() {
        let all = (0...255).map { UInt8($0) }
        let text = Hex.encode(all)
        XCTAssertEqual(text.count, 512)
        XCTAssertEqual(String(text.prefix(8)), "00010203")
        XCTAssertEqual(String(text.suffix(4)), "feff")
        XCTAssertEqual(Hex.decode(text), all)
        XCTAssertEqual(Hex.decode(text.uppercased()), all)
        XCTAssertEqual(Hex.encode([0xab, 0x0c], uppercase: true), "AB0C")
        XCTAssertEqual(Hex.encode([UInt8]()), "")
        XCTAssertEqual(Hex.decode(""), [])
    }

    func testRefusesOddLengthAndNonDigits() {
        XCTAssertNil(Hex.decode("abc"))
        XCTAssertNil(Hex.decode("0g"))
        XCTAssertNil(Hex.decode("+f"))
        XCTAssertNil(Hex.decode(" 0"))
        XCTAssertNil(Hex.decode("é0"))
        XCTAssertNil(hexDigit(UInt8(ascii: "G")))
        XCTAssertEqual(hexDigit(UInt8(ascii: "F")), 15)
    }
}

final class BigEndianTests: XCTestCase {
    func testWritesMostSignificantFirst() {
        XCTAssertEqual(BigEndian.bytes(UInt32(0x0102_0304)), [1, 2, 3, 4])
        XCTAssertEqual(BigEndian.bytes(Int64(-2)), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe])
        var out: [UInt8] = [9]
        BigEndian.append(UInt16(0xabcd), to: &out)
        XCTAssertEqual(out, [9, 0xab, 0xcd])
        var buffer = [UInt8](repeating: 0, count: 6)
        buffer.withUnsafeMutableBytes { BigEndian.store(UInt32(0xdead_beef), into: $0, at: 2) }
        XCTAssertEqual(buffer, [0, 0, 0xde, 0xad, 0xbe, 0xef])
    }

    /// The concrete `UInt32` and `UInt64` appends give the generic one's bytes.
    func testConcreteAppendsMatchTheGenericOne() {
        func generic<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
            var out: [UInt8] = [7]
            BigEndian.append(value, to: &out)
            return out
        }
        for value: UInt32 in [0, 1, 0xff, 0x100, 0x0102_0304, 0xdead_beef, .max] {
            var out: [UInt8] = [7]
            BigEndian.append(value, to: &out)
            XCTAssertEqual(out, generic(value), "\(value)")
            XCTAssertEqual(out, [7] + BigEndian.bytes(value))
        }
        for value: UInt64 in [0, 1, 0xff, 0x1_0000_0000, 0x0102_0304_0506_0708, 0xdead_beef_0bad_f00d, .max] {
            var out: [UInt8] = [7]
            BigEndian.append(value, to: &out)
            XCTAssertEqual(out, generic(value), "\(value)")
        }
        var out: [UInt8] = []
        BigEndian.append(UInt64(0x0102_0304_0506_0708), to: &out)
        XCTAssertEqual(out, [1, 2, 3, 4, 5, 6, 7, 8])
    }

    func testReadsOnlyWithinBounds() {
        let bytes: [UInt8] = [0, 0, 0, 1, 0xff]
        XCTAssertEqual(BigEndian.read(UInt32.self, bytes, at: 0), 1)
        XCTAssertEqual(BigEndian.read(UInt32.self, bytes, at: 1), 0x1ff)
        XCTAssertNil(BigEndian.read(UInt32.self, bytes, at: 2))
        XCTAssertNil(BigEndian.read(UInt32.self, bytes, at: -1))
        XCTAssertNil(BigEndian.read(UInt64.self, bytes, at: 0))
        XCTAssertEqual(BigEndian.read(Int64.self, BigEndian.bytes(Int64.min), at: 0), Int64.min)
        // A slice keeps its parent's indices.
        XCTAssertEqual(BigEndian.read(UInt16.self, bytes[3...], at: 3), 0x1ff)
        XCTAssertNil(BigEndian.read(UInt16.self, bytes[3...], at: 0))
    }

    func testValueOfAShortOrLongField() {
        XCTAssertEqual(BigEndian.value([1, 0]), 256)
        XCTAssertEqual(BigEndian.value([UInt8]()), 0)
        XCTAssertEqual(BigEndian.value([0, 0, 0, 0, 0, 0, 0, 7, 0xff]), 7)  // the first 8 only
        XCTAssertEqual(BigEndian.int64(BigEndian.bytes(Int64(-5))), -5)
    }
}

final class PercentEncodingTests: XCTestCase {
    func testStrictRefusesAMalformedEscape() {
        XCTAssertEqual(PercentEncoding.decodeStrict("a%2Fb%2f".utf8), Array("a/b/".utf8))
        XCTAssertNil(PercentEncoding.decodeStrict("50%".utf8))
        XCTAssertNil(PercentEncoding.decodeStrict("%4".utf8))
        XCTAssertNil(PercentEncoding.decodeStrict("%zz".utf8))
        XCTAssertNil(PercentEncoding.decodeStrict("%+f".utf8))
        XCTAssertEqual(PercentEncoding.decodeStrict("a+b".utf8), Array("a+b".utf8))
    }

    func testLenientKeepsAMalformedEscape() {
        XCTAssertEqual(PercentEncoding.decodeLenient("a%2Fb".utf8), Array("a/b".utf8))
        XCTAssertEqual(PercentEncoding.decodeLenient("50%".utf8), Array("50%".utf8))
        XCTAssertEqual(PercentEncoding.decodeLenient("%4".utf8), Array("%4".utf8))
        XCTAssertEqual(PercentEncoding.decodeLenient("%zz%41".utf8), Array("%zzA".utf8))
        XCTAssertEqual(PercentEncoding.decodeLenient("%00".utf8), [0])
    }

    /// A form-encoded query (the otpauth:// parameters) reads `+` as a space; `%2B` stays a plus.
    func testPlusAsSpaceOnlyWhereAskedFor() {
        XCTAssertEqual(PercentEncoding.decodeStrict("a+b%2Bc".utf8, plusAsSpace: true), Array("a b+c".utf8))
        XCTAssertEqual(PercentEncoding.decodeStrict("a+b%2Bc".utf8), Array("a+b+c".utf8))
        XCTAssertNil(PercentEncoding.decodeStrict("a+%4".utf8, plusAsSpace: true))
    }

    /// Decoding into caller's memory (guarded, for a secret) writes only there, and as much as the array version.
    func testDecodingIntoGivenMemory() {
        let input = Array("ab%41+%".utf8)
        var out = [UInt8](repeating: 0xee, count: input.count)
        let malformed = input.withUnsafeBytes { raw in out.withUnsafeMutableBytes { PercentEncoding.decodeStrict(raw, into: $0, plusAsSpace: true) } }
        XCTAssertNil(malformed)
        let good = Array("ab%41+c".utf8)
        let count = good.withUnsafeBytes { raw in out.withUnsafeMutableBytes { PercentEncoding.decodeStrict(raw, into: $0, plusAsSpace: true) } }
        XCTAssertEqual(count, 5)
        XCTAssertEqual(Array(out[0..<5]), Array("abA c".utf8))
        XCTAssertEqual(Array(out[0..<5]), PercentEncoding.decodeStrict(good, plusAsSpace: true))
    }

    func testEncodesAllButUnreserved() {
        XCTAssertEqual(String(decoding: PercentEncoding.encode(Array("a b/é~-._Z9".utf8)), as: UTF8.self), "a%20b%2F%C3%A9~-._Z9")
        let all = (0...255).map { UInt8($0) }
        XCTAssertEqual(PercentEncoding.decodeStrict(PercentEncoding.encode(all)), all)
    }
}

final class Base64Tests: XCTestCase {
    func testPaddingOfEachRemainder() {
        XCTAssertEqual(Base64.encode([UInt8]()), "")
        XCTAssertEqual(Base64.encode(Array("f".utf8)), "Zg==")
        XCTAssertEqual(Base64.encode(Array("fo".utf8)), "Zm8=")
        XCTAssertEqual(Base64.encode(Array("foo".utf8)), "Zm9v")
        XCTAssertEqual(Base64.encode(Array("foobar".utf8)), "Zm9vYmFy")
        XCTAssertEqual(Base64.encode(Array("f".utf8), padding: false), "Zg")
        XCTAssertEqual(Base64.encode(Array("fo".utf8), padding: false), "Zm8")
        XCTAssertEqual(Base64.encode([0xfb, 0xff, 0xbf]), "+/+/")
    }

    func testEveryEntryPointAgrees() {
        let bytes = (0..<256).map { UInt8(($0 * 7) & 0xff) }
        var streamed: [UInt8] = []
        Base64.encode(bytes) { streamed.append($0) }
        XCTAssertEqual(String(decoding: streamed, as: UTF8.self), Base64.encode(bytes))
        XCTAssertEqual(bytes.withUnsafeBytes { Base64.encode($0) }, Base64.encode(bytes))
        XCTAssertEqual(Base64.encode(bytes[1...]), Base64.encode(Array(bytes[1...])))
    }

    /// Foundation's encoder as the reference, at every length from 0 to 300
    /// (each remainder, each position of the last block) with random bytes,
    /// through each entry point; the buffer form writes exactly its count.
    func testMatchesFoundationAtEveryLength() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Data(bytes).base64EncodedString()
            let unpadded = String(expected.prefix { $0 != "=" })
            XCTAssertEqual(Base64.encode(bytes), expected, "length \(length)")
            XCTAssertEqual(Base64.encode(bytes, padding: false), unpadded, "length \(length)")
            XCTAssertEqual(bytes.withUnsafeBytes { Base64.encode($0) }, expected, "length \(length)")
            XCTAssertEqual(Base64.encode(([0x55] + bytes)[1...]), expected, "length \(length), a slice")
            var streamed: [UInt8] = []
            Base64.encode(bytes, padding: false) { streamed.append($0) }
            XCTAssertEqual(String(decoding: streamed, as: UTF8.self), unpadded, "length \(length), streamed")
            for padding in [true, false] {
                let count = Base64.encodedCount(length, padding: padding)
                XCTAssertEqual(count, padding ? expected.utf8.count : unpadded.utf8.count, "length \(length)")
                var out = [UInt8](repeating: 0xee, count: count + 4)
                let written = bytes.withUnsafeBytes { src in
                    out.withUnsafeMutableBytes { Base64.encode(src, into: $0, padding: padding) }
                }
                XCTAssertEqual(written, count, "length \(length)")
                XCTAssertEqual(String(decoding: out[..<count], as: UTF8.self), padding ? expected : unpadded, "length \(length)")
                XCTAssertEqual(Array(out[count...]), [0xee, 0xee, 0xee, 0xee], "length \(length): written past the end")
            }
        }
    }
}

final class ClockTests: XCTestCase {
    func testSecondsAndMillisecondsAgree() {
        let seconds = Clock.seconds()
        let milliseconds = Clock.milliseconds()
        let again = Clock.seconds()
        XCTAssertGreaterThan(seconds, 1_700_000_000)  // after November 2023
        XCTAssertLessThanOrEqual(seconds, milliseconds / 1000)
        XCTAssertLessThanOrEqual(milliseconds / 1000, again)
        XCTAssertLessThanOrEqual(milliseconds, Clock.milliseconds())
    }
}

final class WipeAndWriteTests: XCTestCase {
    func testWipeZeroesAndKeepsTheCount() {
        var bytes: [UInt8] = [1, 2, 3]
        wipe(&bytes)
        XCTAssertEqual(bytes, [0, 0, 0])
        var words: [UInt32] = [0xffff_ffff, 7]
        wipe(&words)
        XCTAssertEqual(words, [0, 0])
        var empty: [UInt8] = []
        wipe(&empty)
        XCTAssertEqual(empty, [])
    }

    func testWriteAllWritesEverythingOrSaysWhy() {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let bytes = (0..<40_000).map { UInt8($0 & 0xff) }
        // More than a pipe holds at once would block: write from another thread.
        let writeEnd = fds[1]
        let writer = Thread { XCTAssertNil(writeAll(writeEnd, bytes).error); close(writeEnd) }
        writer.start()
        var read: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fds[0], $0.baseAddress, $0.count) }
            if n <= 0 { break }
            read += chunk[0..<n]
        }
        close(fds[0])
        XCTAssertEqual(read, bytes)
        XCTAssertEqual(writeAll(-1, [1]).error, Errno(EBADF))
    }
}
