// A minimal DER reader and writer for the few places where Apple's attribute
// formats need bytes that libcrypto does not hand out as such: the contents
// of an X.509 Name without its outer SEQUENCE, normalized as Apple does.
// Certificates, keys and PKCS#12 themselves are parsed by libcrypto.

enum DER {
    /// One element: its tag byte and the range of its contents in the input.
    struct Element {
        let tag: UInt8
        let header: Range<Int>
        let contents: Range<Int>
        var whole: Range<Int> { header.lowerBound..<contents.upperBound }
    }

    static let sequence: UInt8 = 0x30
    static let set: UInt8 = 0x31
    static let printableString: UInt8 = 0x13

    /// The element at `offset` of `bytes`, with a definite length that fits
    /// (DER has no indefinite lengths, no multi-byte tags in X.509 Names).
    static func element(_ bytes: [UInt8], at offset: Int, end: Int? = nil) throws -> Element {
        let end = end ?? bytes.count
        guard offset + 2 <= end else { throw KeychainError(.decode, "truncated DER element") }
        let tag = bytes[offset]
        guard tag & 0x1f != 0x1f else { throw KeychainError(.decode, "unsupported DER tag") }
        var i = offset + 1
        let first = Int(bytes[i]); i += 1
        var length = 0
        if first < 0x80 {
            length = first
        } else {
            let n = first & 0x7f
            guard n >= 1, n <= 4, i + n <= end else { throw KeychainError(.decode, "invalid DER length") }
            for _ in 0..<n { length = length << 8 | Int(bytes[i]); i += 1 }
        }
        guard length <= end - i else { throw KeychainError(.decode, "truncated DER element") }
        return Element(tag: tag, header: offset..<i, contents: i..<(i + length))
    }

    /// The elements that fill `range` of `bytes`, one after another.
    static func children(_ bytes: [UInt8], _ range: Range<Int>) throws -> [Element] {
        var out: [Element] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            let e = try element(bytes, at: offset, end: range.upperBound)
            out.append(e)
            offset = e.contents.upperBound
        }
        return out
    }

    /// The header (tag and minimal length) of an element of `length` bytes.
    static func header(_ tag: UInt8, _ length: Int) -> [UInt8] {
        if length < 0x80 { return [tag, UInt8(length)] }
        var bytes: [UInt8] = []
        var n = length
        while n > 0 { bytes.insert(UInt8(n & 0xff), at: 0); n >>= 8 }
        return [tag, 0x80 | UInt8(bytes.count)] + bytes
    }

    /// Apple's normalized Name contents (kSecAttrSubject, kSecAttrIssuer in
    /// the data protection keychain): the RDN SETs without the outer
    /// SEQUENCE, where each PrintableString value is upper-cased, runs of
    /// blanks become one space and blanks at either end go; other string
    /// types are kept as they are. Lengths are re-encoded where a value shrank.
    static func normalizedNameContents(_ name: [UInt8]) throws -> [UInt8] {
        let outer = try element(name, at: 0)
        guard outer.tag == sequence, outer.contents.upperBound == name.count else { throw KeychainError(.decode, "invalid X.509 name") }
        var out: [UInt8] = []
        for rdn in try children(name, outer.contents) {
            guard rdn.tag == set, !rdn.contents.isEmpty else { throw KeychainError(.decode, "invalid X.509 name") }
            var rdnContents: [UInt8] = []
            for atv in try children(name, rdn.contents) {
                guard atv.tag == sequence else { throw KeychainError(.decode, "invalid X.509 name") }
                let parts = try children(name, atv.contents)
                guard parts.count == 2, parts[0].tag == 0x06, !parts[0].contents.isEmpty else { throw KeychainError(.decode, "invalid X.509 name") }
                let value = parts[1]
                var atvContents = Array(name[parts[0].whole])
                if value.tag == printableString {
                    let normalized = normalizedPrintable(name[value.contents])
                    atvContents += header(printableString, normalized.count) + normalized
                } else {
                    atvContents += name[value.whole]
                }
                rdnContents += header(sequence, atvContents.count) + atvContents
            }
            out += header(set, rdnContents.count) + rdnContents
        }
        return out
    }

    /// Upper case, one space for each run of blanks, none at the ends
    /// (RFC 5280 7.1's comparison rules for PrintableString, as Apple applies them).
    private static func normalizedPrintable(_ value: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        var blank = false
        for c in value {
            if c == 0x20 || c == 0x09 {
                if !blank && !out.isEmpty { out.append(0x20) }
                blank = true
            } else {
                blank = false
                out.append(c >= 0x61 && c <= 0x7a ? c - 0x20 : c)
            }
        }
        if blank, out.last == 0x20 { out.removeLast() }
        return out
    }
}
