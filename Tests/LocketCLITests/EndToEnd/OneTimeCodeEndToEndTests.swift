import Foundation
import Synchronization
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 16, item 6: `locket otp`: RFC 4226's vectors with the counter
/// advancing in the item (also under concurrency, eight processes of the
/// binary), TOTP checked against Python's hmac module, refusals. In-process
/// on a clock the test sets (issue 38): a TOTP code is checked for the one
/// time step the command saw, not for whichever the wall clock passed.
final class EndToEndOneTimeCodeTests: EndToEndCase {
    override class var inProcess: Bool { true }

    static let key = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"  // RFC 4226's "12345678901234567890"
    static let rfc4226 = ["755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"]

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    func testHOTPVectorsAndTheCounterInTheItem() throws {
        let uri = "otpauth://hotp/Example:alice?secret=\(Self.key)&issuer=Example&counter=0"
        add("-s", "example", "-a", "alice", secret: uri)
        var codes: [String] = []
        for _ in 0..<9 { codes.append(ok("otp", "-s", "example").out) }
        let json = try ok("--json", "otp", "-s", "example").jsonObject()
        XCTAssertEqual(codes.map { String($0.dropLast()) } + [json["code"] as? String ?? ""], Self.rfc4226)
        XCTAssertEqual(json["type"] as? String, "hotp")
        XCTAssertEqual(json["counter"] as? Int, 9)
        XCTAssertEqual(json["digits"] as? Int, 6)
        XCTAssertEqual(String(decoding: secret("-s", "example"), as: UTF8.self), uri.replacingOccurrences(of: "counter=0", with: "counter=10"))
        XCTAssertEqual(ok("otp", "-s", "example", "-n").out, "403154")
    }

    /// Eight processes at once get eight different codes, and the counter moves by eight.
    func testHOTPCounterAdvancesAtomically() {
        add("-s", "shared", "-a", "ci", secret: "otpauth://hotp/x?secret=\(Self.key)&counter=0")
        let box = Runs()
        let binary = self.binary!, environment = sandbox.environment
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let result = Spawn.run(binary, ["otp", "-s", "shared", "-n"], environment: environment, input: .devNull, timeout: 20)
            box.results.withLock { $0.append(result) }
        }
        let results = box.results.withLock { $0 }
        let codes = results.map(\.out)
        XCTAssertEqual(results.compactMap(\.status), Array(repeating: 0, count: 8), results.map(\.summary).joined(separator: "\n"))
        XCTAssertEqual(Set(codes), Set(Self.rfc4226.prefix(8)), "two processes got the same counter")
        XCTAssertTrue(String(decoding: secret("-s", "shared"), as: UTF8.self).hasSuffix("counter=8"))
    }

    /// TOTP for each algorithm, digit count and an odd period, against an
    /// independent implementation (Python's hmac), for the time steps the
    /// command could have seen.
    func testTOTPAgainstPython() throws {
        let python = try SystemTool.require("python3", for: "checking TOTP codes independently")
        // RFC 6238's test time 1111111109: a period's last second for 30 s, none for 17 s.
        clock = VirtualClock(start: 1_111_111_109_000)
        let cases = [("SHA1", 6, 30, Self.key), ("SHA256", 8, 30, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZA"),
                     ("SHA512", 7, 17, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNA")]
        for (algorithm, digits, period, key) in cases {
            let service = "totp-\(algorithm)"
            add("-s", service, secret: "otpauth://totp/x?secret=\(key.lowercased())&algorithm=\(algorithm)&digits=\(digits)&period=\(period)")
            let before = Int(clock!.seconds)
            let json = try ok("--json", "otp", "-s", service).jsonObject()
            let after = Int(clock!.seconds)
            let script = """
                import base64, hashlib, hmac, struct, sys
                key = base64.b32decode(sys.argv[1] + "=" * (-len(sys.argv[1]) % 8))
                for t in range(int(sys.argv[4]), int(sys.argv[5]) + 1):
                    h = hmac.new(key, struct.pack(">Q", t // int(sys.argv[3])), getattr(hashlib, sys.argv[2].lower())).digest()
                    o = h[-1] & 15
                    print(t, str((struct.unpack(">I", h[o:o + 4])[0] & 0x7fffffff) % 10 ** int(sys.argv[6])).zfill(int(sys.argv[6])))
                """
            let expected = runTool(python, ["-c", script, key, algorithm, "\(period)", "\(before)", "\(after)", "\(digits)"])
            XCTAssertEqual(expected.status, 0, expected.summary)
            var byTime: [Int: String] = [:]
            for line in expected.out.split(separator: "\n") {
                let parts = line.split(separator: " ")
                byTime[Int(parts[0])!] = String(parts[1])
            }
            let code = try XCTUnwrap(json["code"] as? String)
            let left = try XCTUnwrap(json["secondsLeft"] as? Int)
            XCTAssertTrue((before...after).contains { byTime[$0] == code && left == period - $0 % period },
                          "\(algorithm): \(code) (\(left) s left) is no code of \(before)...\(after): \(byTime)")
            XCTAssertEqual(json["period"] as? Int, period)
            XCTAssertEqual(json["algorithm"] as? String, algorithm)
            XCTAssertEqual(code.count, digits)
        }
    }

    func testRefusals() {
        add("-s", "plain", secret: "hunter2")
        let plain = expect(206, "otp", "-s", "plain")
        assertError(plain, "errSecParam", -50)
        XCTAssertTrue(plain.err.contains("not a usable otpauth:// URI"), plain.err)
        XCTAssertFalse(plain.err.contains("hunter2"), plain.err)
        for (name, uri, reason) in [("p0", "otpauth://totp/x?secret=\(Self.key)&period=0", "period"),
                                    ("d9", "otpauth://totp/x?secret=\(Self.key)&digits=9", "digits"),
                                    ("b32", "otpauth://totp/x?secret=NOT-BASE32!", "base32"),
                                    ("nocounter", "otpauth://hotp/x?secret=\(Self.key)", "counter")] {
            add("-s", name, secret: uri)
            let result = expect(206, "otp", "-s", name)
            XCTAssertTrue(result.err.contains(reason), result.err)
            XCTAssertFalse(result.err.contains(Self.key), result.err)
        }
        expect(44, "otp", "-s", "absent")
        add("-s", "locked", secret: "otpauth://hotp/x?secret=\(Self.key)&counter=4")
        ok("lock")
        assertError(expect(36, "otp", "-s", "locked"), "errSecInteractionNotAllowed", -25308)
        unlock()
        XCTAssertEqual(ok("otp", "-s", "locked").out, Self.rfc4226[4] + "\n", "a locked read moved the counter")
    }
}

/// Runs finished on concurrentPerform's threads.
private final class Runs: Sendable {
    let results = Mutex<[RunResult]>([])
}
