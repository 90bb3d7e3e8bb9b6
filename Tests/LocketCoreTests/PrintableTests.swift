import LocketCore
import LocketSupport
import XCTest

/// Issue 11, defect 9: the one escaper for text that meets a terminal.
/// Engine messages quote user text through `Printable.clip`, which used to
/// replace only C0 controls.
final class PrintableTests: XCTestCase {
    func testClipEscapesAndCuts() {
        XCTAssertEqual(Printable.clip("plain"), "plain")
        XCTAssertEqual(Printable.clip("a\u{1b}[2Jb\u{9b}c\u{202e}d\\e"), #"a\x1b[2Jb\u{9b}c\u{202e}d\\e"#)
        XCTAssertEqual(Printable.clip(String(repeating: "\u{9d}", count: 70), max: 3), #"\u{9d}\u{9d}\u{9d}..."#)
        XCTAssertEqual(Printable.clip("abcdef", max: 6), "abcdef")
    }

    func testWithoutBackslashesOnlyTheUnsafeCharactersChange() {
        XCTAssertEqual(Printable.escape("printf '%s\\n' x\u{1b}y\u{2067}", backslashes: false), #"printf '%s\n' x\x1by\u{2067}"#)
        XCTAssertEqual(Printable.escape(#"C:\x1b already escaped"#, backslashes: false), #"C:\x1b already escaped"#)
    }

    func testTheUnsafeSet() {
        let unsafe: [UInt32] = Array(0..<0x20) + Array(0x7f...0x9f) + [0x61c, 0x200e, 0x200f] + Array(0x2028...0x202e) + Array(0x2066...0x2069)
        for v in 0..<0x3000 as Range<UInt32> {
            XCTAssertEqual(Printable.isUnsafe(v), unsafe.contains(v), String(v, radix: 16))
        }
    }
}
