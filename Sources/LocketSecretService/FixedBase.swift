import CCrypto
import LocketSupport

/// 2^x in the RFC 2409 group from a table made once: the public half of
/// every DH session's key pair.
///
/// The generator never changes, so its powers 2^(d·16^i) can be kept
/// (d = 0...15, i = 0...40: 84 KB in Montgomery form) and 2^x is the
/// product of one entry per 4-bit digit of x: 40 multiplications, where
/// square-and-multiply does 160 squarings (a fifth of a lookup's
/// instructions in the provider: issue 41's profile). Every digit takes the
/// same path: each row is read whole and the entry kept by a mask, zero
/// digits included (their entry is 1), so neither the branches nor the
/// cache lines touched depend on the exponent (BN_mod_exp_mont_word's do).
struct FixedBase: @unchecked Sendable {
    /// 4-bit digits of an exponent: enough for TransferSession's 160 bits (plus 2).
    static let digits = 41
    /// Words of a number of the group (1024 bits).
    private static let words = 16
    private static let entries = 16

    /// Row i, entry d: 2^(d·16^i)·R mod p (R the Montgomery radix), `words` little-endian words.
    private let table: [UInt64]
    private let montgomery: OpaquePointer

    /// The table for `prime`'s group (its Montgomery form `montgomery`),
    /// checked against BN_mod_exp_mont_word on a few exponents; nil if
    /// libcrypto fails or an answer differs (the caller keeps square-and-multiply).
    init?(prime: OpaquePointer, montgomery: OpaquePointer) {
        guard let ctx = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(ctx) }
        guard let base = BN_new(), let entry = BN_new() else { return nil }
        defer { BN_free(base); BN_free(entry) }
        var table = [UInt64](repeating: 0, count: Self.digits * Self.entries * Self.words)
        guard BN_set_word(base, 2) == 1, BN_to_montgomery(base, base, montgomery, ctx) == 1 else { return nil }
        for row in 0..<Self.digits {
            guard BN_set_word(entry, 1) == 1, BN_to_montgomery(entry, entry, montgomery, ctx) == 1 else { return nil }
            for d in 0..<Self.entries {
                if d > 0 { guard BN_mod_mul_montgomery(entry, entry, base, montgomery, ctx) == 1 else { return nil } }
                let at = (row * Self.entries + d) * Self.words
                let stored = table.withUnsafeMutableBytes { bytes in
                    BN_bn2lebinpad(entry, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + at * 8, Int32(Self.words * 8))
                }
                guard stored == Int32(Self.words * 8) else { return nil }
            }
            // The next row's base, base^16: the last entry (base^15) times base.
            guard BN_mod_mul_montgomery(base, entry, base, montgomery, ctx) == 1 else { return nil }
        }
        self.table = table
        self.montgomery = montgomery
        guard selfTest(prime, ctx) else { return nil }
    }

    /// y = 2^x mod p, for 0 <= x < 2^(4·digits); false if libcrypto fails or x is larger.
    func power(_ x: OpaquePointer, into y: OpaquePointer, _ ctx: OpaquePointer) -> Bool {
        guard BN_num_bits(x) <= Int32(4 * Self.digits) else { return false }
        var exponent = [UInt8](repeating: 0, count: (Self.digits + 1) / 2)
        var chosen = [UInt64](repeating: 0, count: Self.words)
        defer {
            wipe(&exponent)
            chosen.withUnsafeMutableBytes { wipe($0) }
        }
        guard BN_bn2lebinpad(x, &exponent, Int32(exponent.count)) == Int32(exponent.count),
              let product = BN_secure_new(), let factor = BN_secure_new() else { return false }
        defer { BN_clear_free(product); BN_clear_free(factor) }
        for row in 0..<Self.digits {
            let digit = UInt64(exponent[row / 2] >> UInt8(4 * (row % 2))) & 15
            select(row: row, digit: digit, into: &chosen)
            let read = chosen.withUnsafeBytes { bytes in
                BN_lebin2bn(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(Self.words * 8), row == 0 ? product : factor)
            }
            guard read != nil else { return false }
            if row > 0 { guard BN_mod_mul_montgomery(product, product, factor, montgomery, ctx) == 1 else { return false } }
        }
        return BN_from_montgomery(y, product, montgomery, ctx) == 1
    }

    /// Entry `digit` of `row` into `chosen`, every entry of the row read and masked.
    private func select(row: Int, digit: UInt64, into chosen: inout [UInt64]) {
        for w in 0..<Self.words { chosen[w] = 0 }
        table.withUnsafeBufferPointer { table in
            for d in 0..<Self.entries {
                // All ones when d == digit (both below 16, so d ^ digit - 1 wraps only then), else zero.
                let mask = 0 &- (((UInt64(d) ^ digit) &- 1) >> 63)
                let at = (row * Self.entries + d) * Self.words
                for w in 0..<Self.words { chosen[w] |= table[at + w] & mask }
            }
        }
    }

    /// The table's answers against BN_mod_exp_mont_word's for exponents
    /// that reach every row and digit: 0, 1, 2^164 - 1, 2^160 + 1, and
    /// 0x0123...ef repeated (each digit value in each position of a row's cycle).
    private func selfTest(_ prime: OpaquePointer, _ ctx: OpaquePointer) -> Bool {
        guard let x = BN_new(), let mine = BN_new(), let theirs = BN_new() else { return false }
        defer { BN_free(x); BN_free(mine); BN_free(theirs) }
        let pattern = String(repeating: "0123456789abcdef", count: 3).prefix(Self.digits)
        let cases: [(OpaquePointer) -> Int32] = [
            { BN_zero_ex($0); return 1 },
            { BN_set_word($0, 1) },
            { x in BN_set_word(x, 1) == 1 && BN_lshift(x, x, Int32(4 * Self.digits)) == 1 && BN_sub_word(x, 1) == 1 ? 1 : 0 },
            { x in BN_set_word(x, 1) == 1 && BN_lshift(x, x, 160) == 1 && BN_add_word(x, 1) == 1 ? 1 : 0 },
            { x in var bn: OpaquePointer? = x; return BN_hex2bn(&bn, String(pattern)) > 0 ? 1 : 0 },
        ]
        for make in cases {
            guard make(x) == 1, power(x, into: mine, ctx), BN_mod_exp_mont_word(theirs, 2, x, prime, ctx, montgomery) == 1,
                  BN_cmp(mine, theirs) == 0 else { return false }
        }
        return true
    }
}
