import LocketSupport

// PEM (RFC 7468) blocks: found in a file that may hold several, among other
// text, and written with 64-column lines. A block holding a private key is
// decoded into, and encoded from, guarded memory.

enum PEM {
    /// One `-----BEGIN LABEL-----` ... `-----END LABEL-----` block.
    struct Block {
        /// The label, e.g. `CERTIFICATE`, `ENCRYPTED PRIVATE KEY`.
        let label: String
        /// The whole block, BEGIN and END lines included.
        let whole: Range<Int>
        /// The base64 text (after any RFC 1421 headers).
        let body: Range<Int>
        /// RFC 1421 headers were present (`Proc-Type: 4,ENCRYPTED`, `DEK-Info`).
        let hasHeaders: Bool
    }

    private static let begin = Array("-----BEGIN ".utf8)
    private static let dashes = Array("-----".utf8)

    /// True when `bytes` holds a BEGIN line.
    static func contains(_ bytes: UnsafeRawBufferPointer) -> Bool { find(begin, in: bytes, from: 0) != nil }

    /// Every block of `bytes`, in order; text between blocks is ignored, as
    /// libcrypto does. errSecDecode for a block without its END line.
    static func blocks(in bytes: UnsafeRawBufferPointer) throws -> [Block] {
        var out: [Block] = []
        var offset = 0
        while let start = find(begin, in: bytes, from: offset) {
            let labelStart = start + begin.count
            guard let labelEnd = find(dashes, in: bytes, from: labelStart), labelEnd - labelStart <= 64,
                  let label = String(validating: UnsafeRawBufferPointer(rebasing: bytes[labelStart..<labelEnd]), as: UTF8.self),
                  !label.contains("\n") else {
                throw KeychainError(.decode, "malformed PEM BEGIN line")
            }
            let end = Array("-----END \(label)-----".utf8)
            var bodyStart = labelEnd + dashes.count
            guard let endStart = find(end, in: bytes, from: bodyStart) else {
                throw KeychainError(.decode, "PEM block '\(label)' has no END line (truncated file?)")
            }
            // RFC 1421 headers: lines with a colon before the first empty line.
            var hasHeaders = false
            let blanks = [find(Array("\n\n".utf8), in: bytes, from: bodyStart), find(Array("\r\n\r\n".utf8), in: bytes, from: bodyStart)]
            if let colon = find(Array(":".utf8), in: bytes, from: bodyStart), colon < endStart,
               let blank = blanks.compactMap({ $0 }).min(), blank < endStart, colon < blank {
                hasHeaders = true
                bodyStart = blank
            }
            out.append(Block(label: label, whole: start..<(endStart + end.count), body: bodyStart..<endStart, hasHeaders: hasHeaders))
            offset = endStart + end.count
        }
        return out
    }

    /// The block's contents, base64-decoded into guarded memory.
    static func decode(_ block: Block, in bytes: UnsafeRawBufferPointer) throws -> SecureBytes {
        guard let der = try Base64.decodeSecret(UnsafeRawBufferPointer(rebasing: bytes[block.body])), der.count > 0 else {
            throw KeychainError(.decode, "PEM block '\(block.label)' is not valid base64")
        }
        return der
    }

    /// `der` as a PEM block of public data.
    static func encode(label: String, _ der: [UInt8]) -> String {
        let text = Base64.encode(der)
        var out = "-----BEGIN \(label)-----\n"
        var line = text.startIndex
        while line < text.endIndex {
            let next = text.index(line, offsetBy: 64, limitedBy: text.endIndex) ?? text.endIndex
            out += text[line..<next]
            out += "\n"
            line = next
        }
        return out + "-----END \(label)-----\n"
    }

    /// `der` (a private key) as a PEM block in guarded memory.
    static func encodeSecret(label: String, _ der: SecureBytes) throws -> SecureBytes {
        let head = Array("-----BEGIN \(label)-----\n".utf8)
        let tail = Array("-----END \(label)-----\n".utf8)
        let textCount = (der.count + 2) / 3 * 4
        let base64 = try SecureBytes(count: textCount)
        der.withUnsafeBytes { src in
            base64.withUnsafeMutableBytes { _ = Base64.encode(src, into: $0) }
        }
        let lines = (textCount + 63) / 64
        let out = try SecureBytes(count: head.count + textCount + lines + tail.count)
        out.withUnsafeMutableBytes { dst in
            base64.withUnsafeBytes { b64 in
                var o = 0
                for byte in head { dst[o] = byte; o += 1 }
                var i = 0
                while i < textCount {
                    let n = min(64, textCount - i)
                    for j in 0..<n { dst[o + j] = b64[i + j] }
                    o += n
                    dst[o] = 0x0a; o += 1
                    i += n
                }
                for byte in tail { dst[o] = byte; o += 1 }
            }
        }
        return out
    }

    /// The first occurrence of `needle` in `bytes` at or after `from`.
    static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count, from <= bytes.count - needle.count else { return nil }
        let first = needle[0]
        var i = from
        let last = bytes.count - needle.count
        while i <= last {
            if bytes[i] == first {
                var j = 1
                while j < needle.count && bytes[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }
}
