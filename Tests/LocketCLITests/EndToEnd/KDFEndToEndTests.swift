import Foundation
import LocketCore
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 11: the released binary honoured `LOCKET_TEST_WEAK_KDF=1`, which
/// made `init` and `passwd` write libsodium's minimum Argon2id cost and turned
/// off the check that refuses such parameters as tampering. Now nothing in the
/// binary writes less than INTERACTIVE (`--kdf interactive|moderate|sensitive`),
/// weaker parameters open only where the header authenticates (the device of
/// an in-process test keychain), and any edit of the parameters there is errSecDecode.
final class EndToEndKDFTests: EndToEndCase {
    /// (opsLimit, memLimit) of the keychain's stored Argon2id parameters.
    private func storedCost(_ path: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> (UInt64, UInt64) {
        let rows = try ReliabilityDatabase(path ?? sandbox.loginKeychain, readOnly: true).rows("SELECT value FROM meta WHERE name = 'kdf'")
        let kdf = try XCTUnwrap(rows.first?[0], "no kdf row", file: file, line: line)
        guard kdf.count == 32 else {
            XCTFail("the kdf row has \(kdf.count) bytes", file: file, line: line)
            return (0, 0)
        }
        return (kdf[16..<24].reduce(0) { $0 << 8 | UInt64($1) }, kdf[24..<32].reduce(0) { $0 << 8 | UInt64($1) })
    }

    static let interactive: (UInt64, UInt64) = (2, 64 << 20)
    static let moderate: (UInt64, UInt64) = (3, 256 << 20)

    func testTheReleaseBinaryHasNoTestSwitchAndTheVariableChangesNothing() throws {
        let image = try XCTUnwrap(ReliabilityFiles.read(binary))
        XCTAssertFalse(Self.contains(image, Array("LOCKET_TEST_WEAK_KDF".utf8)), "the binary still names the test switch")
        XCTAssertFalse(Self.contains(image, Array("TEST_WEAK".utf8)))

        // init with the variable set: the default cost, moderate.
        let weakEnv = ["LOCKET_TEST_WEAK_KDF": "1"]
        expect(0, ["init", "--password-stdin"], input: .text(Self.password + "\n"), environment: weakEnv)
        let written = try storedCost()
        XCTAssertTrue(written == Self.moderate, "init wrote \(written)")

        // A keychain with the minimum cost, on a device where its header can't be
        // checked before hashing: refused as altered, whatever the variable says.
        initKeychain("weak")
        let elsewhere = try Sandbox()
        defer { elsewhere.remove() }
        try FileManager.default.createDirectory(atPath: elsewhere.dataHome + "/locket", withIntermediateDirectories: true)
        try ReliabilityDatabase.checkpoint(sandbox.dataHome + "/locket/weak.keychain")
        ReliabilityFiles.write(elsewhere.loginKeychain, try XCTUnwrap(ReliabilityFiles.read(sandbox.dataHome + "/locket/weak.keychain")))
        for extra in [[:], weakEnv] {
            let unlock = locket(in: elsewhere, "unlock", "--password-stdin", input: .text(Self.password + "\n"), environment: extra)
            XCTAssertEqual(unlock.status, 93, unlock.summary)
            XCTAssertTrue(unlock.err.contains("below locket's minimum"), unlock.summary)
        }
    }

    func testTheCostChoicesAndTheFloor() throws {
        expect(0, ["init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"))
        XCTAssertTrue(try storedCost() == Self.interactive)
        for bad in ["min", "minimum", "weak", "1", ""] {
            assertUsage(locket(["-k", "other", "init", "--password-stdin", "--kdf", bad], input: .text("pw\n")), mentions: ["--kdf"])
        }
        assertUsage(locket(["-k", "other", "init", "--no-password", "--kdf", "interactive"]), mentions: ["--no-password", "--kdf"])
        assertUsage(locket(["passwd", "--remove", "--kdf", "interactive"], input: .text(Self.password + "\n")), mentions: ["--remove", "--kdf"])
        XCTAssertNil(mode(sandbox.dataHome + "/locket/other.keychain"))

        // passwd keeps the keychain's cost, never below interactive; --kdf sets it.
        initKeychain("test")
        let test = sandbox.dataHome + "/locket/test.keychain"
        XCTAssertTrue(try storedCost(test).0 < Self.interactive.0, "the in-process test keychain has the minimum cost")
        ok(["-k", "test", "passwd"], input: .text(Self.password + "\nsecond\n"))
        let rewritten = try storedCost(test)
        XCTAssertTrue(rewritten == Self.interactive, "passwd wrote \(rewritten)")
        ok(["-k", "test", "passwd", "--kdf", "moderate"], input: .text("second\nthird\n"))
        XCTAssertTrue(try storedCost(test) == Self.moderate)
        ok("-k", "test", "lock", "--all")
        expect(0, ["-k", "test", "unlock", "--password-stdin"], input: .text("third\n"))
        // Plain passwd keeps the cost: shown on a keychain whose cost is above
        // the floor and none of the named ones (a moderate one could not tell
        // keeping it from the default), 3 passes over 64 MiB, a quarter of
        // moderate's hash.
        let between = KDFCost(opsLimit: 3, memLimit: 64 << 20)
        initKeychain("kept", kdf: between)
        let kept = sandbox.dataHome + "/locket/kept.keychain"
        ok(["-k", "kept", "passwd"], input: .text(Self.password + "\nfourth\n"))
        XCTAssertTrue(try storedCost(kept) == (between.opsLimit, between.memLimit), "plain passwd keeps the cost")
        ok("-k", "kept", "lock", "--all")
        expect(0, ["-k", "kept", "unlock", "--password-stdin"], input: .text("fourth\n"))
    }

    /// On the device whose header authenticates, any edit of the parameters is
    /// errSecDecode before hashing, a raised cost too (the old floor only caught
    /// lowered ones, and a raised one was taken for a wrong password).
    func testEveryEditOfTheParametersIsDecodeOnTheDevice() throws {
        expect(0, ["init", "--password-stdin", "--kdf", "interactive"], input: .text(Self.password + "\n"))
        ok("lock", "--all")
        try ReliabilityDatabase.checkpoint(sandbox.loginKeychain)
        let kdf = try XCTUnwrap(ReliabilityDatabase(sandbox.loginKeychain, readOnly: true).rows("SELECT value FROM meta WHERE name = 'kdf'").first?[0])
        var raised = kdf
        raised[23] = 3  // ops 2 -> 3
        XCTAssertEqual(try ReliabilityDatabase(sandbox.loginKeychain).change("UPDATE meta SET value = ? WHERE name = 'kdf'", [raised]), 1)
        let unlock = locket(["unlock", "--password-stdin"], input: .text(Self.password + "\n"))
        XCTAssertEqual(unlock.status, 93, unlock.summary)
        expect(93, "status")
    }
}
