@testable import LocketCLI
import XCTest

/// Issue 16, item 1: what `inject` takes for a placeholder, what for text.
final class TemplateParsingTests: XCTestCase {
    /// The template with each placeholder replaced by `<REF|filter>`.
    func render(_ text: String) throws -> String {
        let bytes = Array(text.utf8)
        let template = try Template(parsing: bytes)
        var out: [UInt8] = []
        for piece in template.pieces {
            switch piece {
            case .text(let range): out += bytes[range]
            case .literal(let b): out += b
            case .placeholder(let p): out += Array("<\(p.reference)\(p.filter.map { "|\($0.rawValue)" } ?? "")@\(p.line)>".utf8)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    func testPlaceholders() throws {
        XCTAssertEqual(try render("a {{ locket:github/deploy }} b"), "a <github/deploy@1> b")
        XCTAssertEqual(try render("{{locket:x/y}}{{\tlocket:https://u@h:1/p\t}}"), "<x/y@1><https://u@h:1/p@1>")
        XCTAssertEqual(try render("x\n\ny {{ locket:a/b | base64 }}"), "x\n\ny <a/b|base64@3>")
        XCTAssertEqual(try render("{{ locket:my service/acct }}"), "<my service/acct@1>")
    }

    func testOtherBracesAreText() throws {
        let text = "{{ .Values.x }} {{- if }} {{locket}} {{ locket }} {locket:a/b} {{{ x }}} }} {{"
        XCTAssertEqual(try render(text), text)
        XCTAssertEqual(try render(""), "")
        XCTAssertEqual(try render("no braces at all\n"), "no braces at all\n")
    }

    func testEscapes() throws {
        XCTAssertEqual(try render(#"\{{ locket:a/b }}"#), "{{ locket:a/b }}")
        XCTAssertEqual(try render(#"\\{{ locket:a/b }}"#), #"\<a/b@1>"#)
        XCTAssertEqual(try render(#"\\\{{ locket:a/b }}"#), #"\{{ locket:a/b }}"#)
        // A backslash before anything else, or before other braces, is text.
        XCTAssertEqual(try render(#"\n \{{ .x }} C:\path"#), #"\n \{{ .x }} C:\path"#)
    }

    func testMalformedPlaceholders() {
        for (text, line, reason) in [
            ("a\n{{ locket:a/b \n}}", 2, "not closed"),
            ("{{ locket:a/b", 1, "not closed"),
            ("{{ locket: }}", 1, "no reference"),
            ("x\ny\n{{ locket:a/b | json }}", 3, "unknown filter"),
        ] {
            XCTAssertThrowsError(try Template(parsing: Array(text.utf8)), text) { error in
                guard let malformed = error as? Template.Malformed else { return XCTFail("\(error)") }
                XCTAssertEqual(malformed.line, line, text)
                XCTAssertTrue(malformed.reason.contains(reason), malformed.reason)
            }
        }
    }
}
