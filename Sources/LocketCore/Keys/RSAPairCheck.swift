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
// The refusal names libcrypto's reason for the last check that failed, in
// its order, as EVP_PKEY_pairwise_check's did ("iqmp not inverse of q"; "p
// not prime" when the signature fails modulo p).

extension EVPKey {
    /// Fails unless the RSA key's components are one consistent key pair.
    func checkRSAPair() throws {
        var numbers: [OpaquePointer?] = []
        defer { for bn in numbers { BN_clear_free(bn) } }
        for name in ["n", "e", "d", "rsa-factor1", "rsa-factor2", "rsa-exponent1", "rsa-exponent2", "rsa-coefficient1"] {
            var bn: OpaquePointer?
            guard EVP_PKEY_get_bn_param(pointer, name, &bn) == 1, let bn else {
                throw OpenSSL.failure(.decode, "the private key does not match its public key")
            }
            numbers.append(bn)
            if numbers.count > 2 { BN_set_flags(bn, BN_FLG_CONSTTIME) }    // all but n and e
        }
        let ctx = try OpenSSL.check(BN_CTX_secure_new(), .io, "out of memory")
        defer { BN_CTX_free(ctx) }
        BN_CTX_start(ctx)
        defer { BN_CTX_end(ctx) }
        let reason = try RSAPair(numbers.map { $0! }, ctx).refusal()
        ERR_clear_error()
        guard let reason else { return }
        let text = ERR_reason_error_string(reason).map { String(cString: $0).lowercased() }
        throw KeychainError(.decode, "the private key does not match its public key" + (text.map { ": " + $0 } ?? ""))
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

    /// libcrypto's error (RSA_R_...) for the last check that fails, in
    /// rsa_validate_keypair_multiprime's order; nil when the pair holds.
    func refusal() throws -> UInt? {
        var reason: UInt?
        func rsa(_ code: Int32) -> UInt { UInt(ERR_LIB_RSA) << ERR_LIB_OFFSET | UInt(code) }
        if BN_is_one(e) == 1 || BN_is_odd(e) == 0 { reason = rsa(RSA_R_BAD_E_VALUE) }
        // Factors of 1 or less: what libcrypto's primality test says of them
        // (and the arithmetic below needs p-1 and q-1 nonzero).
        guard BN_cmp(p, BN_value_one()) > 0 else { return rsa(RSA_R_P_NOT_PRIME) }
        guard BN_cmp(q, BN_value_one()) > 0 else { return rsa(RSA_R_Q_NOT_PRIME) }
        let t = try scratch(), p1 = try scratch(), q1 = try scratch()
        guard BN_sub(p1, p, BN_value_one()) == 1, BN_sub(q1, q, BN_value_one()) == 1 else { throw OpenSSL.failure(.io, "out of memory") }
        var holds = true
        func check(_ ok: Bool, _ failure: Int32) {
            if !ok { (reason, holds) = (rsa(failure), false) }
        }
        check(BN_mul(t, p, q, ctx) == 1 && BN_cmp(t, n) == 0, RSA_R_N_DOES_NOT_EQUAL_P_Q)
        // e*d = 1 mod lcm(p-1, q-1): modulo p-1 and modulo q-1.
        let congruent = try productIsOne(e, d, p1) && productIsOne(e, d, q1)
        check(congruent, RSA_R_D_E_NOT_CONGRUENT_TO_1)
        check(BN_nnmod(t, d, p1, ctx) == 1 && BN_cmp(t, dP) == 0, RSA_R_DMP1_NOT_CONGRUENT_TO_D)
        check(BN_nnmod(t, d, q1, ctx) == 1 && BN_cmp(t, dQ) == 0, RSA_R_DMQ1_NOT_CONGRUENT_TO_D)
        let inverse = try productIsOne(q, qInv, p)
        if BN_is_negative(qInv) == 1 || BN_cmp(qInv, p) >= 0 || !inverse {
            // libcrypto stops at a q with no inverse modulo p, with BN's reason.
            guard BN_mod_inverse(t, q, p, ctx) != nil else { return ERR_peek_last_error() }
            check(false, RSA_R_IQMP_NOT_INVERSE_OF_Q)
        }
        guard holds else { return reason }
        // Every equality holds: p and q are prime unless the signature fails
        // modulo one of them (reported in libcrypto's order, after e's).
        let (moduloP, moduloQ) = try signatureVerifies()
        if !moduloP { reason = rsa(RSA_R_P_NOT_PRIME) }
        if !moduloQ { reason = rsa(RSA_R_Q_NOT_PRIME) }
        return reason
    }

    /// a*b = 1 modulo m (m >= 1).
    func productIsOne(_ a: OpaquePointer, _ b: OpaquePointer, _ m: OpaquePointer) throws -> Bool {
        let t = try scratch()
        return BN_mul(t, a, b, ctx) == 1 && BN_sub_word(t, 1) == 1 && BN_nnmod(t, t, m, ctx) == 1 && BN_is_zero(t) == 1
    }

    /// The pairwise consistency test: s = m^d by the CRT components (as
    /// libcrypto signs, without its fallback to d when the CRT result is
    /// wrong), then s^e = m, modulo p and modulo q, for a fixed m.
    func signatureVerifies() throws -> (moduloP: Bool, moduloQ: Bool) {
        let m = try scratch(), sp = try scratch(), sq = try scratch(), s = try scratch(), a = try scratch(), b = try scratch()
        let digest = Digest.sha256(Array("locket RSA pair check".utf8))
        guard BN_bin2bn(digest, Int32(digest.count), m) != nil, BN_nnmod(m, m, n, ctx) == 1,
              BN_mod_exp(sp, m, dP, p, ctx) == 1, BN_mod_exp(sq, m, dQ, q, ctx) == 1,
              // s = sq + q * (qInv * (sp - sq) mod p)
              BN_mod_sub(s, sp, sq, p, ctx) == 1, BN_mod_mul(s, s, qInv, p, ctx) == 1,
              BN_mul(s, s, q, ctx) == 1, BN_add(s, s, sq) == 1,
              BN_mod_exp(s, s, e, n, ctx) == 1 else { return (false, false) }
        guard BN_nnmod(a, s, p, ctx) == 1, BN_nnmod(b, m, p, ctx) == 1 else { return (false, false) }
        let moduloP = BN_cmp(a, b) == 0
        guard BN_nnmod(a, s, q, ctx) == 1, BN_nnmod(b, m, q, ctx) == 1 else { return (moduloP, false) }
        return (moduloP, BN_cmp(a, b) == 0)
    }
}
