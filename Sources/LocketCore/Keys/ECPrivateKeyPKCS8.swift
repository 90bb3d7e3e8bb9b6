import CCrypto

// EC private keys (P-256, P-384, P-521) as the keychain stores them: the
// PKCS#8 libcrypto writes, an RFC 5915 ECPrivateKey inside with the curve in
// the algorithm identifier, no inner parameters and the public point
// included. Read here without libcrypto 3.0's generic decoder, for the reason
// given in Curve25519PKCS8.swift, and made into a key from its parameters;
// every other shape takes the generic path. The private scalar is read in
// place, never copied out of guarded memory but into libcrypto's secure heap.

/// The PKCS#8 of an EC private key in libcrypto's canonical shape.
enum ECPrivateKeyPKCS8 {
    private static let ecPublicKey: [UInt8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]
    private static let curves: [(EllipticCurve, [UInt8])] = [
        (.p256, [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]),
        (.p384, [0x2b, 0x81, 0x04, 0x00, 0x22]),
        (.p521, [0x2b, 0x81, 0x04, 0x00, 0x23]),
    ]

    /// One DER element after another within `end`; nil for anything unexpected.
    private struct Reader {
        let der: UnsafeRawBufferPointer
        var offset: Int
        let end: Int

        init(_ der: UnsafeRawBufferPointer, _ range: Range<Int>) {
            self.der = der
            offset = range.lowerBound
            end = range.upperBound
        }

        var atEnd: Bool { offset == end }

        /// The contents of the next element if its tag is `tag` (definite lengths up to 64 KiB).
        mutating func next(_ tag: UInt8) -> Range<Int>? {
            guard offset + 2 <= end, der[offset] == tag else { return nil }
            var i = offset + 1
            var length = Int(der[i])
            i += 1
            if length >= 0x80 {
                let n = length & 0x7f
                guard n == 1 || n == 2, i + n <= end else { return nil }
                length = 0
                for _ in 0..<n { length = length << 8 | Int(der[i]); i += 1 }
            }
            guard length <= end - i else { return nil }
            offset = i + length
            return i..<offset
        }

        func equals(_ range: Range<Int>, _ bytes: [UInt8]) -> Bool {
            range.count == bytes.count && zip(range, bytes).allSatisfy { der[$0] == $1 }
        }
    }

    /// The curve, and where the private scalar and the uncompressed public
    /// point are in `der`, when it is exactly that shape; nil otherwise.
    static func split(_ der: UnsafeRawBufferPointer) -> (curve: EllipticCurve, scalar: Range<Int>, point: Range<Int>)? {
        var whole = Reader(der, 0..<der.count)
        guard let info = whole.next(0x30), whole.atEnd else { return nil }
        var r = Reader(der, info)
        guard let version = r.next(0x02), r.equals(version, [0]),
              let algorithm = r.next(0x30), let octets = r.next(0x04), r.atEnd else { return nil }
        var a = Reader(der, algorithm)
        guard let oid = a.next(0x06), a.equals(oid, ecPublicKey), let named = a.next(0x06), a.atEnd,
              let curve = curves.first(where: { a.equals(named, $0.1) })?.0 else { return nil }
        var o = Reader(der, octets)
        guard let ecKey = o.next(0x30), o.atEnd else { return nil }
        var k = Reader(der, ecKey)
        guard let ecVersion = k.next(0x02), k.equals(ecVersion, [1]),
              let scalar = k.next(0x04), scalar.count == curve.byteCount,
              let tagged = k.next(0xa1), k.atEnd else { return nil }
        var p = Reader(der, tagged)
        guard let bits = p.next(0x03), p.atEnd, bits.count == 2 + 2 * curve.byteCount,
              der[bits.lowerBound] == 0, der[bits.lowerBound + 1] == 0x04 else { return nil }
        return (curve, scalar, (bits.lowerBound + 1)..<bits.upperBound)
    }

    /// The key from its parameters: group, public point, private scalar.
    static func key(_ der: UnsafeRawBufferPointer, _ parts: (curve: EllipticCurve, scalar: Range<Int>, point: Range<Int>)) throws -> EVPKey {
        let point = UnsafeRawBufferPointer(rebasing: der[parts.point])
        let scalar = UnsafeRawBufferPointer(rebasing: der[parts.scalar])
        return try KeyParameters.build { bld, numbers in
            try KeyParameters.push(OSSL_PARAM_BLD_push_utf8_string(bld, OpenSSL.cString("group"), OpenSSL.cString(parts.curve.groupName), 0))
            try KeyParameters.push(OSSL_PARAM_BLD_push_octet_string(bld, OpenSSL.cString("pub"), point.baseAddress, point.count))
            let bn = try KeyParameters.secureNumber(scalar)
            numbers.append(bn)
            try KeyParameters.push(OSSL_PARAM_BLD_push_BN(bld, OpenSSL.cString("priv"), bn))
        } make: { try EVPKey(name: "EC", selection: locket_evp_pkey_keypair(), params: $0) }
    }
}
