import Foundation
@testable import LocketCore
import XCTest

/// The hand-written parsers behind `Entitlements.parse` (JSON, XML and binary
/// property lists, which replaced Foundation's decoders): each format's edge
/// cases, hostile input that must be refused quickly, and a differential
/// check against Foundation's decoders, which the tests may still link.
final class EntitlementsParserTests: XCTestCase {
    // MARK: - Helpers

    func json(_ text: String) throws -> DocumentValue { try JSONDocument.parse(Array(text.utf8)) }
    func xml(_ text: String) throws -> DocumentValue { try XMLPropertyList.parse(Array(text.utf8)) }

    func assertMalformed(_ parse: @autoclosure () throws -> DocumentValue, _ what: String = "",
                         file: StaticString = #filePath, line: UInt = #line) {
        do {
            let value = try parse()
            XCTFail("accepted \(what): \(value)", file: file, line: line)
        } catch {
            XCTAssertTrue(error is MalformedDocument, "\(what): \(error)", file: file, line: line)
        }
    }

    /// Each entry must parse to `value` (or be refused, with nil).
    func assertJSON(_ cases: [(String, DocumentValue?)], file: StaticString = #filePath, line: UInt = #line) {
        for (text, expected) in cases {
            if let expected {
                XCTAssertEqual(try json(text), expected, text, file: file, line: line)
            } else {
                assertMalformed(try json(text), text, file: file, line: line)
            }
        }
    }

    func assertXML(_ cases: [(String, DocumentValue?)], file: StaticString = #filePath, line: UInt = #line) {
        for (text, expected) in cases {
            if let expected {
                XCTAssertEqual(try xml(text), expected, text, file: file, line: line)
            } else {
                assertMalformed(try xml(text), text, file: file, line: line)
            }
        }
    }

    /// `<plist>` around `body`.
    func plist(_ body: String) -> String { "<plist version=\"1.0\">\(body)</plist>" }

    /// Runs `body` and asserts it took less than `limit`: hostile input must
    /// be refused at once, not after minutes of work. Each input here takes
    /// well under 0.1 s in the test build; what the bound catches is work
    /// that grows with the input's paths or squares its 100,000 elements
    /// (2^60 paths never end; 10^10 steps take minutes in a debug build), so
    /// it is generous enough (300 times the work) that a loaded machine
    /// never trips it.
    func assertQuick(_ what: String, limit: Duration = .seconds(30), _ body: () throws -> Void,
                     file: StaticString = #filePath, line: UInt = #line) {
        let elapsed = ContinuousClock().measure {
            do { try body() } catch { XCTFail("\(what): \(error)", file: file, line: line) }
        }
        XCTAssertLessThan(elapsed, limit, "\(what) took \(elapsed)", file: file, line: line)
    }

    // MARK: - JSON

    func testJSONValues() {
        assertJSON([
            (#"{}"#, .dictionary([:])),
            (#"[]"#, .array([])),
            (#""x""#, .string("x")),
            (#" {"a" : [ "b" , 1 , true , false , null , {} , [] ] } "#,
             .dictionary(["a": .array([.string("b"), .other, .other, .other, .null, .dictionary([:]), .array([])])])),
            ("\u{FEFF}{\"a\":\"b\"}", .dictionary(["a": .string("b")])),
            ("\t\r\n {\"a\":\"b\"}\t\r\n ", .dictionary(["a": .string("b")])),
        ])
    }

    func testJSONStringEscapes() {
        assertJSON([
            (#"["\"\\\/\b\f\n\r\t"]"#, .array([.string("\"\\/\u{8}\u{c}\n\r\t")])),
            (#"["\u00e9\u00E9\u0041\u0000"]"#, .array([.string("\u{e9}\u{e9}A\u{0}")])),
            (#"["\ud83d\udd11", "\uD83D\uDD11x"]"#, .array([.string("\u{1F511}"), .string("\u{1F511}x")])),
            (#"["caf\u00e9 \#u{1F511} \#u{7F}"]"#, .array([.string("caf\u{e9} \u{1F511} \u{7F}")])),
            (#"["\ud800"]"#, nil),
            (#"["\udc00"]"#, nil),
            (#"["\ud83d\u0041"]"#, nil),
            (#"["\ud83dx"]"#, nil),
            (#"["\ud83d\"]"#, nil),
            (#"["\u12"]"#, nil),
            (#"["\u12g4"]"#, nil),
            (#"["\x"]"#, nil),
            (#"["\'"]"#, nil),
            (#"["\"#, nil),
            (#"["abc"#, nil),
            ("[\"a\tb\"]", nil),
            ("[\"a\nb\"]", nil),
            ("[\"a\u{1}b\"]", nil),
            ("[\"a\u{0}b\"]", nil),
        ])
    }

    func testJSONRefusesInvalidUTF8AnywhereEvenWhereNothingReadsIt() {
        for bytes: [UInt8] in [[0xff], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80]] {
            let document = Array(#"{"ignored": ""#.utf8) + bytes + Array(#"", "keychain-access-groups": ["T.a"]}"#.utf8)
            assertMalformed(try JSONDocument.parse(document), "\(bytes)")
        }
        // UTF-16 JSON, which Foundation sniffed and read, is not UTF-8.
        assertMalformed(try JSONDocument.parse(Array(#"{"a":"b"}"#.utf16).flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] }))
    }

    func testJSONNumbers() {
        for good in ["0", "-0", "7", "-12", "1.5", "-0.25", "1e3", "1E+3", "2e-3", "6.02E23", "123456789012345678901234567890", "1e999"] {
            XCTAssertEqual(try json("[\(good)]"), .array([.other]), good)
        }
        for bad in ["01", "-", "+1", "1.", ".5", "1e", "1e+", "0x10", "NaN", "Infinity", "-Infinity", "1_000", "--1", "1.2.3", "0e", "- 1"] {
            assertMalformed(try json("[\(bad)]"), bad)
        }
    }

    func testJSONStructure() {
        assertJSON([
            (#"{"a":1,}"#, nil),
            (#"[1,]"#, nil),
            (#"[,1]"#, nil),
            (#"{"a" 1}"#, nil),
            (#"{"a":1 "b":2}"#, nil),
            (#"{a:1}"#, nil),
            (#"{'a':1}"#, nil),
            (#"{"a":1} x"#, nil),
            (#"{"a":1}{}"#, nil),
            (#"{"a":1 /* c */}"#, nil),
            (#"{"a":1} // c"#, nil),
            (#"{"a":True}"#, nil),
            (#"{"a":nul}"#, nil),
            (#"{"a":nulls}"#, nil),
            (#"{"a":1"#, nil),
            (#"{"a":"#, nil),
            (#"{"#, nil),
            ("", nil),
            ("   ", nil),
            (" \u{FEFF}{}", nil),
            ("\u{FEFF}\u{FEFF}{}", nil),
            ("{}\u{0}", nil),
            ("\u{B}{}", nil),
            ("\u{C}{}", nil),
            ("\u{A0}{}", nil),
        ])
    }

    func testJSONKeepsTheFirstOfTwoEqualKeys() {
        XCTAssertEqual(try json(#"{"a": "first", "b": 1, "a": "second"}"#), .dictionary(["a": .string("first"), "b": .other]))
        XCTAssertEqual(try json(#"{"a": 1, "a": ["x"]}"#), .dictionary(["a": .other]))
    }

    func testJSONDepthLimit() {
        let limit = DocumentValue.maximumDepth
        XCTAssertNoThrow(try json(String(repeating: "[", count: limit) + String(repeating: "]", count: limit)))
        assertMalformed(try json(String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)))
        let objects = String(repeating: #"{"a":"#, count: limit) + "1" + String(repeating: "}", count: limit)
        XCTAssertNoThrow(try json(objects))
        assertMalformed(try json(#"{"a":"# + objects + "}"))
    }

    // MARK: - XML property lists

    func testXMLValues() {
        assertXML([
            (plist("<dict/>"), .dictionary([:])),
            (plist("<array/>"), .array([])),
            (plist("<string/>"), .string("")),
            (plist("<string></string>"), .string("")),
            (plist("<dict><key>a</key><string>b</string><key></key><true/></dict>"),
             .dictionary(["a": .string("b"), "": .other])),
            (plist("""
                <array>
                \t<true/><false/><true></true><false></false>
                \t<integer>-42</integer><integer></integer><real>1.5</real><date>2024-01-02T03:04:05Z</date>
                \t<data>
                \tAAEC
                \t</data>
                \t<dict><key>nested</key><array><string>x</string></array></dict>
                </array>
                """),
             .array([.other, .other, .other, .other, .other, .other, .other, .other, .other,
                     .dictionary(["nested": .array([.string("x")])])])),
            // Whitespace inside strings and keys is kept, as Foundation kept it.
            (plist("<dict><key> a </key><string>\n b\t</string></dict>"), .dictionary([" a ": .string("\n b\t")])),
            // The value alone, without <plist> around it, as Foundation accepted.
            ("<dict><key>a</key><string>b</string></dict>", .dictionary(["a": .string("b")])),
            (plist("<string>x</string>"), .string("x")),
        ])
    }

    func testXMLPrologAndMisc() {
        let doctype = #"<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">"#
        let value = DocumentValue.dictionary(["a": .string("b")])
        let body = "<dict><key>a</key><string>b</string></dict>"
        assertXML([
            (#"<?xml version="1.0" encoding="UTF-8"?>"# + "\n" + doctype + "\n" + plist(body) + "\n", value),
            ("\u{FEFF}" + #"<?xml version="1.0" encoding="UTF-8"?>"# + plist(body), value),
            ("\n\n  " + #"<?xml version="1.0" encoding="utf-8"?>"# + plist(body), value),
            (#"<?xml version='1.0' encoding='UTF-8' standalone='yes'?>"# + plist(body), value),
            (#"<?xml version="1.0"?>"# + plist(body), value),
            ("<!-- a -- b --><?style href=\"x\"?>" + doctype + "<!---->" + plist(body) + "<!-- end -->\n<?pi x?>\n", value),
            (plist("<!--c--><?pi?>\n<dict> <!--c--> <key>a</key> <!--c--> <?pi x?> <string>b</string> <!--c--></dict><!--c-->"), value),
            ("<plist version = '1.0' other=\"x\" >" + body + "</plist >", value),
            ("<plist>" + body + "</plist>", value),
            (plist("<dict ><key >a</key ><string a='1' >b</string\t></dict\n>"), value),
            // Refused:
            (#"<?xml version="1.0" encoding="ISO-8859-1"?>"# + plist(body), nil),
            (#"<?xml version="1.0" encoding="UTF-16"?>"# + plist(body), nil),
            (#"<?xml version="1.0" encoding=UTF-8?>"# + plist(body), nil),
            (#"<?xml version="1.0"encoding="UTF-8"?>"# + plist(body), nil),
            ("<!-- c -->" + #"<?xml version="1.0"?>"# + plist(body), nil),
            ("<?XML version=\"1.0\"?>" + plist(body), nil),
            ("<?xml-stylesheet href=\"x\"?>" + plist(body), nil),
            (plist(body) + "<?xmlfoo?>", nil),
            // Foundation found `encoding=` wherever it stood in the first `<?xml`.
            (#"<?xmlv ersion="1.0" encoding="latin1"?>"# + plist(body), nil),
            (#"<?xml version="encoding='latin1'" encoding="UTF-8"?>"# + plist(body), nil),
            (#"<?xml version="1.0" other="x"?>"# + plist(body), nil),
            (#"<?xml version=""?>"# + plist(body), nil),
            (doctype + doctype + plist(body), nil),
            (plist(body) + doctype, nil),
            ("<!doctype plist>" + plist(body), nil),
            ("<!DOCTYPE plist [ <!ENTITY x \"y\"> ]>" + plist(body), nil),
            ("<!DOCTYPEplist>" + plist(body), nil),
            ("<!DOCTYPE plist SYSTEM \"a>b\">" + plist(body), nil),
            ("<!DOCTYPE plist" + plist(body), nil),
            ("<!-- unterminated " + plist(body), nil),
            ("<?pi unterminated " + plist(body), nil),
            ("<plist version=1.0>" + body + "</plist>", nil),
            ("<plist version=\"1.0>" + body + "</plist>", nil),
            ("<plist version=\"a>b\">" + body + "</plist>", nil),
            ("<plist version=\"a<b\">" + body + "</plist>", nil),
            ("<plist !!!>" + body + "</plist>", nil),
            ("<plist version=\"1.0\"version2=\"x\">" + body + "</plist>", nil),
            (plist(body) + "x", nil),
            (plist(body) + "<dict/>", nil),
            (plist(body) + "\u{0}", nil),
            (plist(body) + "</plist>", nil),
            ("<plist>" + body, nil),
            ("<plist/>", nil),
            ("<plist></plist>", nil),
            (plist(body + body), nil),
            (plist(plist(body)), nil),
            ("", nil),
            ("<?xml version=\"1.0\"?>", nil),
        ])
    }

    func testXMLElementsAreStrict() {
        assertXML([
            (plist("<dictx></dictx>"), nil),
            (plist("<dictx></dict>"), nil),
            (plist("<DICT></DICT>"), nil),
            (plist("<dict></array>"), nil),
            (plist("<dict>"), nil),
            (plist("<dict><key>a</key></dict>"), nil),
            (plist("<dict><key>a</key><key>b</key></dict>"), nil),
            (plist("<dict><string>a</string><string>b</string></dict>"), nil),
            (plist("<dict><key/><string>b</string></dict>"), nil),
            (plist("<dict>text<key>a</key><string>b</string></dict>"), nil),
            (plist("<dict><key>a</key>text<string>b</string></dict>"), nil),
            (plist("<array>text</array>"), nil),
            (plist("<array><key>a</key></array>"), nil),
            (plist("<key>a</key>"), nil),
            (plist("<data/>"), nil),
            (plist("<integer/>"), nil),
            (plist("<real/>"), nil),
            (plist("<date/>"), nil),
            (plist("<true>x</true>"), nil),
            (plist("<true> </true>"), nil),
            (plist("<true></false>"), nil),
            (plist("<integer><![CDATA[1]]></integer>"), nil),
            (plist("<integer>1<!--c--></integer>"), nil),
            (plist("<string>a<!--c-->b</string>"), nil),
            (plist("<string>a<b/>c</string>"), nil),
            (plist("<string>a</string >x"), nil),
            (plist("<string a>x</string>"), nil),
            (plist("<string/ >"), nil),
            (plist("<string>a</strin>"), nil),
            (plist("<string>a</stringx>"), nil),
            (plist("< string>a</string>"), nil),
            (plist("<string>a< /string>"), nil),
            (plist("<string>a"), nil),
            (plist("<string>a</"), nil),
        ])
    }

    func testXMLTextEntitiesAndCDATA() {
        func string(_ content: String) -> String { plist("<string>\(content)</string>") }
        assertXML([
            (string("&lt;&gt;&amp;&apos;&quot;"), .string("<>&'\"")),
            (string("&#65;&#x42;&#x63;"), .string("ABc")),
            (string("&#x1F511;&#128273;&#xe9;&#xE9;&#00000065;"), .string("\u{1F511}\u{1F511}\u{e9}\u{e9}A")),
            // Control characters pass here; the entitlements checks refuse them in names.
            (string("a&#0;b&#x1;c&#9;"), .string("a\u{0}b\u{1}c\t")),
            (string("a>b]]>c\"d'e"), .string("a>b]]>c\"d'e")),
            (string("<![CDATA[<a>&amp;]]>x<![CDATA[]]>&amp;<![CDATA[]]]]>"), .string("<a>&amp;x&]]")),
            (plist("<dict><key><![CDATA[k]]>&#x65;y</key><string/></dict>"), .dictionary(["key": .string("")])),
            (plist("<integer>&#49;&amp;</integer>"), .other),
            (string("caf\u{e9} \u{1F511}"), .string("caf\u{e9} \u{1F511}")),
            // Refused:
            (string("&foo;"), nil),
            (string("&LT;"), nil),
            (string("&lt"), nil),
            (string("&amp"), nil),
            (string("a & b"), nil),
            (string("&#;"), nil),
            (string("&#x;"), nil),
            (string("&#X41;"), nil),
            (string("&#x41"), nil),
            (string("&#-1;"), nil),
            (string("&#1a;"), nil),
            (string("&#xg;"), nil),
            (string("&#000000065;"), nil),
            (string("&#xD800;"), nil),
            (string("&#xDFFF;"), nil),
            (string("&#x110000;"), nil),
            (string("&#xFFFFFFFF;"), nil),
            (string("&#99999999;"), nil),
            (string("<![CDATA[abc"), nil),
            (string("<![CDATA[abc]]"), nil),
            (string("<![CDAT[abc]]>"), nil),
            (plist("<integer>&</integer>"), nil),
            ("<plist version=\"&bad;\"><dict/></plist>", nil),
        ])
    }

    func testXMLRefusesInvalidUTF8AnywhereEvenWhereNothingReadsIt() {
        for bytes: [UInt8] in [[0xff], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0x80]] {
            for (before, after) in [("<dict><key>x</key><string>", "</string></dict>"), ("<!-- ", " --><dict/>"), ("<dict/><!-- ", " -->")] {
                let document = Array("<plist>\(before)".utf8) + bytes + Array("\(after)</plist>".utf8)
                assertMalformed(try XMLPropertyList.parse(document), "\(bytes) in \(before)")
            }
        }
    }

    func testXMLKeepsTheLastOfTwoEqualKeys() {
        XCTAssertEqual(try xml(plist("<dict><key>a</key><string>first</string><key>b</key><true/><key>a</key><string>second</string></dict>")),
                       .dictionary(["a": .string("second"), "b": .other]))
    }

    func testXMLUIDIsNotADictionary() {
        XCTAssertEqual(try xml(plist("<dict><key>CF$UID</key><integer>1</integer></dict>")), .other)
        XCTAssertEqual(try xml(plist("<dict><key>CF$UID</key><integer>1</integer><key>b</key><true/></dict>")),
                       .dictionary(["CF$UID": .other, "b": .other]))
    }

    func testXMLDepthLimit() {
        let limit = DocumentValue.maximumDepth
        XCTAssertNoThrow(try xml(plist(String(repeating: "<array>", count: limit) + String(repeating: "</array>", count: limit))))
        assertMalformed(try xml(plist(String(repeating: "<array>", count: limit + 1) + String(repeating: "</array>", count: limit + 1))))
        XCTAssertNoThrow(try xml(plist(String(repeating: "<dict><key>a</key>", count: limit) + "<dict/>" + String(repeating: "</dict>", count: limit))))
        assertMalformed(try xml(plist(String(repeating: "<dict><key>a</key>", count: limit + 1) + "<true/>" + String(repeating: "</dict>", count: limit + 1))))
    }

    func testEveryTruncationIsRefused() {
        let xcode = Array(EntitlementsTests.xcode.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        XCTAssertNoThrow(try XMLPropertyList.parse(xcode))
        for end in 0..<xcode.count {
            assertMalformed(try XMLPropertyList.parse(Array(xcode[..<end])), "first \(end) bytes")
        }
        let jsonDocument = Array(#"{"a": ["b", 1.5e3, {"c": null}], "d": "\u00e9\ud83d\udd11", "e": true}"#.utf8)
        XCTAssertNoThrow(try JSONDocument.parse(jsonDocument))
        for end in 0..<jsonDocument.count {
            assertMalformed(try JSONDocument.parse(Array(jsonDocument[..<end])), "first \(end) bytes")
        }
        let binary = try! Self.binaryEncoded(Self.sampleNode)
        XCTAssertNoThrow(try BinaryPropertyList.parse(binary))
        for end in 0..<binary.count {
            assertMalformed(try BinaryPropertyList.parse(Array(binary[..<end])), "first \(end) bytes")
        }
    }

    // MARK: - Binary property lists

    /// A binary property list of `objects` (each its encoded bytes), as
    /// Apple lays them out: header, objects, offset table, trailer.
    static func bplist(_ objects: [[UInt8]], top: Int = 0, referenceSize: Int = 1, offsetSize: Int? = nil,
                       header: String = "bplist00") -> [UInt8] {
        var out = Array(header.utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(out.count)
            out += object
        }
        let table = out.count
        let size = offsetSize ?? (table < 256 ? 1 : table < 65536 ? 2 : 4)
        for offset in offsets { appendBigEndian(offset, size, to: &out) }
        out += [0, 0, 0, 0, 0, 0, UInt8(size), UInt8(referenceSize)]
        out += bigEndian(objects.count, 8) + bigEndian(top, 8) + bigEndian(table, 8)
        return out
    }

    static func bigEndian(_ value: Int, _ size: Int) -> [UInt8] {
        var out: [UInt8] = []
        appendBigEndian(value, size, to: &out)
        return out
    }

    /// `value`'s low `size` bytes, most significant first, onto `out`: a
    /// plain loop, since a map (or flatMap) per reference, unspecialized in the
    /// test build, was most of making the documents of 100,000 and 200,000
    /// references (issue 38).
    static func appendBigEndian(_ value: Int, _ size: Int, to out: inout [UInt8]) {
        var shift = 8 * (size - 1)
        while shift >= 0 {
            out.append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
    }

    /// An object marker with its count: in the low nibble, or after it.
    static func marker(_ high: UInt8, _ count: Int) -> [UInt8] {
        count < 15 ? [high | UInt8(count)] : [high | 0x0f, 0x13] + bigEndian(count, 8)
    }

    static func ascii(_ text: String) -> [UInt8] { marker(0x50, text.utf8.count) + Array(text.utf8) }
    static func utf16(_ units: [UInt16]) -> [UInt8] { marker(0x60, units.count) + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] } }
    static func array(_ references: [Int], size: Int = 1, high: UInt8 = 0xa0) -> [UInt8] {
        var out = marker(high, references.count)
        out.reserveCapacity(out.count + references.count * size)
        for reference in references { appendBigEndian(reference, size, to: &out) }
        return out
    }
    static func dict(_ keys: [Int], _ values: [Int], size: Int = 1) -> [UInt8] {
        var out = marker(0xd0, keys.count)
        for reference in keys + values { appendBigEndian(reference, size, to: &out) }
        return out
    }

    func binary(_ bytes: [UInt8]) throws -> DocumentValue { try BinaryPropertyList.parse(bytes) }

    /// `{"k": <object 2>}` with `object` as object 2, then `more`.
    func keyed(_ object: [UInt8], _ more: [[UInt8]] = []) -> [UInt8] {
        Self.bplist([Self.dict([1], [2]), Self.ascii("k"), object] + more)
    }

    func testBinaryObjectTypes() throws {
        let cases: [([UInt8], DocumentValue)] = [
            (Self.ascii("T.a"), .string("T.a")),
            (Self.ascii(""), .string("")),
            (Self.ascii(String(repeating: "x", count: 300)), .string(String(repeating: "x", count: 300))),
            ([0x5f, 0x10, 3] + Array("abc".utf8), .string("abc")),
            ([0x5f, 0x11, 0, 3] + Array("abc".utf8), .string("abc")),
            ([0x5f, 0x12, 0, 0, 0, 3] + Array("abc".utf8), .string("abc")),
            (Self.ascii("a\u{0}b"), .string("a\u{0}b")),
            (Self.utf16([0x54, 0x2e, 0xe9, 0xd83d, 0xdd11]), .string("T.\u{e9}\u{1F511}")),
            (Self.utf16([]), .string("")),
            ([0x00], .null),
            ([0x08], .other),
            ([0x09], .other),
            ([0x10, 1], .other),
            ([0x11, 1, 2], .other),
            ([0x12] + [UInt8](repeating: 1, count: 4), .other),
            ([0x13] + [UInt8](repeating: 1, count: 8), .other),
            ([0x14] + [UInt8](repeating: 1, count: 16), .other),
            ([0x22] + [UInt8](repeating: 1, count: 4), .other),
            ([0x23] + [UInt8](repeating: 1, count: 8), .other),
            ([0x33] + [UInt8](repeating: 1, count: 8), .other),
            ([0x40], .other),
            ([0x43, 1, 2, 3], .other),
            ([0x4f, 0x10, 2, 1, 2], .other),
            ([0x80, 1], .other),
            ([0x8f] + [UInt8](repeating: 1, count: 16), .other),
            (Self.array([]), .array([])),
            (Self.array([1, 1]), .array([.string("k"), .string("k")])),
            (Self.array([1], high: 0xc0), .other),
            (Self.dict([], []), .dictionary([:])),
            (Self.dict([1], [1]), .dictionary(["k": .string("k")])),
            // A key that is not a string: not read as a dictionary, as Foundation did not.
            (Self.dict([1, 3], [1, 1]), .other),
        ]
        for (object, expected) in cases {
            XCTAssertEqual(try binary(keyed(object, [[0x10, 7]])), .dictionary(["k": expected]), "\(object)")
        }
        XCTAssertEqual(try binary(Self.bplist([Self.ascii("top")])), .string("top"))
        XCTAssertEqual(try binary(Self.bplist([Self.ascii("top")], header: "bplist01")), .string("top"))
    }

    func testBinaryRefusesMalformedObjects() {
        // Each is the last object, so that a short one runs into the offset table.
        let cases: [[UInt8]] = [
            [0x01], [0x07], [0x0c], [0x0f],
            [0x15] + [UInt8](repeating: 0, count: 32), [0x10], [0x11, 1], [0x14] + [UInt8](repeating: 0, count: 15),
            [0x20, 1], [0x21, 1, 2], [0x24] + [UInt8](repeating: 0, count: 16), [0x22, 1, 2, 3],
            [0x30] + [UInt8](repeating: 0, count: 8), [0x34] + [UInt8](repeating: 0, count: 8), [0x33, 1],
            [0x43, 1, 2], [0x4f, 0x10], [0x4f, 0x10, 5, 1], [0x4f, 0x20, 1, 1], [0x4f, 0x14] + [UInt8](repeating: 0, count: 16),
            [0x53, 0x61, 0x62], [0x52, 0x61, 0xe9], [0x52, 0xc3, 0xa9],
            Self.utf16([0xd800]), Self.utf16([0xdc00, 0x41]), Self.utf16([0x41, 0xd83d]), [0x62, 0, 0x41, 0],
            [0x81, 1], [0x8f, 1],
            [0x70], [0x90], [0xb0], [0xe0], [0xf0], [0xff],
            [0xa1], [0xa2, 1], [0xa1, 9], [0xd1, 1], [0xd1, 1, 9], [0xd1, 9, 1],
            // Two equal keys; Foundation kept one of them at random.
            Self.dict([1, 1], [1, 1]),
        ]
        for object in cases {
            assertMalformed(try binary(keyed(object)), "\(object)")
        }
        // Equal keys written as two objects, one ASCII and one UTF-16.
        assertMalformed(try binary(keyed(Self.dict([1, 3], [1, 1]), [Self.utf16([0x6b])])))
    }

    func testBinaryTrailerAndOffsetTable() {
        let good = Self.bplist([Self.dict([1], [2]), Self.ascii("k"), Self.ascii("v")])
        XCTAssertNoThrow(try binary(good))
        let trailer = good.count - 32
        func forged(_ position: Int, _ bytes: [UInt8]) -> [UInt8] {
            var copy = good
            copy.replaceSubrange(position..<position + bytes.count, with: bytes)
            return copy
        }
        let cases: [(String, [UInt8])] = [
            ("offset size 0", forged(trailer + 6, [0])),
            ("offset size 9", forged(trailer + 6, [9])),
            ("offset size 2", forged(trailer + 6, [2])),
            ("reference size 0", forged(trailer + 7, [0])),
            ("reference size 200", forged(trailer + 7, [200])),
            ("no objects", forged(trailer + 8, Self.bigEndian(0, 8))),
            ("more objects", forged(trailer + 8, Self.bigEndian(4, 8))),
            ("object count 2^64-1", forged(trailer + 8, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])),
            ("top past the objects", forged(trailer + 16, Self.bigEndian(3, 8))),
            ("top 2^63", forged(trailer + 16, [0x80, 0, 0, 0, 0, 0, 0, 0])),
            ("table at 8", forged(trailer + 24, Self.bigEndian(8, 8))),
            ("table past the end", forged(trailer + 24, Self.bigEndian(good.count, 8))),
            ("table 2^64-9", forged(trailer + 24, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf7])),
            ("offset into the header", forged(trailer - 1, [2])),
            ("offset at the table", forged(trailer - 1, [UInt8(trailer - 3)])),
            ("offset past the end", forged(trailer - 1, [0xff])),
            ("bad magic", forged(0, Array("bplist10".utf8))),
            ("extra byte", good + [0]),
            ("byte missing", Array(good.dropFirst())),
            ("too short", Array("bplist00".utf8) + [0x08] + [UInt8](repeating: 0, count: 31)),
            ("reference too narrow for the objects", Self.bplist([Self.array(Array(1...256))] + [[UInt8]](repeating: [0x08], count: 256))),
            ("reference to no object", Self.bplist([Self.dict([1], [3]), Self.ascii("k"), Self.ascii("v")])),
        ]
        for (what, bytes) in cases {
            assertMalformed(try binary(bytes), what)
        }
        // 2-byte references and offsets, as Apple writes them for bigger files.
        XCTAssertEqual(try binary(Self.bplist([Self.dict([1], [2], size: 2), Self.ascii("k"), Self.ascii("v")], referenceSize: 2, offsetSize: 2)),
                       .dictionary(["k": .string("v")]))
    }

    func testBinaryRefusesCycles() {
        let cycles: [(String, [UInt8])] = [
            ("dictionary holding itself", Self.bplist([Self.dict([1], [0]), Self.ascii("k")])),
            ("array holding itself", keyed(Self.array([2]))),
            ("set holding itself", keyed(Self.array([2], high: 0xc0))),
            ("two arrays holding each other", keyed(Self.array([3]), [Self.array([2])])),
            ("dictionary key is the dictionary", Self.bplist([Self.dict([0], [1]), Self.ascii("k")])),
            ("long cycle", keyed(Self.array([3]), (3..<50).map { Self.array([$0 + 1]) } + [Self.array([2])])),
        ]
        for (what, bytes) in cycles {
            assertMalformed(try binary(bytes), what)
        }
    }

    func testBinarySharedObjectsAreReadOnceAndCountTowardTheDepth() throws {
        // Each array holds the next twice: 2^60 paths through 60 objects.
        let doubling = Self.bplist([Self.dict([1], [2]), Self.ascii("k")] + (2..<62).map { Self.array([$0 + 1, $0 + 1]) } + [Self.ascii("leaf")])
        assertQuick("a doubling DAG") {
            // Walked down one side: comparing whole trees would take the 2^60 paths.
            guard case .dictionary(let top)? = try? binary(doubling), var node = top["k"] else { return XCTFail("refused") }
            for level in 0..<60 {
                guard case .array(let elements) = node, elements.count == 2 else { return XCTFail("level \(level): \(node)") }
                node = elements[1]
            }
            XCTAssertEqual(node, .string("leaf"))
        }
        // A chain read once from near its end, then again from its start: the
        // second read reaches the first's objects deeper than the limit.
        let limit = DocumentValue.maximumDepth
        let chain = (0..<limit + 10).map { Self.array([$0 + 2], size: 2) } + [Self.ascii("end")]
        let top = Self.array([limit - 5 + 1, 1], size: 2)
        assertMalformed(try binary(Self.bplist([top] + chain, referenceSize: 2, offsetSize: 2)), "a chain reused deeper")
        let shallow = Self.array([limit - 5 + 1, limit - 10 + 1], size: 2)
        XCTAssertNoThrow(try binary(Self.bplist([shallow] + chain, referenceSize: 2, offsetSize: 2)), "a chain reused within the limit")
    }

    func testBinaryHostileInputIsRefusedQuickly() {
        // Counts forged to the largest values their integers hold, over a few real bytes.
        for high: UInt8 in [0x40, 0x50, 0x60, 0xa0, 0xc0, 0xd0] {
            for count: [UInt8] in [[0x13, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], [0x13, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                                   [0x13, 0x40, 0, 0, 0, 0, 0, 0, 0], [0x12, 0xff, 0xff, 0xff, 0xff], [0x10, 0xff]] {
                let bytes = keyed([high | 0x0f] + count + [1, 1, 1, 1])
                assertQuick("forged count \(high) \(count)") { assertMalformed(try binary(bytes), "forged count \(high) \(count)") }
            }
        }
        // Deeper than the limit: a chain of 100,000 arrays.
        let chain = Self.bplist((0..<100_000).map { Self.array([$0 + 1], size: 4) } + [Self.ascii("end")], referenceSize: 4, offsetSize: 4)
        assertQuick("a chain of 100,000 arrays") { assertMalformed(try binary(chain)) }
        // An array of 200,000 references to one string: read once, shared.
        let wide = Self.bplist([Self.dict([1], [2]), Self.ascii("k"), Self.array([Int](repeating: 3, count: 200_000)), Self.ascii("v")])
        assertQuick("200,000 references to one string") {
            XCTAssertEqual(try? binary(wide), .dictionary(["k": .array([DocumentValue](repeating: .string("v"), count: 200_000))]))
        }
    }

    func testJSONAndXMLHostileNestingIsRefusedQuickly() {
        for count in [DocumentValue.maximumDepth + 1, 100_000] {
            let deepJSON = #"{"a":"# + String(repeating: "[", count: count) + String(repeating: "]", count: count) + "}"
            assertQuick("\(count) nested JSON arrays") { assertMalformed(try json(deepJSON)) }
            assertQuick("\(count) unclosed JSON arrays") { assertMalformed(try json("{\"a\":" + String(repeating: "[", count: count))) }
            let deepXML = plist(String(repeating: "<array>", count: count) + String(repeating: "</array>", count: count))
            assertQuick("\(count) nested XML arrays") { assertMalformed(try xml(deepXML)) }
            assertQuick("\(count) unclosed XML dicts") { assertMalformed(try xml(plist(String(repeating: "<dict><key>a</key>", count: count)))) }
        }
        let manyComments = plist(String(repeating: "<!---->", count: 100_000) + "<dict/>")
        assertQuick("100,000 comments") { XCTAssertNoThrow(try xml(manyComments)) }
        let unterminated = plist("<dict><key>a</key><string>" + String(repeating: "<![CDATA[", count: 50_000))
        assertQuick("50,000 unterminated CDATA openings") { assertMalformed(try xml(unterminated)) }
    }

    // MARK: - Entitlements.parse

    func parse(_ text: String) throws -> Entitlements { try Entitlements.parse(Array(text.utf8), name: "t") }

    func assertRefused(_ bytes: [UInt8], _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try Entitlements.parse(bytes, name: "t"), file: file, line: line) { error in
            XCTAssertEqual((error as? KeychainError)?.message, "t: \(message)", file: file, line: line)
        }
    }

    func testJSONNullIsAbsentAsWithFoundation() throws {
        XCTAssertEqual(try parse(#"{"keychain-access-groups": null, "application-identifier": "T.app"}"#).accessGroups, ["T.app"])
        XCTAssertEqual(try parse(#"{"application-identifier": null, "com.apple.application-identifier": "T.mac"}"#).applicationIdentifier, "T.mac")
        XCTAssertEqual(try parse(#"{"com.apple.application-identifier": null, "keychain-access-groups": ["T.a"]}"#).accessGroups, ["T.a"])
        XCTAssertEqual(try parse(#"{"com.apple.security.application-groups": null, "keychain-access-groups": ["T.a"]}"#).accessGroups, ["T.a"])
        assertRefused(Array(#"{"keychain-access-groups": null}"#.utf8), "no access group: give keychain-access-groups, application-identifier or com.apple.security.application-groups")
        assertRefused(Array(#"{"keychain-access-groups": ["T.a", null]}"#.utf8), "keychain-access-groups must be an array of strings")
        // A binary property list's null object too.
        let binary = Self.bplist([Self.dict([1, 2], [3, 4]), Self.ascii("application-identifier"), Self.ascii("keychain-access-groups"),
                                  [0x00], Self.array([5]), Self.ascii("T.a")])
        XCTAssertEqual(try Entitlements.parse(binary, name: "t").accessGroups, ["T.a"])
    }

    func testEqualKeysJSONFirstXMLLastBinaryRefused() throws {
        XCTAssertEqual(try parse(#"{"application-identifier": "T.first", "application-identifier": "T.second"}"#).accessGroups, ["T.first"])
        XCTAssertEqual(try parse(#"{"keychain-access-groups": ["T.a"], "keychain-access-groups": 1}"#).accessGroups, ["T.a"])
        XCTAssertEqual(try parse(plist("<dict><key>application-identifier</key><string>T.first</string><key>application-identifier</key><string>T.second</string></dict>")).accessGroups,
                       ["T.second"])
        XCTAssertThrowsError(try parse(plist("<dict><key>keychain-access-groups</key><array><string>T.a</string></array><key>keychain-access-groups</key><true/></dict>"))) {
            XCTAssertEqual(($0 as? KeychainError)?.message, "t: keychain-access-groups must be an array of strings")
        }
        let binary = Self.bplist([Self.dict([1, 2], [3, 4]), Self.ascii("application-identifier"), Self.ascii("application-identifier"),
                                  Self.ascii("T.first"), Self.ascii("T.second")])
        assertRefused(binary, "malformed: not a valid property list")
    }

    func testDollarNullIsAString() throws {
        // Foundation's decoders read "$null" (its encoders' mark for nil) as
        // null; Apple's own property list parser reads it as a string, and so does locket.
        XCTAssertEqual(try parse(plist("<dict><key>keychain-access-groups</key><array><string>$null</string></array></dict>")).accessGroups, ["$null"])
        XCTAssertEqual(try parse(#"{"keychain-access-groups": ["$null"]}"#).accessGroups, ["$null"])
    }

    func testMessagesForEachFormat() {
        assertRefused(Array("bplist".utf8), "malformed: not a valid property list")
        assertRefused(Array(#"bplist = x; "keychain-access-groups" = ("T.a");"#.utf8), "malformed: not a valid property list")
        assertRefused(Array("<plist><dict>".utf8), "malformed: not a valid property list")
        assertRefused(Array(#"{"a": 01}"#.utf8), "malformed: not a valid JSON object")
        assertRefused(Array("<plist><array/></plist>".utf8), "malformed: the top level must be a dictionary")
        assertRefused(Self.bplist([Self.array([])]), "malformed: the top level must be a dictionary")
        assertRefused(Self.bplist([[0x00]]), "malformed: the top level must be a dictionary")
        assertRefused(Self.bplist([Self.dict([1], [1]), [0x10, 1]]), "malformed: the top level must be a dictionary")
        assertRefused(Array(plist("<dict><key>CF$UID</key><integer>1</integer></dict>").utf8), "malformed: the top level must be a dictionary")
        assertRefused(Array(" \n".utf8), "not an entitlements file (expected an XML property list or a JSON object)")
        assertRefused(Array("\u{FEFF}".utf8), "not an entitlements file (expected an XML property list or a JSON object)")
        // Of two wrongly typed keys the first in Foundation's order is reported, whatever the file's order.
        assertRefused(Array(#"{"com.apple.security.application-groups": 1, "com.apple.application-identifier": 2, "application-identifier": 3}"#.utf8),
                      "application-identifier must be a string")
        assertRefused(Array(#"{"application-identifier": 1, "keychain-access-groups": 2}"#.utf8), "keychain-access-groups must be an array of strings")
        let utf16Group = Self.bplist([Self.dict([1], [2]), Self.ascii("keychain-access-groups"), Self.array([3]), Self.utf16([0x54, 0x2e, 0xe9])])
        XCTAssertEqual(try? Entitlements.parse(utf16Group, name: "t").accessGroups, ["T.\u{e9}"])
    }

    /// Foundation's decoders crashed the process on these two (found while
    /// replacing them): a binary property list whose dictionary count is
    /// near 2^63, and XML nested 100,000 deep (a stack overflow).
    func testInputsThatCrashedFoundationAreRefused() {
        let forged = Self.bplist([[0xdf, 0x13, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 1]])
        assertRefused(forged, "malformed: not a valid property list")
        let deep = plist("<dict><key>x</key>" + String(repeating: "<array>", count: 100_000) + String(repeating: "</array>", count: 100_000) + "</dict>")
        assertRefused(Array(deep.utf8), "malformed: not a valid property list")
    }

    // MARK: - Differential: the same keys as Foundation's decoders

    /// What the entitlements code reads from a document: the four keys, the
    /// key with the wrong type (or "top level"), or a refusal.
    enum Outcome: Equatable, CustomStringConvertible {
        case keys([String?])
        case wrongType(String)
        case malformed
        case notEntitlements

        var description: String {
            switch self {
            case .keys(let keys): "keys \(keys.map { $0 ?? "nil" })"
            case .wrongType(let key): "wrong type \(key)"
            case .malformed: "malformed"
            case .notEntitlements: "not entitlements"
            }
        }

        var parsed: Bool { if case .keys = self { true } else if case .wrongType = self { true } else { false } }
    }

    /// The four keys as Foundation decoded them for locket before.
    struct FoundationKeys: Decodable {
        var keychainAccessGroups: [String]?
        var applicationIdentifier: String?
        var appleApplicationIdentifier: String?
        var applicationGroups: [String]?

        enum CodingKeys: String, CodingKey {
            case keychainAccessGroups = "keychain-access-groups"
            case applicationIdentifier = "application-identifier"
            case appleApplicationIdentifier = "com.apple.application-identifier"
            case applicationGroups = "com.apple.security.application-groups"
        }
    }

    static func flatten(_ groups: [String]?, _ id: String?, _ appleID: String?, _ appGroups: [String]?) -> [String?] {
        [groups.map { "\($0)" }, id, appleID, appGroups.map { "\($0)" }]
    }

    /// The old code's decoding step, verbatim but for the result type.
    static func foundationOutcome(_ bytes: [UInt8]) -> Outcome {
        let first = bytes.first { ![0x20, 0x09, 0x0a, 0x0d, 0xef, 0xbb, 0xbf].contains($0) }
        func key(_ path: [any CodingKey]) -> String {
            path.first.flatMap { FoundationKeys.CodingKeys(stringValue: $0.stringValue)?.rawValue } ?? "top level"
        }
        do {
            let raw: FoundationKeys
            if first == UInt8(ascii: "{") {
                raw = try JSONDecoder().decode(FoundationKeys.self, from: Data(bytes))
            } else if first == UInt8(ascii: "<") || bytes.starts(with: Array("bplist".utf8)) {
                raw = try PropertyListDecoder().decode(FoundationKeys.self, from: Data(bytes))
            } else {
                return .notEntitlements
            }
            return .keys(flatten(raw.keychainAccessGroups, raw.applicationIdentifier, raw.appleApplicationIdentifier, raw.applicationGroups))
        } catch let DecodingError.typeMismatch(_, context) {
            return .wrongType(key(context.codingPath))
        } catch let DecodingError.valueNotFound(_, context) {
            return .wrongType(key(context.codingPath))
        } catch {
            return .malformed
        }
    }

    static func newOutcome(_ bytes: [UInt8]) -> Outcome {
        do {
            let raw = try RawEntitlements(bytes) { KeychainError(.param, $0) }
            return .keys(flatten(raw.keychainAccessGroups, raw.applicationIdentifier, raw.appleApplicationIdentifier, raw.applicationGroups))
        } catch {
            let message = (error as? KeychainError)?.message ?? "\(error)"
            if message.hasPrefix("not an entitlements file") { return .notEntitlements }
            if message.hasPrefix("malformed: not a valid") { return .malformed }
            if message.hasPrefix("malformed: the top level") { return .wrongType("top level") }
            return .wrongType(String(message.prefix { $0 != " " }))
        }
    }

    /// A small deterministic generator (SplitMix64), so that a failure repeats.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
    }

    /// A property-list or JSON value to encode.
    indirect enum Node: Encodable {
        case string(String)
        case array([Node])
        case dictionary([(String, Node)])
        case integer(Int)
        case real(Double)
        case bool(Bool)
        case date(Date)
        case data(Data)
        case null

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .array(let elements):
                var container = encoder.unkeyedContainer()
                for element in elements { try container.encode(element) }
            case .dictionary(let entries):
                var container = encoder.container(keyedBy: Key.self)
                for (key, value) in entries { try container.encode(value, forKey: Key(stringValue: key)) }
            default:
                var container = encoder.singleValueContainer()
                switch self {
                case .string(let string): try container.encode(string)
                case .integer(let integer): try container.encode(integer)
                case .real(let real): try container.encode(real)
                case .bool(let bool): try container.encode(bool)
                case .date(let date): try container.encode(date)
                case .data(let data): try container.encode(data)
                default: try container.encodeNil()
                }
            }
        }

        /// For JSONSerialization.
        var object: Any {
            switch self {
            case .string(let string): string
            case .array(let elements): elements.map(\.object)
            case .dictionary(let entries): Dictionary(entries.map { ($0.0, $0.1.object) }, uniquingKeysWith: { first, _ in first })
            case .integer(let integer): integer
            case .real(let real): real
            case .bool(let bool): bool
            case .date(let date): date.timeIntervalSinceReferenceDate
            case .data(let data): data.base64EncodedString()
            case .null: NSNull()
            }
        }
    }

    static let sampleNode = Node.dictionary([
        ("keychain-access-groups", .array([.string("T.a"), .string("T.caf\u{e9}")])),
        ("application-identifier", .string("T.app")),
        ("other", .array([.integer(1), .bool(true), .real(1.5), .data(Data([1, 2])), .dictionary([("x", .string("y"))])])),
    ])

    static func binaryEncoded(_ node: Node) throws -> [UInt8] {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return Array(try encoder.encode(node))
    }

    static func xmlEncoded(_ node: Node) throws -> [UInt8] {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .xml
        return Array(try encoder.encode(node))
    }

    /// Builds random documents that stress what the parsers must agree on:
    /// the four keys with values of every type, odd strings, nesting.
    struct DocumentMaker {
        var rng: SeededGenerator

        static let fragments = ["T.", "group.", "com.example.", "a", "Z9", "-", "_", " ", "caf\u{e9}", "e\u{301}", "\u{1F511}", "\u{4E2D}",
                                "<", ">", "&", "'", "\"", "\\", "/", "]]>", "<!--", "&amp;", "$(AppIdentifierPrefix)", "$(TeamIdentifierPrefix)",
                                "\n", "\t", "\r", "\u{1}", "\u{7F}", "\u{85}", "\u{9B}", "\u{FFFD}", "\u{FEFF}", "\u{10FFFF}", "x y"]
        static let knownKeys = ["keychain-access-groups", "application-identifier", "com.apple.application-identifier",
                                "com.apple.security.application-groups"]
        static let otherKeys = ["aps-environment", "com.apple.security.app-sandbox", "nested", "", " ", "k\u{e9}y", "\u{1F511}",
                                "keychain-access-groups ", "Keychain-Access-Groups", "keychain-access-group", "a<b&c"]

        mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }

        mutating func string() -> String {
            var out = ""
            for _ in 0..<Int.random(in: 0...4, using: &rng) { out += Self.fragments.randomElement(using: &rng)! }
            return out
        }

        mutating func scalar(null: Bool) -> Node {
            switch Int.random(in: 0..<(null ? 8 : 7), using: &rng) {
            case 0, 1: .string(string())
            case 2: .integer(Int.random(in: -1_000_000...1_000_000, using: &rng))
            case 3: .real(Double(Int.random(in: -1000...1000, using: &rng)) / 8)
            case 4: .bool(chance(50))
            case 5: .date(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...1_000_000_000, using: &rng))))
            case 6: .data(Data((0..<Int.random(in: 0...6, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
            default: .null
            }
        }

        mutating func value(depth: Int, null: Bool) -> Node {
            let pick = Int.random(in: 0..<10, using: &rng)
            if pick < 2 && depth < 4 { return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in value(depth: depth + 1, null: null) }) }
            if pick == 2 && depth < 4 { return dictionary(depth: depth + 1, null: null, known: false) }
            if pick == 3 || pick == 4 { return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in .string(string()) }) }
            return scalar(null: null)
        }

        mutating func dictionary(depth: Int, null: Bool, known: Bool) -> Node {
            var keys = (0..<Int.random(in: 0...4, using: &rng)).map { _ in Self.otherKeys.randomElement(using: &rng)! }
            if known { keys += Self.knownKeys.filter { _ in chance(60) } }
            keys.shuffle(using: &rng)
            var seen = Set<String>()
            keys = keys.filter { seen.insert($0).inserted }
            return .dictionary(keys.map { key in
                if Self.knownKeys.contains(key), chance(80) {
                    // Mostly what entitlements hold: an array of strings, or a string.
                    return (key, key.hasSuffix("identifier") ? .string(string()) : .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in .string(string()) }))
                }
                return (key, value(depth: depth, null: null))
            })
        }

        /// A top-level value: nearly always a dictionary with some of the known keys.
        mutating func document(null: Bool) -> Node {
            chance(95) ? dictionary(depth: 1, null: null, known: true) : value(depth: 1, null: null)
        }

        // MARK: Hand-written encodings, with what Foundation's encoders never write

        mutating func space() -> String { ["", "", " ", "\n", "\t", "\r\n", "  \n  "].randomElement(using: &rng)! }

        mutating func json(_ node: Node) -> String {
            switch node {
            case .string(let string):
                var out = "\""
                for scalar in string.unicodeScalars {
                    switch scalar {
                    case "\"": out += "\\\""
                    case "\\": out += "\\\\"
                    case "/": out += chance(50) ? "\\/" : "/"
                    case "\n": out += chance(50) ? "\\n" : "\\u000a"
                    case "\t": out += "\\t"
                    case "\r": out += "\\r"
                    case _ where scalar.value < 0x20 || chance(15):
                        if scalar.value > 0xffff {
                            let v = scalar.value - 0x10000
                            out += String(format: "\\u%04x\\u%04X", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff))
                        } else {
                            out += String(format: chance(50) ? "\\u%04x" : "\\u%04X", scalar.value)
                        }
                    default: out.unicodeScalars.append(scalar)
                    }
                }
                return out + "\""
            case .array(let elements):
                return "[" + space() + elements.map { json($0) }.joined(separator: space() + "," + space()) + space() + "]"
            case .dictionary(var entries):
                // A repeated key with another value: JSON keeps the first.
                if let first = entries.first, chance(10) { entries.append((first.0, .integer(1))) }
                return "{" + space() + entries.map { json(.string($0.0)) + space() + ":" + space() + json($0.1) }.joined(separator: "," + space()) + space() + "}"
            case .integer(let integer): return String(integer)
            case .real(let real): return chance(50) ? "\(real)" : String(format: "%.3E", real)
            case .bool(let bool): return bool ? "true" : "false"
            case .date(let date): return String(date.timeIntervalSinceReferenceDate)
            case .data(let data): return json(.string(data.base64EncodedString()))
            case .null: return "null"
            }
        }

        mutating func misc() -> String {
            switch Int.random(in: 0..<12, using: &rng) {
            case 0: "<!-- a comment -- with dashes -->"
            case 1: "<?pi some data?>"
            case 2: "\n\t"
            default: space()
            }
        }

        mutating func xmlText(_ string: String, cdata: Bool) -> String {
            var out = ""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "<": out += chance(50) ? "&lt;" : "&#60;"
                case "&": out += chance(50) ? "&amp;" : "&#x26;"
                case ">": out += chance(50) ? "&gt;" : ">"
                case "'": out += chance(50) ? "&apos;" : "'"
                case "\"": out += chance(50) ? "&quot;" : "\""
                case _ where chance(10): out += chance(50) ? "&#\(scalar.value);" : "&#x\(String(scalar.value, radix: 16, uppercase: chance(50)));"
                default: out.unicodeScalars.append(scalar)
                }
            }
            if cdata, !string.contains("]]>"), chance(20) { return "<![CDATA[\(string)]]>" }
            if cdata, chance(10) { return out + "<![CDATA[]]>" }
            return out
        }

        mutating func xml(_ node: Node) -> String {
            switch node {
            case .string(let string):
                return string.isEmpty && chance(50) ? "<string/>" : "<string>\(xmlText(string, cdata: true))</string>"
            case .array(let elements):
                return elements.isEmpty && chance(50) ? "<array/>" : "<array>" + elements.map { misc() + xml($0) }.joined() + misc() + "</array>"
            case .dictionary(var entries):
                // A repeated key with another value: XML property lists keep the last.
                if let first = entries.first, chance(10) { entries.insert((first.0, .integer(1)), at: 0) }
                if entries.isEmpty && chance(50) { return "<dict/>" }
                return "<dict>" + entries.map { misc() + "<key>\(xmlText($0.0, cdata: true))</key>" + misc() + xml($0.1) }.joined() + misc() + "</dict>"
            case .integer(let integer): return "<integer>\(integer)</integer>"
            case .real(let real): return "<real>\(real)</real>"
            case .bool(let bool): return chance(50) ? (bool ? "<true/>" : "<false/>") : (bool ? "<true></true>" : "<false></false>")
            case .date: return "<date>2024-02-29T12:34:56Z</date>"
            case .data(let data): return "<data>\n\t\(data.base64EncodedString())\n\t</data>"
            case .null: return "<string>x</string>"
            }
        }

        mutating func xmlDocument(_ node: Node) -> String {
            var out = chance(20) ? "\u{FEFF}" : ""
            if chance(70) { out += #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n" }
            if chance(70) { out += #"<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">"# + "\n" }
            out += misc()
            let value = xml(node)
            out += chance(90) ? #"<plist version="1.0">"# + misc() + value + misc() + "</plist>" : value
            return out + misc()
        }

        /// `bytes` with one to three random edits: a byte changed, removed,
        /// inserted or repeated, or the end cut off.
        mutating func mutated(_ bytes: [UInt8]) -> [UInt8] {
            var out = bytes
            for _ in 0..<Int.random(in: 1...3, using: &rng) where !out.isEmpty {
                let at = Int.random(in: 0..<out.count, using: &rng)
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: out[at] = UInt8.random(in: 0...255, using: &rng)
                case 1: out[at] = [0x00, 0x0f, 0x10, 0x13, 0x22, 0x3c, 0x3e, 0x2f, 0x26, 0x22, 0x5c, 0x7b, 0x7d, 0xff, 0xd1, 0xa1].randomElement(using: &rng)!
                case 2: out.remove(at: at)
                case 3: out.insert(UInt8.random(in: 0...255, using: &rng), at: at)
                default: out.removeLast(Int.random(in: 1...min(8, out.count), using: &rng))
                }
            }
            return out
        }
    }

    /// Every encoding of each random document gives the same four keys (or
    /// the same wrongly typed key) through the new parsers as through
    /// Foundation's decoders; and a document damaged at random is either
    /// refused or, when the new parsers still read it, read as Foundation
    /// reads it: the new parsers accept nothing Foundation refused.
    func testSameKeysAsFoundationOnRandomDocuments() throws {
        var maker = DocumentMaker(rng: SeededGenerator(state: 0x10c4e7))
        var compared: [String: Int] = [:]
        var parsedMutations = 0
        for round in 0..<600 {
            let jsonNode = maker.document(null: true)
            let plistNode = maker.document(null: false)
            var encodings: [(String, [UInt8])] = [
                ("json (own writer)", Array(maker.json(jsonNode).utf8)),
                ("xml (own writer)", Array(maker.xmlDocument(plistNode).utf8)),
            ]
            if let data = try? JSONEncoder().encode(jsonNode) { encodings.append(("JSONEncoder", Array(data))) }
            if JSONSerialization.isValidJSONObject(jsonNode.object),
               let data = try? JSONSerialization.data(withJSONObject: jsonNode.object, options: round % 2 == 0 ? [.prettyPrinted] : []) {
                encodings.append(("JSONSerialization", Array(data)))
            }
            if let bytes = try? Self.xmlEncoded(plistNode) { encodings.append(("PropertyListEncoder xml", bytes)) }
            if let bytes = try? Self.binaryEncoded(plistNode) { encodings.append(("PropertyListEncoder binary", bytes)) }

            for (encoding, bytes) in encodings {
                let expected = Self.foundationOutcome(bytes)
                let actual = Self.newOutcome(bytes)
                XCTAssertEqual(actual, expected, "round \(round), \(encoding): \(String(decoding: bytes.prefix(600), as: UTF8.self))")
                compared[encoding, default: 0] += 1
                for _ in 0..<3 {
                    let damaged = maker.mutated(bytes)
                    let new = Self.newOutcome(damaged)
                    guard new.parsed || new == .notEntitlements else { continue }
                    parsedMutations += 1
                    let old = Self.foundationOutcome(damaged)
                    XCTAssertEqual(new, old, "round \(round), damaged \(encoding): \(damaged)")
                }
            }
        }
        // Each way of writing documents was exercised, the damaged ones too.
        for encoding in ["json (own writer)", "xml (own writer)", "JSONEncoder", "JSONSerialization", "PropertyListEncoder xml", "PropertyListEncoder binary"] {
            XCTAssertGreaterThan(compared[encoding, default: 0], 500, encoding)
        }
        XCTAssertGreaterThan(parsedMutations, 1000)
    }

    /// The tests' fixtures and the fuzz corpus read as Foundation reads them.
    func testSameKeysAsFoundationOnFixtures() throws {
        var documents = [Array(EntitlementsTests.xcode.utf8), Array(("\u{FEFF}" + EntitlementsTests.xcode).utf8), try Self.binaryEncoded(Self.sampleNode)]
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../fuzz/corpus/FuzzEntitlements").standardized
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus.path)
        XCTAssertGreaterThan(names.count, 3, "the fuzz corpus at \(corpus.path)")
        for name in names { documents.append(Array(try Data(contentsOf: corpus.appendingPathComponent(name)))) }
        var compared = 0
        for document in documents {
            let new = Self.newOutcome(document)
            // Hostile seeds, refused here, may crash Foundation: compare only what the new parsers read.
            guard new.parsed || new == .notEntitlements else { continue }
            XCTAssertEqual(new, Self.foundationOutcome(document), String(decoding: document.prefix(300), as: UTF8.self))
            compared += 1
        }
        XCTAssertGreaterThan(compared, 5)
    }
}
