import CCrypto

// The pair check of an RSA key assembled from its components (OpenSSH's
// private key format). Every component is tied to the others by one
// equality, and a signature made from the CRT components must verify with
// the public key (n, e): a key whose private half does not sign for its
// public half is refused. These are the equalities of libcrypto's
// EVP_PKEY_pairwise_check (rsa_validate_keypair_multiprime); what it does
// besides, proving p and q prime (Miller-Rabin and a constant-time gcd),
// cost 0.2 CPU-s per 3072-bit key and protects nobody at import: a changed
// or missing byte in any component breaks an equality, so a composite
// factor can only be put there on purpose by the key's author, who holds
// the private key anyway. Such a key still fails the signature unless it
// works as a (weak) multi-prime key; how well a key was generated is
// beyond any import check (PKCS#8 and PEM files are not checked at all).

extension EVPKey {
    /// Fails unless the RSA key's components are one consistent key pair.
    func checkRSAPair() throws {
        let refused = KeychainError(.decode, "the private key does not match its public key")
        var numbers: [OpaquePointer?] = []
        defer { for bn in numbers { BN_clear_free(bn) } }
        for name in ["n", "e", "d", "rsa-factor1", "rsa-factor2", "rsa-exponent1", "rsa-exponent2", "rsa-coefficient1"] {
            var bn: OpaquePointer?
            guard EVP_PKEY_get_bn_param(pointer, name, &bn) == 1, let bn else { ERR_clear_error(); throw refused }
            numbers.append(bn)
            if numbers.count > 2 { BN_set_flags(bn, BN_FLG_CONSTTIME) }    // all but n and e
        }
        let ctx = try OpenSSL.check(BN_CTX_secure_new(), .io, "out of memory")
        defer { BN_CTX_free(ctx) }
        BN_CTX_start(ctx)
        defer { BN_CTX_end(ctx) }
        guard try RSAPair(numbers.map { $0! }, ctx).holds() else {
            ERR_clear_error()
            throw refused
        }
    }
}

/// The components of an RSA key and the arithmetic that ties them together.
private struct RSAPair {
    let n, e, d, p, q, dP, dQ, qInv: OpaquePointer
    let ctx: OpaquePointer

    init(_ numbers: [OpaquePointer], _ ctx: OpaquePointer) {
        (n, e, d, p, q) = (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4])
        (dP, dQ, qInv) = (numbers[5], numbers[6], numbers[7])
        self.ctx = ctx
    }

    /// A temporary from the context (freed by BN_CTX_end), constant-time.
    func scratch() throws -> OpaquePointer {
        let bn = try OpenSSL.check(BN_CTX_get(ctx), .io, "out of memory")
        BN_set_flags(bn, BN_FLG_CONSTTIME)
        return bn
    }

    func holds() throws -> Bool {
        // e odd and above 1; both factors above 1 and their product n.
        guard BN_is_odd(e) == 1, BN_is_one(e) == 0, BN_cmp(p, BN_value_one()) > 0, BN_cmp(q, BN_value_one()) > 0 else { return false }
        let t = try scratch(), p1 = try scratch(), q1 = try scratch()
        guard BN_mul(t, p, q, ctx) == 1, BN_cmp(t, n) == 0,
              BN_sub(p1, p, BN_value_one()) == 1, BN_sub(q1, q, BN_value_one()) == 1 else { return false }
        // dP = d mod (p-1) and dQ = d mod (q-1); then e*d = 1 mod lcm(p-1, q-1)
        // is e*dP = 1 mod (p-1) and e*dQ = 1 mod (q-1); qInv = q^-1 mod p.
        guard BN_nnmod(t, d, p1, ctx) == 1, BN_cmp(t, dP) == 0,
              BN_nnmod(t, d, q1, ctx) == 1, BN_cmp(t, dQ) == 0,
              try productIsOne(e, dP, p1), try productIsOne(e, dQ, q1),
              BN_is_negative(qInv) == 0, BN_cmp(qInv, p) < 0, try productIsOne(q, qInv, p) else { return false }
        return try signatureVerifies()
    }

    /// a*b = 1 modulo m (m >= 1).
    func productIsOne(_ a: OpaquePointer, _ b: OpaquePointer, _ m: OpaquePointer) throws -> Bool {
        let t = try scratch()
        return BN_mul(t, a, b, ctx) == 1 && BN_sub_word(t, 1) == 1 && BN_nnmod(t, t, m, ctx) == 1 && BN_is_zero(t) == 1
    }

    /// The pairwise consistency test: s = m^d by the CRT components (as
    /// libcrypto signs, without its fallback to d when the CRT result is
    /// wrong), then s^e = m modulo n, for a fixed m.
    func signatureVerifies() throws -> Bool {
        let m = try scratch(), sp = try scratch(), sq = try scratch(), s = try scratch()
        let digest = Digest.sha256(Array("locket RSA pair check".utf8))
        guard BN_bin2bn(digest, Int32(digest.count), m) != nil, BN_nnmod(m, m, n, ctx) == 1,
              BN_mod_exp(sp, m, dP, p, ctx) == 1, BN_mod_exp(sq, m, dQ, q, ctx) == 1,
              // s = sq + q * (qInv * (sp - sq) mod p)
              BN_mod_sub(s, sp, sq, p, ctx) == 1, BN_mod_mul(s, s, qInv, p, ctx) == 1,
              BN_mul(s, s, q, ctx) == 1, BN_add(s, s, sq) == 1 else { return false }
        guard BN_mod_exp(s, s, e, n, ctx) == 1 else { return false }
        return BN_cmp(s, m) == 0
    }
}
