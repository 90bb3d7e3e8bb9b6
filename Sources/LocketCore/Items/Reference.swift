import LocketSupport

/// A secret reference as `exec` takes it (SPEC §9): `SERVICE/ACCOUNT` for a
/// generic password (`%2F` for a slash inside a name), or
/// `SCHEME://[USER@]HOST[:PORT][/PATH]` for an internet password.
public enum Reference {
    /// The query a reference names; errSecParam when it is malformed.
    public static func query(_ text: String) throws -> Query {
        func bad(_ why: String) -> KeychainError {
            KeychainError(.param, "'\(Printable.clip(text))' is not a secret reference: \(why)")
        }
        let bytes = Array(text.utf8)
        if let range = text.firstRange(matching: "://") {
            let scheme = String(text[..<range.lowerBound]).lowercased()
            guard let code = FourCharCodes.protocols[scheme] else { throw bad("unknown scheme '\(Printable.clip(scheme))'") }
            var rest = Substring(text[range.upperBound...])
            var path: Substring = ""
            if let slash = rest.firstIndex(of: "/") {
                path = rest[rest.index(after: slash)...]
                rest = rest[..<slash]
            }
            var user: Substring?
            if let at = rest.lastIndex(of: "@") {
                user = rest[..<at]
                rest = rest[rest.index(after: at)...]
            }
            var host = rest
            var port: Substring?
            if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
                host = rest[..<colon]
                port = rest[rest.index(after: colon)...]
            }
            guard !host.isEmpty else { throw bad("no host") }
            var query = Query(itemClass: .internetPassword)
            try query.match(.protocol, Array(code.utf8))
            try query.match(.server, try decode(host, bad))
            if let user { try query.match(.account, try decode(user, bad)) }
            if let port {
                guard let bytes = try? AttributeValue.parse(.port, Array(port.utf8)) else { throw bad("the port must be a number from 0 to 65535") }
                try query.match(.port, bytes)
            }
            if !path.isEmpty { try query.match(.path, try decode(path, bad)) }
            return query
        }
        let parts = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw bad("expected SERVICE/ACCOUNT (write a slash inside a name as %2F) or SCHEME://HOST/PATH") }
        let service = try decode(Substring(decoding: parts[0], as: UTF8.self), bad)
        guard !service.isEmpty else { throw bad("the service is empty") }
        var query = Query(itemClass: .genericPassword)
        try query.match(.service, service)
        try query.match(.account, try decode(Substring(decoding: parts[1], as: UTF8.self), bad))
        return query
    }

    /// Percent-decoding: `%2F` and friends; a lone or malformed `%` is an error.
    private static func decode(_ text: Substring, _ bad: (String) -> KeychainError) throws -> [UInt8] {
        guard let out = PercentEncoding.decodeStrict(text.utf8) else { throw bad("a % must be followed by two hexadecimal digits") }
        guard String(validating: out, as: UTF8.self) != nil else { throw bad("it decodes to invalid UTF-8") }
        return out
    }
}
