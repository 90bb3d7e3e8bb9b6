import LocketSupport

/// An `otpauth://` URI (the Key URI format authenticator apps read from QR
/// codes) and the codes it makes: HOTP (RFC 4226) and TOTP (RFC 6238).
///
/// `otpauth://TYPE/LABEL?secret=BASE32&algorithm=SHA1&digits=6&period=30&counter=N`:
/// TYPE is `totp` or `hotp`; `secret` is required; `algorithm` (SHA1, SHA256,
/// SHA512; default SHA1), `digits` (6 to 8; default 6) and `period` (seconds,
/// default 30; TOTP) are optional; `counter` is required for HOTP. Other
/// parameters (issuer, image) are ignored. The URI is the item's secret, so
/// it is read as bytes and its `secret` never becomes a String.
public struct OneTimePassword {
    /// Counter-based or time-based.
    public enum Kind: String, Sendable {
        case hotp, totp
    }

    public let kind: Kind
    public let algorithm: HMACAlgorithm
    public let digits: Int
    /// TOTP's time step in seconds.
    public let period: UInt64
    /// HOTP's counter: the code shown now is the code of this value.
    public let counter: UInt64
    private let key: SecureBytes
    private let uri: SecureBytes
    /// Where the counter's digits are in `uri`, to write the next value.
    private let counterRange: Range<Int>?

    /// The longest URI read; real ones are under 300 bytes.
    public static let maximumLength = 8192

    /// Parses `uri` (trailing whitespace ignored). errSecParam, with a
    /// reason that never quotes the secret, when it is not a usable otpauth URI.
    public init(uri data: SecureBytes) throws {
        func bad(_ why: String) -> KeychainError {
            KeychainError(.param, "the item's secret is not a usable otpauth:// URI: \(why)")
        }
        var length = data.count
        data.withUnsafeBytes { while length > 0, [0x20, 0x09, 0x0a, 0x0d].contains($0[length - 1]) { length -= 1 } }
        guard length <= OneTimePassword.maximumLength else { throw bad("it is longer than \(ByteSize.text(OneTimePassword.maximumLength))") }
        let uri = try data.prefix(length)
        self.uri = uri

        var kind: Kind?
        var algorithm = HMACAlgorithm.sha1
        var digits = 6
        var period: UInt64 = 30
        var counter: (value: UInt64, range: Range<Int>)?
        var key: SecureBytes?
        try uri.withUnsafeBytes { raw in
            let scheme = Array("otpauth://".utf8)
            guard raw.count >= scheme.count, zip(raw.prefix(scheme.count), scheme).allSatisfy({ lowercased($0) == $1 }) else {
                throw bad("it does not start with otpauth://")
            }
            var i = scheme.count
            let typeStart = i
            while i < raw.count, raw[i] != UInt8(ascii: "/"), raw[i] != UInt8(ascii: "?") { i += 1 }
            let type = String(decoding: raw[typeStart..<i].map(lowercased), as: UTF8.self)
            switch type {
            case "totp": kind = .totp
            case "hotp": kind = .hotp
            default: throw bad("the type is '\(Printable.clip(type, max: 16))', not totp or hotp")
            }
            // The label (issuer:account) is for people; skip to the parameters.
            while i < raw.count, raw[i] != UInt8(ascii: "?"), raw[i] != UInt8(ascii: "#") { i += 1 }
            guard i < raw.count, raw[i] == UInt8(ascii: "?") else { throw bad("it has no parameters (no secret)") }
            i += 1
            var end = i
            while end < raw.count, raw[end] != UInt8(ascii: "#") { end += 1 }
            var seen: Set<String> = []
            var start = i
            while start <= end {
                var stop = start
                while stop < end, raw[stop] != UInt8(ascii: "&") { stop += 1 }
                defer { start = stop + 1 }
                guard stop > start else { continue }
                var eq = start
                while eq < stop, raw[eq] != UInt8(ascii: "=") { eq += 1 }
                guard let name = percentDecodedText(UnsafeRawBufferPointer(rebasing: raw[start..<eq]))?.lowercased() else {
                    throw bad("a parameter name is not valid percent-encoded UTF-8")
                }
                let valueRange = min(eq + 1, stop)..<stop
                // The first of two equal parameters counts, as in URLComponents.
                guard seen.insert(name).inserted else { continue }
                if name == "secret" {
                    let decoded = try percentDecoded(UnsafeRawBufferPointer(rebasing: raw[valueRange]), bad)
                    do {
                        key = try decoded.withUnsafeBytes { try Base32.decode($0) }
                    } catch let error as Base32.Invalid {
                        throw bad("the secret parameter is not base32 (\(error.reason))")
                    }
                    continue
                }
                guard ["algorithm", "digits", "period", "counter"].contains(name) else { continue }
                guard let text = percentDecodedText(UnsafeRawBufferPointer(rebasing: raw[valueRange])) else {
                    throw bad("the \(name) parameter is not valid percent-encoded UTF-8")
                }
                switch name {
                case "algorithm":
                    guard let chosen = HMACAlgorithm(rawValue: text.uppercased()) else {
                        throw bad("the algorithm is '\(Printable.clip(text, max: 16))', not SHA1, SHA256 or SHA512")
                    }
                    algorithm = chosen
                case "digits":
                    guard let n = Int(text), (6...8).contains(n) else {
                        throw bad("digits is '\(Printable.clip(text, max: 16))', not 6, 7 or 8")
                    }
                    digits = n
                case "period":
                    guard let n = UInt64(text), n >= 1, n <= UInt64(UInt32.max) else {
                        throw bad("period is '\(Printable.clip(text, max: 24))', not a whole number of seconds from 1 to \(UInt32.max)")
                    }
                    period = n
                default:
                    guard let n = UInt64(text) else {
                        throw bad("counter is '\(Printable.clip(text, max: 24))', not a whole number from 0 to \(UInt64.max)")
                    }
                    counter = (n, valueRange)
                }
            }
        }
        guard let kind else { throw bad("it has no type") }
        guard let key else { throw bad("it has no secret parameter") }
        guard key.count > 0 else { throw bad("the secret parameter is empty") }
        if kind == .hotp && counter == nil { throw bad("an hotp URI needs a counter parameter") }
        self.kind = kind
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
        self.counter = counter?.value ?? 0
        self.counterRange = kind == .hotp ? counter?.range : nil
        self.key = key
    }

    /// The HOTP value of `counter` (RFC 4226 §5.3: dynamic truncation, then
    /// the low `digits` decimal digits), zero-padded.
    public func code(counter: UInt64) throws -> String {
        let message = BigEndian.bytes(counter)
        let mac = try algorithm.authenticate(key: key, message: message)
        let value: UInt32 = mac.withUnsafeBytes { h in
            let offset = Int(h[h.count - 1] & 0x0f)
            return BigEndian.read(UInt32.self, h, at: offset)! & 0x7fff_ffff
        }
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let text = String(value % modulus)
        return String(repeating: "0", count: digits - text.count) + text
    }

    /// The TOTP code at `time` (seconds since 1970, T0 = 0) and the seconds
    /// until the next one.
    public func code(at time: Int64) throws -> (code: String, secondsLeft: UInt64) {
        guard time >= 0 else { throw KeychainError(.param, "the time is before 1970") }
        let t = UInt64(time)
        return (try code(counter: t / period), period - t % period)
    }

    /// The URI with the counter advanced by one, every other byte as it was.
    func advanced() throws -> SecureBytes {
        guard let range = counterRange else { throw KeychainError(.param, "only an hotp URI has a counter") }
        guard counter < UInt64.max else { throw KeychainError(.param, "the hotp counter is at its maximum and can't advance") }
        let next = Array(String(counter + 1).utf8)
        let out = try SecureBytes(count: uri.count - range.count + next.count)
        uri.withUnsafeBytes { old in
            out.withUnsafeMutableBytes { new in
                var n = 0
                for b in old[..<range.lowerBound] { new[n] = b; n += 1 }
                for b in next { new[n] = b; n += 1 }
                for b in old[range.upperBound...] { new[n] = b; n += 1 }
            }
        }
        return out
    }
}

private func lowercased(_ c: UInt8) -> UInt8 {
    (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c) ? c + 32 : c
}

/// The secret parameter, percent-decoded as a form query (`+` a space) into
/// guarded memory.
private func percentDecoded(_ raw: UnsafeRawBufferPointer, _ bad: (String) -> KeychainError) throws -> SecureBytes {
    let out = try SecureBytes(count: raw.count)
    let count = out.withUnsafeMutableBytes { PercentEncoding.decodeStrict(raw, into: $0, plusAsSpace: true) }
    guard let count else { throw bad("a % is not followed by two hexadecimal digits") }
    return try out.prefix(count)
}

/// A parameter that is not secret, decoded to text; nil when malformed, not
/// UTF-8 or longer than 256 bytes.
private func percentDecodedText(_ raw: UnsafeRawBufferPointer) -> String? {
    guard raw.count <= 256, let out = PercentEncoding.decodeStrict(raw, plusAsSpace: true) else { return nil }
    return String(validating: out, as: UTF8.self)
}
