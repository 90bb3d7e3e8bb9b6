import CCrypto
@testable import LocketSecretService
import XCTest

/// The DH session's public half, 2^x mod p, from FixedBase's table and from
/// the fallback used when the table fails its self-test, against OpenSSL's
/// plain exponentiation of the same exponent.
final class TransferSessionTests: XCTestCase {
    func testTheTableAndTheFallbackAgreeWithOpenSSL() throws {
        let ctx = try XCTUnwrap(BN_CTX_new())
        defer { BN_CTX_free(ctx) }
        let prime = try XCTUnwrap(BN_get_rfc2409_prime_1024(nil))
        let two = try XCTUnwrap(BN_new())
        let x = try XCTUnwrap(BN_new()), plain = try XCTUnwrap(BN_new())
        let fromTable = try XCTUnwrap(BN_new()), fromFallback = try XCTUnwrap(BN_new()), expected = try XCTUnwrap(BN_new())
        defer { [prime, two, x, plain, fromTable, fromFallback, expected].forEach { BN_free($0) } }
        XCTAssertEqual(BN_set_word(two, 2), 1)
        // The smallest exponent a session makes, the largest, and random ones as sessions make them.
        var exponents: [(OpaquePointer) -> Int32] = [
            { BN_set_word($0, 2) },
            { x in BN_set_word(x, 1) == 1 && BN_lshift(x, x, TransferSession.exponentBits) == 1 && BN_add_word(x, 1) == 1 ? 1 : 0 },
        ]
        for _ in 0..<8 {
            exponents.append { x in BN_priv_rand(x, TransferSession.exponentBits, -1, 0) == 1 && BN_add_word(x, 2) == 1 ? 1 : 0 }
        }
        for make in exponents {
            XCTAssertEqual(make(x), 1)
            XCTAssertNotNil(BN_copy(plain, x))
            BN_set_flags(x, BN_FLG_CONSTTIME)
            XCTAssertEqual(BN_mod_exp(expected, two, plain, prime, ctx), 1)
            XCTAssertTrue(TransferSession.generatorPower(x, into: fromTable, ctx))
            XCTAssertTrue(TransferSession.generatorPower(x, into: fromFallback, ctx, table: false),
                          "the fallback refused a constant-time exponent")
            XCTAssertEqual(BN_cmp(fromTable, expected), 0)
            XCTAssertEqual(BN_cmp(fromFallback, expected), 0)
        }
    }
}
