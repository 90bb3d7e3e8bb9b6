import Foundation
import XCTest

/// Issue 16, item 5: `generate` and `add --generate[=N]` (the distribution
/// itself: PasswordGeneratorTests in LocketCoreTests).
final class EndToEndGenerateTests: EndToEndCase {
    // Needs no real process: runs the command line in-process (issue 12); EndToEndSmokeTests runs each command through the binary.
    override class var inProcess: Bool { true }

    static let sets: [String: String] = [
        "alnum": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "symbols": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
        "hex": "0123456789abcdef",
        "base64url": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        "digits": "0123456789",
    ]

    func assertDrawn(_ secret: String, length: Int, from set: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(secret.count, length, secret, file: file, line: line)
        XCTAssertTrue(secret.allSatisfy(set.contains), "\(secret) has characters outside the set", file: file, line: line)
    }

    func testGenerate() throws {
        let plain = ok("generate")
        XCTAssertTrue(plain.out.hasSuffix("\n"))
        assertDrawn(String(plain.out.dropLast()), length: 32, from: Self.sets["alnum"]!)
        for (name, set) in Self.sets {
            assertDrawn(ok("generate", "--charset", name, "--length", "200", "-n").out, length: 200, from: set)
        }
        assertDrawn(ok("generate", "--length", "8", "-n").out, length: 8, from: Self.sets["alnum"]!)
        assertDrawn(ok("generate", "--length=1024", "-n").out, length: 1024, from: Self.sets["alnum"]!)
        XCTAssertNotEqual(ok("generate").out, ok("generate").out)
        let json = try ok("--json", "generate", "--charset", "hex").jsonObject()
        assertDrawn(try XCTUnwrap(json["data"] as? String), length: 32, from: Self.sets["hex"]!)
        // No keychain needed, none touched.
        XCTAssertFalse(fileExists(sandbox.loginKeychain))
    }

    func testSillyLengthsAndUnknownSetsAreUsageErrors() {
        for length in ["7", "0", "-1", "1025", "100000", "12abc", ""] {
            assertUsage(locket("generate", "--length", length), mentions: ["--length", "8", "1024"])
        }
        assertUsage(locket("generate", "--charset", "emoji"), mentions: ["--charset", "alnum"])
    }

    func testAddGenerateStoresWithoutPrinting() throws {
        initKeychain()
        let result = ok("add", "-s", "db", "-a", "app", "--generate")
        XCTAssertEqual(result.stdout, [], "add --generate printed the secret")
        assertDrawn(String(decoding: secret("-s", "db", "-a", "app"), as: UTF8.self), length: 32, from: Self.sets["alnum"]!)
        ok("add", "-s", "db", "-a", "hex", "--generate=64", "--charset", "hex")
        assertDrawn(String(decoding: secret("-s", "db", "-a", "hex"), as: UTF8.self), length: 64, from: Self.sets["hex"]!)
        // --print shows what was stored, once it is stored.
        let shown = ok("add", "-s", "db", "-a", "shown", "--generate=20", "--charset", "symbols", "--print")
        XCTAssertEqual(shown.out, String(decoding: secret("-s", "db", "-a", "shown"), as: UTF8.self) + "\n")
        // -U replaces the secret of an existing item with a new one.
        let before = secret("-s", "db", "-a", "app")
        ok("add", "-s", "db", "-a", "app", "--generate", "-U")
        XCTAssertNotEqual(secret("-s", "db", "-a", "app"), before)
        // A duplicate fails as add does, and prints nothing.
        let duplicate = expect(45, "add", "-s", "db", "-a", "app", "--generate", "--print")
        XCTAssertEqual(duplicate.stdout, [])
    }

    func testAddGenerateConflicts() {
        initKeychain()
        assertUsage(locket("add", "-s", "x", "--generate", "-w"), mentions: ["--generate", "-w/--password"])
        assertUsage(locket("add", "-s", "x", "-w", "--generate=20"), mentions: ["--generate", "-w/--password"])
        assertUsage(locket("add", "-s", "x", "--generate", "--data-file", "-"), mentions: ["--generate", "--data-file"])
        assertUsage(locket("add", "-s", "x", "--charset", "hex", "-w"), mentions: ["--charset needs --generate"])
        assertUsage(locket("add", "-s", "x", "--print", "-w"), mentions: ["--print needs --generate"])
        assertUsage(locket("add", "-s", "x", "--generate=7"), mentions: ["--generate", "8", "1024"])
        assertUsage(locket("add", "-s", "x", "--generate=lots"), mentions: ["--generate"])
        expect(44, "find", "-s", "x")
    }
}
