import LocketCore
import LocketSupport

/// A request in git's credential-helper protocol: `key=value` lines up to a
/// blank line or the end of input. Unknown keys are kept but never used;
/// a malformed line is skipped, as a helper must not break git.
public struct GitCredential: Equatable, Sendable {
    public var fields: [String: String] = [:]

    /// The largest request read; git's are a few hundred bytes.
    public static let maximumSize = 1 << 20

    public init(fields: [String: String] = [:]) { self.fields = fields }

    /// Parses the protocol text. The first value of a key wins; `url=` fills
    /// in whatever the other keys did not give.
    public init(parsing bytes: [UInt8]) {
        var lines = bytes.split(separator: 0x0a, omittingEmptySubsequences: false)[...]
        while let line = lines.popFirst() {
            var line = line
            if line.last == 0x0d { line = line.dropLast() }
            if line.isEmpty { break }
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")),
                  let key = String(validating: line[..<eq], as: UTF8.self),
                  let value = String(validating: line[(eq + 1)...], as: UTF8.self),
                  !key.isEmpty, !value.contains("\0") else { continue }
            if fields[key] == nil { fields[key] = value }
        }
        if let url = fields["url"] { fillFromURL(url) }
    }

    private mutating func fillFromURL(_ url: String) {
        guard let separator = url.firstRange(matching: "://") else { return }
        if fields["protocol"] == nil { fields["protocol"] = String(url[..<separator.lowerBound]) }
        var rest = url[separator.upperBound...]
        var path: Substring?
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            if fields["username"] == nil { fields["username"] = GitCredential.percentDecode(parts[0]) }
            if parts.count > 1, fields["password"] == nil { fields["password"] = GitCredential.percentDecode(parts[1]) }
        }
        if fields["host"] == nil, !rest.isEmpty { fields["host"] = String(rest) }
        if fields["path"] == nil, let path, !path.isEmpty, let decoded = GitCredential.percentDecode(path) { fields["path"] = decoded }
    }

    /// nil when the result could break the line protocol (a decoded NUL, CR
    /// or LF smuggled into a field, as in CVE-2020-5260).
    static func percentDecode(_ s: Substring) -> String? {
        let out = PercentEncoding.decodeLenient(s.utf8)
        guard !out.contains(where: { $0 == 0 || $0 == 0x0a || $0 == 0x0d }) else { return nil }
        return String(decoding: out, as: UTF8.self)
    }

    /// The protocol as a kSecAttrProtocol code: a known scheme's code, or a
    /// short unknown one padded to four characters; nil when it has no code.
    var protocolCode: [UInt8]? {
        guard let name = fields["protocol"] else { return nil }
        if let code = FourCharCodes.protocols[name.lowercased()] { return Array(code.utf8) }
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 4, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return nil }
        return bytes + [UInt8](repeating: 0x20, count: 4 - bytes.count)
    }

    /// `host` split into server and port (`example.com:8443`, `[::1]:8080`).
    var serverAndPort: (server: String, port: [UInt8]?)? {
        guard let host = fields["host"] else { return nil }
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let server = String(host[...close])
            let rest = host[host.index(after: close)...]
            guard rest.hasPrefix(":") else { return (server, nil) }
            return (server, try? AttributeValue.parse(.port, Array(rest.dropFirst().utf8)))
        }
        if let colon = host.lastIndex(of: ":"), let port = try? AttributeValue.parse(.port, Array(host[host.index(after: colon)...].utf8)) {
            return (String(host[..<colon]), port)
        }
        return (host, nil)
    }

    /// The metadata git wants kept with the password.
    static let keptFields = ["password_expiry_utc", "oauth_refresh_token"]
}
