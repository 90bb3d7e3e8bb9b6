import LocketCore
import LocketSupport

/// The docker credential-helpers protocol (docker/docker-credential-helpers):
/// `store` reads `{"ServerURL": ..., "Username": ..., "Secret": ...}`;
/// `get` and `erase` read a server URL; `get` writes the same JSON object,
/// `list` a map of server URL to username. Failures are one line on
/// standard output, where clients read them, and exit status 1; a miss is
/// exactly `credentials not found in native keychain`, which clients match.
enum DockerCredential {
    /// The message clients recognize as "no such credentials".
    static let notFound = "credentials not found in native keychain"
    static let missingServerURL = "no credentials server URL"
    static let missingUsername = "no credentials username"
    /// The label of the items the helper stores: what `find` shows, and what
    /// `list` selects (docker-credential-helpers' CredsLabel).
    static let label = "Docker Credentials"
    /// The longest request read; real ones are a few hundred bytes.
    static let maximumSize = 1 << 20

    /// A protocol failure: `message` goes to standard output as is.
    struct Failure: Error {
        let message: String
    }

    /// A `store` request. The secret stays in guarded memory.
    struct Credentials {
        var serverURL: String
        var username: String
        var secret: SecureBytes
    }

    /// A server URL as docker-credential-helpers' `registryurl.Parse` reads
    /// it: no scheme means https; only http and https; the query is dropped.
    struct ServerURL: Equatable {
        var secure: Bool
        var host: String
        var port: String?
        /// The path without its leading slash, as locket stores paths.
        var path: String

        init(parsing text: String) throws {
            var rest = Substring(text)
            var scheme = ""
            if let separator = rest.firstRange(of: "://") {
                scheme = rest[..<separator.lowerBound].lowercased()
                rest = rest[separator.upperBound...]
            } else if rest.hasPrefix("//") {
                rest = rest.dropFirst(2)
            }
            guard ["", "http", "https"].contains(scheme) else {
                throw Failure(message: "unsupported scheme: \(scheme.prefix(40))")
            }
            secure = scheme != "http"
            if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
            var authority = rest
            var path: Substring = ""
            if let slash = rest.firstIndex(of: "/") {
                authority = rest[..<slash]
                path = rest[rest.index(after: slash)...]
            }
            if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
            var host = authority
            var port: Substring?
            if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                host = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                if after.hasPrefix(":") { port = after.dropFirst() } else if !after.isEmpty { throw Failure(message: "invalid server URL") }
            } else if let colon = authority.lastIndex(of: ":") {
                host = authority[..<colon]
                port = authority[authority.index(after: colon)...]
            }
            guard !host.isEmpty else { throw Failure(message: "no hostname in URL") }
            if let port, !port.isEmpty {
                guard port.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(port), n <= 65535 else {
                    throw Failure(message: "invalid port in server URL")
                }
                self.port = String(n)
            }
            guard let decoded = ServerURL.percentDecode(path) else { throw Failure(message: "invalid escape in server URL path") }
            self.host = String(host)
            self.path = decoded
        }

        private static func percentDecode(_ s: Substring) -> String? {
            guard let out = PercentEncoding.decodeStrict(s.utf8) else { return nil }
            return String(validating: out, as: UTF8.self)
        }

        /// The query for exactly this URL: protocol, server, port (none
        /// means none) and path, as macOS's osxkeychain helper matches.
        func query() throws -> Query {
            var query = Query(itemClass: .internetPassword)
            try query.match(.protocol, Array((secure ? "htps" : "http").utf8))
            try query.match(.server, Array(host.utf8))
            try query.match(.port, port.map { try AttributeValue.parse(.port, Array($0.utf8)) } ?? [])
            try query.match(.path, Array(path.utf8))
            return query
        }

        /// The URL `list` prints for an item: scheme, host, port, path.
        static func text(of item: Item) -> String {
            let secure = item[.protocol] != Array("http".utf8)
            var host = String(decoding: item[.server], as: UTF8.self)
            if host.contains(":") { host = "[\(host)]" }
            let port = item[.port].isEmpty ? "" : ":\(AttributeValue.port(item[.port]))"
            let path = item[.path].isEmpty ? "" : "/" + String(decoding: item[.path], as: UTF8.self)
            return (secure ? "https://" : "http://") + host + port + path
        }
    }

    /// Parses a `store` request: one JSON object; keys are matched without
    /// regard to case and the last of equal keys wins, as Go's encoding/json
    /// does; other members are skipped.
    static func parseStore(_ raw: UnsafeRawBufferPointer) throws -> Credentials {
        var reader = JSONObjectReader(raw)
        var serverURL = "", username = ""
        var secret = SecureBytes(count: 0)
        do {
            try reader.readObject { key, reader in
                switch key.lowercased() {
                case "serverurl": serverURL = try reader.readText()
                case "username": username = try reader.readText()
                case "secret": secret = try reader.readSecret()
                default: try reader.skipValue(depth: 1)
                }
            }
        } catch is JSONObjectReader.Malformed {
            throw Failure(message: "the credentials are not a JSON object of strings")
        }
        guard !serverURL.isEmpty else { throw Failure(message: missingServerURL) }
        guard !username.isEmpty else { throw Failure(message: missingUsername) }
        return Credentials(serverURL: serverURL, username: username, secret: secret)
    }
}

/// Just enough of a strict JSON reader (RFC 8259) for the one object a
/// docker `store` sends. String values are decoded straight into their
/// destination, so a secret never passes through a String.
struct JSONObjectReader {
    struct Malformed: Error {}

    private let bytes: UnsafeRawBufferPointer
    private var i = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private var next: UInt8? { i < bytes.count ? bytes[i] : nil }

    private mutating func blanks() { while let b = next, b == 0x20 || b == 0x0a || b == 0x0d || b == 0x09 { i += 1 } }

    private mutating func expect(_ c: UInt8) throws {
        blanks()
        guard next == c else { throw Malformed() }
        i += 1
    }

    /// Reads `{ "key": value, ... }` and nothing but blanks after it.
    mutating func readObject(_ member: (String, inout JSONObjectReader) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        blanks()
        if next == UInt8(ascii: "}") {
            i += 1
        } else {
            while true {
                blanks()
                let key = try readText()
                try expect(UInt8(ascii: ":"))
                blanks()
                try member(key, &self)
                blanks()
                if next == UInt8(ascii: ",") { i += 1; continue }
                try expect(UInt8(ascii: "}"))
                break
            }
        }
        blanks()
        guard i == bytes.count else { throw Malformed() }
    }

    /// A string value as text (not for secrets).
    mutating func readText() throws -> String {
        var out: [UInt8] = []
        try readString { out.append($0) }
        return String(decoding: out, as: UTF8.self)
    }

    /// A string value into guarded memory.
    mutating func readSecret() throws -> SecureBytes {
        // The decoded string is never longer than its encoding.
        let start = i
        var length = 0
        try readString { _ in length += 1 }
        let out = SecureBytes(count: length)
        i = start
        var n = 0
        try out.withUnsafeMutableBytes { out in try readString { out[n] = $0; n += 1 } }
        return out
    }

    /// Decodes one string, byte by byte, into `emit`: escapes, surrogate
    /// pairs; refuses control characters, lone surrogates and invalid UTF-8.
    private mutating func readString(_ emit: (UInt8) -> Void) throws {
        guard next == UInt8(ascii: "\"") else { throw Malformed() }
        i += 1
        let start = i
        // Raw bytes must be UTF-8: check the string's span first.
        var end = i
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
        guard end < bytes.count, Text.isText(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) else { throw Malformed() }
        while true {
            guard let b = next else { throw Malformed() }
            i += 1
            switch b {
            case UInt8(ascii: "\""): return
            case 0..<0x20: throw Malformed()
            case UInt8(ascii: "\\"):
                guard let e = next else { throw Malformed() }
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): emit(e)
                case UInt8(ascii: "b"): emit(0x08)
                case UInt8(ascii: "f"): emit(0x0c)
                case UInt8(ascii: "n"): emit(0x0a)
                case UInt8(ascii: "r"): emit(0x0d)
                case UInt8(ascii: "t"): emit(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xd800...0xdbff).contains(scalar) {
                        guard next == UInt8(ascii: "\\") else { throw Malformed() }
                        i += 1
                        guard next == UInt8(ascii: "u") else { throw Malformed() }
                        i += 1
                        let low = try hex4()
                        guard (0xdc00...0xdfff).contains(low) else { throw Malformed() }
                        scalar = 0x10000 + (scalar - 0xd800) << 10 + (low - 0xdc00)
                    } else if (0xdc00...0xdfff).contains(scalar) {
                        throw Malformed()
                    }
                    for unit in Unicode.Scalar(scalar)!.utf8 { emit(unit) }
                default: throw Malformed()
                }
            default: emit(b)
            }
        }
    }

    private mutating func hex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let b = next, let digit = UInt32(String(UnicodeScalar(b)), radix: 16) else { throw Malformed() }
            value = value << 4 | digit
            i += 1
        }
        return value
    }

    /// Skips a value of any type; nesting is bounded.
    mutating func skipValue(depth: Int) throws {
        guard depth < 64 else { throw Malformed() }
        blanks()
        guard let b = next else { throw Malformed() }
        switch b {
        case UInt8(ascii: "\""): try readString { _ in }
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = b == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            i += 1
            blanks()
            if next == close { i += 1; return }
            while true {
                if b == UInt8(ascii: "{") {
                    blanks()
                    try readString { _ in }
                    try expect(UInt8(ascii: ":"))
                }
                try skipValue(depth: depth + 1)
                blanks()
                if next == UInt8(ascii: ",") { i += 1; continue }
                try expect(close)
                return
            }
        default:
            // true, false, null or a number: a run of their characters.
            let start = i
            while let c = next, c == UInt8(ascii: "-") || c == UInt8(ascii: "+") || c == UInt8(ascii: ".")
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c)
                || c == UInt8(ascii: "E") {
                i += 1
            }
            let word = String(decoding: bytes[start..<i], as: UTF8.self)
            guard ["true", "false", "null"].contains(word) || Double(word) != nil else { throw Malformed() }
        }
    }
}
