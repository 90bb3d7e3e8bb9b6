@testable import LocketCLI
import XCTest

/// Issue 16, item 2: the dotenv subset `exec --env-file` reads, case by case
/// as python-dotenv, godotenv and Node's dotenv agree (man page, DOTENV FILES).
final class DotEnvParsingTests: XCTestCase {
    func parse(_ text: String) throws -> [String: String] {
        var out: [String: String] = [:]
        for entry in try DotEnv.parse(Array(text.utf8)) { out[entry.name] = entry.value }
        return out
    }

    func assertMalformed(_ text: String, line: Int, _ reason: String, file: StaticString = #filePath, sourceLine: UInt = #line) {
        XCTAssertThrowsError(try DotEnv.parse(Array(text.utf8)), file: file, line: sourceLine) { error in
            guard let malformed = error as? DotEnv.Malformed else { return XCTFail("\(error)", file: file, line: sourceLine) }
            XCTAssertEqual(malformed.line, line, malformed.reason, file: file, line: sourceLine)
            XCTAssertTrue(malformed.reason.contains(reason), malformed.reason, file: file, line: sourceLine)
        }
    }

    func testPlainLinesCommentsAndExport() throws {
        XCTAssertEqual(try parse("""
            # a comment
              # an indented comment

            A=1
            export B=two words
            C = spaced
            export\tD=tab
            E=
            F=trailing blanks   \t
            G=value # comment
            H=no#comment
            I=#all comment
            J=url=https://x/?a=b&c=d
            export=not a keyword
            """), [
            "A": "1", "B": "two words", "C": "spaced", "D": "tab", "E": "", "F": "trailing blanks",
            "G": "value", "H": "no#comment", "I": "", "J": "url=https://x/?a=b&c=d", "export": "not a keyword",
        ])
    }

    func testQuotes() throws {
        XCTAssertEqual(try parse(#"""
            S='single \n stays $HOME # not a comment'
            D="tab\tnew\nline \"quoted\" back\\slash \q kept"
            E=""
            F=''
            G="a" # comment after the quote
            I="x"#tight comment
            J=a"b'c
            """#), [
            "S": #"single \n stays $HOME # not a comment"#,
            "D": "tab\tnew\nline \"quoted\" back\\slash \\q kept",
            "E": "", "F": "", "G": "a", "I": "x", "J": "a\"b'c",
        ])
    }

    func testMultiLineValuesAndLineNumbers() throws {
        let entries = try DotEnv.parse(Array("A=1\nCERT=\"-----BEGIN-----\nabc\n-----END-----\"\nKEY='x\ny'\nB=2\n".utf8))
        XCTAssertEqual(entries.map(\.name), ["A", "CERT", "KEY", "B"])
        XCTAssertEqual(entries.map(\.line), [1, 2, 5, 7])
        XCTAssertEqual(entries[1].value, "-----BEGIN-----\nabc\n-----END-----")
        XCTAssertEqual(entries[2].value, "x\ny")
    }

    func testCRLFBOMAndLastWins() throws {
        XCTAssertEqual(try parse("\u{FEFF}A=1\r\nB=\"x\r\ny\"\r\nA=2\r\n"), ["A": "2", "B": "x\ny"])
        // No expansion, as in Docker's --env-file and Node's dotenv.
        XCTAssertEqual(try parse("A=$HOME\nB=\"${HOME}\""), ["A": "$HOME", "B": "${HOME}"])
    }

    func testMalformedLines() {
        assertMalformed("A=1\nnot an assignment\n", line: 2, "no = after not")
        assertMalformed("A=1\n1A=2\n", line: 2, "expected NAME=VALUE")
        assertMalformed("A-B=1\n", line: 1, "no = after A")
        assertMalformed("=value\n", line: 1, "expected NAME=VALUE")
        assertMalformed("A=\"open\nstill open\n", line: 1, "double-quoted value of A is not closed")
        assertMalformed("B='open\n", line: 1, "single-quoted value of B is not closed")
        assertMalformed("A=1\nC=\"x\" junk\n", line: 2, "after the closing quote of C")
        assertMalformed("D=\"x\ny\" junk\n", line: 2, "after the closing quote of D")
        // Two quoted strings side by side are no value (the libraries skip or refuse the line).
        assertMalformed("H='it''s'\n", line: 1, "after the closing quote of H")
        XCTAssertThrowsError(try DotEnv.parse([UInt8]("A=".utf8) + [0xff, 0x0a]))
        XCTAssertThrowsError(try DotEnv.parse([UInt8]("A=\"".utf8) + [0x00] + [UInt8]("\"".utf8)))
    }
}
