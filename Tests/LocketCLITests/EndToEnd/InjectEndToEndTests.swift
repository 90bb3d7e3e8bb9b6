import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 16, item 1: `locket inject` renders `{{ locket:REF }}` templates;
/// every reference resolves before anything is written.
final class EndToEndInjectTests: EndToEndCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "github", "-a", "deploy", secret: "tok-123")
        add("-s", "npm", "-a", "ci", secret: "npm-secret")
        add("--class", "inet", "-s", "db.example.com", "-a", "app", "-r", "https", "-p", "v1", secret: "db pass \"quoted\"")
    }

    var output: String { sandbox.root + "/rendered.env" }

    /// Issue 31: a template over 16 MiB is refused naming the template (it
    /// said "the secret is larger than 16 MiB"), from stdin or -i.
    func testATooLargeTemplateIsNamed() throws {
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: (16 << 20) + 1)
        let piped = locket(["inject"], input: .bytes(big))
        assertError(piped, "errSecDataTooLarge", -25302)
        XCTAssertTrue(piped.err.contains("the template is larger than 16 MiB"), piped.err)
        let path = sandbox.root + "/big.tmpl"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(big)))
        let named = locket(["inject", "-i", path])
        assertError(named, "errSecDataTooLarge", -25302)
        XCTAssertTrue(named.err.contains("the template \(path) is larger than 16 MiB"), named.err)
        XCTAssertFalse(piped.err.contains("secret") || named.err.contains("secret"), piped.err + named.err)
    }

    func testManyReferences() {
        let template = """
            # a config file
            GH={{ locket:github/deploy }}
            NPM={{locket:npm/ci}} and again {{ locket:npm/ci }}
            DB="{{\tlocket:https://app@db.example.com/v1\t}}"
            B64={{ locket:github/deploy | base64 }}
            HELM={{ .Values.image }} {{- if .x }}

            """
        let result = ok(["inject"], input: .text(template))
        XCTAssertEqual(result.out, """
            # a config file
            GH=tok-123
            NPM=npm-secret and again npm-secret
            DB="db pass "quoted""
            B64=dG9rLTEyMw==
            HELM={{ .Values.image }} {{- if .x }}

            """)
    }

    func testTemplateWithoutPlaceholdersIsCopiedExactly() {
        let bytes: [UInt8] = Array("{{ not locket }} \\{{ x }} \u{00e9}".utf8) + [0x00, 0xff, 0x0a]
        let result = ok(["inject"], input: .bytes(bytes))
        XCTAssertEqual(result.stdout, bytes)
    }

    func testLiteralBraces() {
        let result = ok(["inject"], input: .text(#"write \{{ locket:github/deploy }} for the token; \\{{ locket:github/deploy }}"#))
        XCTAssertEqual(result.out, #"write {{ locket:github/deploy }} for the token; \tok-123"#)
    }

    /// One missing reference: nothing on stdout, no file, the failure's status, the line named.
    func testMissingReferenceWritesNothing() {
        let template = "A={{ locket:github/deploy }}\nB={{ locket:github/missing }}\n"
        let stdout = expect(44, "inject", input: .text(template))
        assertError(stdout, "errSecItemNotFound", -25300)
        XCTAssertTrue(stdout.err.contains("line 2: github/missing"), stdout.err)
        XCTAssertFalse(stdout.err.contains("tok-123"), stdout.err)
        let file = expect(44, "inject", "-o", output, input: .text(template))
        XCTAssertFalse(fileExists(output), "a file was written: \(file.summary)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: sandbox.root).filter { $0.contains("locket-") }, [],
                       "a temporary file was left")
    }

    func testLockedKeychainWritesNothing() {
        ok("lock")
        let result = expect(36, "inject", "-o", output, input: .text("{{ locket:github/deploy }}"))
        assertError(result, "errSecInteractionNotAllowed", -25308)
        XCTAssertFalse(fileExists(output))
    }

    func testMalformedPlaceholders() {
        for (template, words) in [("ok\n{{ locket:github/deploy\n}}", "line 2"), ("{{ locket:nope }}", "not a secret reference"),
                                  ("{{ locket:github/deploy | json }}", "unknown filter")] {
            let result = expect(206, "inject", input: .text(template))
            XCTAssertTrue(result.err.contains(words), result.err)
            XCTAssertEqual(result.stdout, [])
        }
    }

    /// Binary secrets are refused as text, with a hint; `| base64` writes them.
    func testBinarySecrets() {
        addBytes("-s", "cert", "-a", "der", data: [0x30, 0x82, 0x00, 0xff, 0x0a])
        let refused = expect(206, "inject", input: .text("C={{ locket:cert/der }}"))
        assertError(refused, "errSecParam", -50)
        XCTAssertTrue(refused.err.contains("binary"), refused.err)
        XCTAssertTrue(refused.err.contains("| base64"), refused.err)
        XCTAssertEqual(ok(["inject"], input: .text("C={{ locket:cert/der|base64 }}")).out, "C=MIIA/wo=")
    }

    func testOutputFileIsPrivateAndNeverReplacedWithoutForce() throws {
        let template = sandbox.root + "/app.tpl"
        writeFile(template, "token={{ locket:github/deploy }}\n")
        ok("inject", "-i", template, "-o", output)
        XCTAssertEqual(readText(output), "token=tok-123\n")
        XCTAssertEqual(mode(output), 0o600)

        // An existing file is refused before the keychain is even read, and stays as it was.
        writeFile(output, "old\n", mode: 0o644)
        // Long, the same spellings as export's and key's (issue 30).
        let refused = expect(206, "inject", "--in", template, "--out", output)
        XCTAssertTrue(refused.err.contains("exists"), refused.err)
        XCTAssertTrue(refused.err.contains("--force"), refused.err)
        XCTAssertEqual(readText(output), "old\n")

        // -f replaces it in one step (a new inode), mode 600 whatever the old one was.
        var before = stat()
        XCTAssertEqual(lstat(output, &before), 0)
        ok("inject", "-i", template, "-o", output, "-f")
        XCTAssertEqual(readText(output), "token=tok-123\n")
        XCTAssertEqual(mode(output), 0o600)
        var after = stat()
        XCTAssertEqual(lstat(output, &after), 0)
        XCTAssertNotEqual(before.st_ino, after.st_ino, "the file was rewritten in place, not replaced")

        // A symlink at the output path is replaced, not followed.
        let target = sandbox.root + "/target"
        writeFile(target, "target\n")
        let link = sandbox.root + "/link.env"
        XCTAssertEqual(symlink(target, link), 0)
        expect(206, "inject", "-i", template, "-o", link)
        ok("inject", "-i", template, "-o", link, "--force")
        XCTAssertEqual(readText(target), "target\n")
        XCTAssertEqual(readText(link), "token=tok-123\n")
    }

    func testInputMustBeARegularFile() {
        let fifo = sandbox.root + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let result = expect(206, "inject", "-i", fifo)
        XCTAssertTrue(result.err.contains("not a regular file"), result.err)
        XCTAssertLessThan(result.duration, 10, "a FIFO made inject wait (the run is killed at 20 s)")
        expect(220, "inject", "-i", sandbox.root + "/absent")
        assertUsage(locket("inject", "-f"), mentions: ["-f/--force", "-o/--out"])
    }

    func testEmptyTemplateWarns() {
        let result = locket("inject")
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(result.stdout, [])
        XCTAssertTrue(result.err.contains("warning: the template is empty"), result.err)
    }
}
