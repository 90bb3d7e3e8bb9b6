import LocketCore
import LocketTestSupport
import XCTest

/// Issue 16, item 6: one-time codes from otpauth:// URIs (RFC 4226 HOTP,
/// RFC 6238 TOTP), the URI parser's refusals, and the HOTP counter advancing
/// in the keychain.
final class OneTimePasswordTests: XCTestCase {
    /// RFC 4226's and RFC 6238's keys, in base32.
    static let sha1Key = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"  // "12345678901234567890"
    static let sha256Key = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZA===="
    static let sha512Key = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNA="

    func otp(_ uri: String) throws -> OneTimePassword { try OneTimePassword(uri: secret(uri)) }

    /// RFC 4226, appendix D: HOTP values of counters 0 to 9.
    func testRFC4226Vectors() throws {
        let expected = ["755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"]
        let hotp = try otp("otpauth://hotp/Example:alice?secret=\(Self.sha1Key)&counter=0")
        XCTAssertEqual(hotp.kind, .hotp)
        XCTAssertEqual(hotp.algorithm, .sha1)
        XCTAssertEqual(hotp.digits, 6)
        for (counter, code) in expected.enumerated() {
            XCTAssertEqual(try hotp.code(counter: UInt64(counter)), code, "counter \(counter)")
        }
    }

    /// RFC 6238, appendix B: 8-digit TOTP values, 30-second steps, for SHA-1, SHA-256 and SHA-512.
    func testRFC6238Vectors() throws {
        let vectors: [(Int64, String, String, String)] = [
            (59, "94287082", "46119246", "90693936"),
            (1_111_111_109, "07081804", "68084774", "25091201"),
            (1_111_111_111, "14050471", "67062674", "99943326"),
            (1_234_567_890, "89005924", "91819424", "93441116"),
            (2_000_000_000, "69279037", "90698825", "38618901"),
            (20_000_000_000, "65353130", "77737706", "47863826"),
        ]
        let sha1 = try otp("otpauth://totp/x?secret=\(Self.sha1Key)&digits=8")
        let sha256 = try otp("otpauth://totp/x?secret=\(Self.sha256Key)&digits=8&algorithm=SHA256")
        let sha512 = try otp("otpauth://totp/x?secret=\(Self.sha512Key)&digits=8&algorithm=sha512")
        XCTAssertEqual([sha1.algorithm, sha256.algorithm, sha512.algorithm], [.sha1, .sha256, .sha512])
        for (time, a, b, c) in vectors {
            XCTAssertEqual(try sha1.code(at: time).code, a, "SHA1 at \(time)")
            XCTAssertEqual(try sha256.code(at: time).code, b, "SHA256 at \(time)")
            XCTAssertEqual(try sha512.code(at: time).code, c, "SHA512 at \(time)")
        }
    }

    func testSecondsLeftAndPeriods() throws {
        let totp = try otp("otpauth://totp/x?secret=\(Self.sha1Key)")
        XCTAssertEqual(totp.period, 30)
        XCTAssertEqual(try totp.code(at: 59).secondsLeft, 1)
        XCTAssertEqual(try totp.code(at: 60).secondsLeft, 30)
        XCTAssertEqual(try totp.code(at: 60).code, try totp.code(at: 89).code)
        // Any period: 60 s steps give the code of step T/60.
        let minute = try otp("otpauth://totp/x?secret=\(Self.sha1Key)&period=60&digits=8")
        XCTAssertEqual(try minute.code(at: 59 * 2).code, "94287082", "step 1, as RFC 6238's T=59 at 30 s")
        XCTAssertEqual(try minute.code(at: 61).secondsLeft, 59)
        // Seven digits: the low seven of the same value.
        let seven = try otp("otpauth://totp/x?secret=\(Self.sha1Key)&digits=7")
        XCTAssertEqual(try seven.code(at: 59).code, "4287082")
    }

    /// Apps show secrets in lowercase groups, with or without padding.
    func testBase32Forms() throws {
        let forms = [
            Self.sha1Key,
            Self.sha1Key.lowercased(),
            "GEZD GNBV GY3T QOJQ GEZD GNBV GY3T QOJQ",
            "gezd%20gnbv%20gy3t%20qojq%20gezd%20gnbv%20gy3t%20qojq",
            "gezd+gnbv+gy3t+qojq+gezd+gnbv+gy3t+qojq",
        ]
        for form in forms {
            XCTAssertEqual(try otp("otpauth://totp/x?secret=\(form)&digits=8").code(at: 59).code, "94287082", form)
        }
        // With and without padding: "a" is ME======.
        let padded = try otp("otpauth://hotp/x?secret=ME======&counter=0")
        let bare = try otp("otpauth://hotp/x?secret=ME&counter=0")
        XCTAssertEqual(try padded.code(counter: 5), try bare.code(counter: 5))
        XCTAssertEqual(try otp("otpauth://totp/x?secret=\(Self.sha256Key.replacingOccurrences(of: "=", with: ""))&algorithm=SHA256&digits=8")
            .code(at: 59).code, "46119246")
    }

    /// A URI that can't make a code is errSecParam with a reason, never the secret.
    func testMalformedURIsAreRefused() {
        let bad: [(String, String)] = [
            ("https://example.com/?secret=\(Self.sha1Key)", "otpauth://"),
            ("otpauth://motp/x?secret=\(Self.sha1Key)", "totp or hotp"),
            ("otpauth://totp/x", "no parameters"),
            ("otpauth://totp/x?issuer=me", "no secret"),
            ("otpauth://totp/x?secret=", "empty"),
            ("otpauth://totp/x?secret=GEZDG!BV", "base32"),
            ("otpauth://totp/x?secret=GEZ=DGNBV", "base32"),
            ("otpauth://totp/x?secret=G", "base32"),
            ("otpauth://totp/x?secret=GEZ", "base32"),
            ("otpauth://totp/x?secret=ME=", "base32"),
            ("otpauth://totp/x?secret=ME%ZZ", "%"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&period=0", "period"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&period=-30", "period"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&period=thirty", "period"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&period=99999999999", "period"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&digits=5", "digits"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&digits=9", "digits"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&digits=10000000000000000000000", "digits"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&algorithm=MD5", "algorithm"),
            ("otpauth://hotp/x?secret=\(Self.sha1Key)", "counter"),
            ("otpauth://hotp/x?secret=\(Self.sha1Key)&counter=-1", "counter"),
            ("otpauth://hotp/x?secret=\(Self.sha1Key)&counter=18446744073709551616", "counter"),
            (String(repeating: "a", count: 10_000), "longer"),
        ]
        for (uri, reason) in bad {
            do {
                _ = try otp(uri)
                XCTFail("accepted \(uri.prefix(80))")
            } catch let error as KeychainError {
                XCTAssertEqual(error.code, .param, uri)
                XCTAssertTrue(error.message.contains(reason), "\(uri.prefix(80)): \(error.message)")
                XCTAssertFalse(error.message.contains("GEZDGNBV"), "the secret is in the message: \(error.message)")
            } catch {
                XCTFail("\(uri.prefix(80)): \(error)")
            }
        }
    }

    /// Percent-decoding of the parameters, pinned before the two private
    /// decoders became LocketSupport's (issue 25): escapes in names and values
    /// (either case of hex digit), `+` as a space as in form-encoded queries,
    /// a malformed escape refused, text parameters valid UTF-8 and at most 256 bytes.
    func testParametersArePercentDecodedAsAFormQuery() throws {
        // Names are decoded before they are compared.
        XCTAssertEqual(try otp("otpauth://totp/x?s%65cr%45t=\(Self.sha1Key)&d%69gits=8").code(at: 59).code, "94287082")
        // Values: escapes in either case; `+` is a space, `%2B` a plus.
        XCTAssertEqual(try otp("otpauth://totp/x?secret=\(Self.sha1Key)&digits=%38").digits, 8)
        XCTAssertEqual(try otp("otpauth://totp/x?secret=\(Self.sha1Key)&algorithm=sha%32%35%36").algorithm, .sha256)
        XCTAssertEqual(try otp("otpauth://totp/x?secret=\(Self.sha1Key)&period=%36%30").period, 60)
        XCTAssertEqual(try otp("otpauth://totp/x?secret=\(Self.sha1Key)&digits=8").code(at: 59).code,
                       try otp("otpauth://totp/x?secret=gezdgnbvgy3tqojqgezdgnbvgy3tqoj%71&digits=8").code(at: 59).code)
        let refused: [(String, String)] = [
            // `+` decodes to a space, which no number has.
            ("otpauth://totp/x?secret=\(Self.sha1Key)&period=+30", "period"),
            // A plus sign is no base32 digit.
            ("otpauth://totp/x?secret=GEZD%2BGNBV", "base32"),
            ("otpauth://totp/x?secret=GEZD%", "a % is not followed by two hexadecimal digits"),
            ("otpauth://totp/x?secret=GEZD%4", "a % is not followed by two hexadecimal digits"),
            ("otpauth://totp/x?secret=GEZD%G1", "a % is not followed by two hexadecimal digits"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&dig%7its=8", "a parameter name is not valid percent-encoded UTF-8"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&%FF=8", "a parameter name is not valid percent-encoded UTF-8"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&digits=%3", "the digits parameter is not valid percent-encoded UTF-8"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&algorithm=%FF", "the algorithm parameter is not valid percent-encoded UTF-8"),
            // Over 256 bytes, a text parameter is refused before it is decoded.
            ("otpauth://totp/x?secret=\(Self.sha1Key)&digits=" + String(repeating: "0", count: 256) + "8",
             "the digits parameter is not valid percent-encoded UTF-8"),
            ("otpauth://totp/x?secret=\(Self.sha1Key)&" + String(repeating: "a", count: 257) + "=1", "a parameter name is not valid"),
        ]
        for (uri, reason) in refused {
            XCTAssertThrowsError(try otp(uri), String(uri.prefix(80))) { error in
                XCTAssertTrue((error as? KeychainError)?.message.contains(reason) == true, "\(uri.prefix(80)): \(error)")
            }
        }
        // A parameter that is not used is never decoded, malformed or not.
        XCTAssertEqual(try otp("otpauth://totp/x?secret=\(Self.sha1Key)&issuer=%ZZ&image=%").digits, 6)
        // Exactly 256 bytes of a text parameter is fine.
        XCTAssertEqual(try otp("otpauth://totp/x?secret=\(Self.sha1Key)&digits=" + String(repeating: "0", count: 255) + "8").digits, 8)
    }

    func testTolerantParsing() throws {
        // Scheme and type in any case, parameter names too, a fragment, a trailing newline, unknown parameters.
        let hotp = try otp("OTPAUTH://HOTP/Issuer:alice%40example.com?Secret=\(Self.sha1Key)&COUNTER=3&issuer=Issuer&image=x#frag\n")
        XCTAssertEqual(try hotp.code(counter: hotp.counter), "969429")
        // The first of two equal parameters counts.
        let first = try otp("otpauth://hotp/x?secret=\(Self.sha1Key)&counter=1&counter=7")
        XCTAssertEqual(first.counter, 1)
    }

    // MARK: - In the keychain

    func testHOTPCounterAdvancesInTheItem() throws {
        let keychain = try TemporaryKeychain(password: nil)
        defer { keychain.remove() }
        let uri = "otpauth://hotp/Example:alice?secret=\(Self.sha1Key)&counter=0&issuer=Example"
        try keychain.open().add(try genp("example", "alice"), data: secret(uri))
        let q = try query(.genericPassword, [.service: "example"])
        var codes: [String] = []
        for _ in 0..<3 { codes.append(try keychain.open().oneTimeCode(q, now: 0).code) }
        XCTAssertEqual(codes, ["755224", "287082", "359152"])
        let stored = try keychain.open().search(q, returnData: true)[0].secretString
        // Only the counter changed; the rest of the URI is as it was.
        XCTAssertEqual(stored, uri.replacingOccurrences(of: "counter=0", with: "counter=3"))
    }

    func testTOTPIsReadOnly() throws {
        let keychain = try TemporaryKeychain(password: nil)
        defer { keychain.remove() }
        let clock = VirtualClock()
        keychain.time = clock.source
        try keychain.open().add(try genp("t", "a"), data: secret("otpauth://totp/x?secret=\(Self.sha1Key)&digits=8"))
        let q = try query(.genericPassword, [.service: "t"])
        let before = try keychain.open().search(q)[0].modificationDate
        tick(clock)
        let result = try keychain.open().oneTimeCode(q, now: 1_111_111_109)
        XCTAssertEqual(result.code, "07081804")
        XCTAssertEqual(result.secondsLeft, 30 - 1_111_111_109 % 30)
        XCTAssertEqual(try keychain.open().search(q)[0].modificationDate, before, "a TOTP read wrote the item")
    }

    /// A locked keychain: errSecInteractionNotAllowed, and the counter stays.
    func testLockedKeychainAdvancesNothing() throws {
        let keychain = try TemporaryKeychain()
        defer { keychain.remove() }
        try keychain.open().add(try genp("h", "a"), data: secret("otpauth://hotp/x?secret=\(Self.sha1Key)&counter=5"))
        try keychain.lock(all: false)
        let q = try query(.genericPassword, [.service: "h"])
        XCTAssertKeychainError(.interactionNotAllowed, try keychain.open().oneTimeCode(q, now: 0))
        try keychain.unlock()
        XCTAssertEqual(try keychain.open().oneTimeCode(q, now: 0).counter, 5)
    }

    func testSecretThatIsNoURI() throws {
        let keychain = try TemporaryKeychain(password: nil)
        defer { keychain.remove() }
        try keychain.open().add(try genp("plain", "a"), data: secret("hunter2"))
        XCTAssertKeychainError(.param, try keychain.open().oneTimeCode(try query(.genericPassword, [.service: "plain"]), now: 0))
        XCTAssertKeychainError(.itemNotFound, try keychain.open().oneTimeCode(try query(.genericPassword, [.service: "none"]), now: 0))
    }
}
