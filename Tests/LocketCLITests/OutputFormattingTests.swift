import Foundation
import Glibc
@testable import LocketCLI
import XCTest

/// Text output escapes control characters, backslashes and invalid UTF-8 so
/// a value (or a secret shown by `find -g`) stays on its line; since issue
/// 11 (defect 9) C1 controls, line separators and bidirectional marks too,
/// so it can't drive the terminal or disguise itself. The fast path
/// copies runs of printable bytes; it must print exactly what the
/// byte-at-a-time definition below does.
final class OutputFormattingTests: XCTestCase {
    private func reference(_ bytes: [UInt8]) -> String {
        var out = ""
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b < 0x80 {
                switch b {
                case 0x0a: out += "\\n"
                case 0x09: out += "\\t"
                case 0x0d: out += "\\r"
                case 0x5c: out += "\\\\"
                case 0..<0x20, 0x7f: out += "\\x" + String(b, radix: 16).leftPadded(2)
                default: out.unicodeScalars.append(Unicode.Scalar(b))
                }
                i += 1
                continue
            }
            let length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1
            if length > 1, i + length <= bytes.count, let s = String(validating: bytes[i..<i + length], as: UTF8.self) {
                // C1 controls, line separators and bidirectional marks: escaped by code point.
                let v = s.unicodeScalars.first!.value
                if (0x80...0x9f).contains(v) || [0x61c, 0x200e, 0x200f].contains(v) || (0x2028...0x202e).contains(v)
                    || (0x2066...0x2069).contains(v) {
                    out += "\\u{" + String(v, radix: 16) + "}"
                } else {
                    out += s
                }
                i += length
            } else {
                out += "\\x" + String(b, radix: 16).leftPadded(2)
                i += 1
            }
        }
        return out
    }

    private func escaped(_ bytes: [UInt8]) -> String {
        var w = ByteWriter()
        bytes.withUnsafeBytes { ItemPrinter.escape($0, into: &w) }
        return String(decoding: w.bytes, as: UTF8.self)
    }

    func testKnownValues() {
        XCTAssertEqual(escaped(Array("plain text".utf8)), "plain text")
        XCTAssertEqual(escaped(Array("a\nb\tc\rd\\e\u{7}f\u{7f}".utf8)), "a\\nb\\tc\\rd\\\\e\\x07f\\x7f")
        XCTAssertEqual(escaped(Array("café 🔑".utf8)), "café 🔑")
        XCTAssertEqual(escaped([0xff, 0x41, 0xc3]), "\\xffA\\xc3")
        XCTAssertEqual(escaped([0xed, 0xa0, 0x80]), "\\xed\\xa0\\x80", "a UTF-16 surrogate is not UTF-8")
        XCTAssertEqual(escaped([]), "")
        // Issue 11, defect 9: C1 controls (CSI, OSC, NEL) and bidirectional overrides as real UTF-8 bytes.
        XCTAssertEqual(escaped([0xc2, 0x9b, 0x33, 0x31, 0x6d, 0xc2, 0x9d, 0xc2, 0x85]), "\\u{9b}31m\\u{9d}\\u{85}")
        XCTAssertEqual(escaped(Array("evil\u{202e}txt.exe \u{2066}\u{2069}\u{200f}\u{61c}\u{2028}".utf8)),
                       "evil\\u{202e}txt.exe \\u{2066}\\u{2069}\\u{200f}\\u{61c}\\u{2028}")
        // Their neighbours are plain text.
        XCTAssertEqual(escaped(Array("\u{a0}\u{2029}\u{202f}\u{2065}\u{206a}\u{200d}".utf8)).unicodeScalars.filter { $0 == "\\" }.count, 1,
                       "only U+2029 is escaped")
    }

    /// JSON keeps the exact string for parsers, and writes the same
    /// characters as \uXXXX so that JSON on a terminal can't drive it either.
    func testJSONEscapesTerminalControlsAndParsesBack() throws {
        let text = "a\u{1b}b\u{9b}c\u{9d}d\u{202e}e\u{2028}f\u{7f}g\u{61c}h caf\u{e9} \u{1f511} \u{a0}\"\\"
        var w = JSONWriter()
        w.beginObject(); w.key("v"); w.string(text); w.endObject()
        let json = String(decoding: w.bytes, as: UTF8.self)
        XCTAssertEqual(json, #"{"v":"a\u001bb\u009bc\u009dd\u202ee\u2028f\u007fg\u061ch café 🔑 \#u{a0}\"\\"}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(w.bytes)) as? [String: String]
        XCTAssertEqual(parsed?["v"], text)
    }

    func testRandomBytesMatchTheByteAtATimeDefinition() {
        var rng = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x00, 0x09, 0x0a, 0x0d, 0x1f, 0x20, 0x41, 0x5c, 0x7e, 0x7f, 0x80, 0xbf, 0xc2, 0xc3, 0xa9,
                                 0xe2, 0x82, 0xac, 0xed, 0xa0, 0xf0, 0x9f, 0x94, 0x91, 0xf8, 0xff,
                                 0x9b, 0x9d, 0x85, 0xae, 0xa8, 0x81, 0xa6, 0xd8, 0x9c]
        for _ in 0..<5_000 {
            let bytes = (0..<Int.random(in: 0...24, using: &rng)).map { _ in
                Bool.random(using: &rng) ? alphabet.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            }
            XCTAssertEqual(escaped(bytes), reference(bytes), "\(bytes)")
        }
    }
}

extension OutputFormattingTests {
    /// Dates are computed by arithmetic, not gmtime_r: they must agree with it.
    func testDatesAgreeWithGmtime() {
        func viaGmtime(_ ms: Int64) -> String {
            var seconds = time_t(ms / 1000)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            func pad(_ v: Int32, _ w: Int) -> String { String(v).leftPadded(w) }
            return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
                + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(ms % 1000), 3))Z"
        }
        let edges: [Int64] = [0, 999, 1000, 86_399_999, 86_400_000, 951_782_400_000 /* 2000-02-29 */, 4_107_542_399_999,
                              1_795_000_000_123, 253_402_300_799_999 /* 9999-12-31T23:59:59.999 */]
        for ms in edges { XCTAssertEqual(Dates.rfc3339(milliseconds: ms), viaGmtime(ms), "\(ms)") }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let ms = Int64.random(in: 0...253_402_300_799_999, using: &rng)
            XCTAssertEqual(Dates.rfc3339(milliseconds: ms), viaGmtime(ms), "\(ms)")
        }
        XCTAssertEqual(Dates.rfc3339(milliseconds: -1), "1969-12-31T23:59:59.999Z")
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
