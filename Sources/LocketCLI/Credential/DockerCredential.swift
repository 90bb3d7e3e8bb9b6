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

        /// Refusals carry Go's words (`invalid character " " in host name`),
        /// as docker's helpers print them, without Go's `parse "URL":` prefix.
        init(parsing text: String) throws {
            if text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) {
                throw Failure(message: "net/url: invalid control character in URL")
            }
            // Go drops a fragment, so the helpers that parse URLs would answer
            // for the host; docker's own config and the helpers that key by the
            // whole string keep `host#x` apart from `host`. It names no registry.
            if text.contains("#") { throw Failure(message: "invalid server URL: it has a fragment (#)") }
            var rest = Substring(text)
            var scheme = ""
            if let separator = rest.firstRange(matching: "://") {
                scheme = rest[..<separator.lowerBound].lowercased()
                rest = rest[separator.upperBound...]
            } else if rest.hasPrefix("//") {
                rest = rest.dropFirst(2)
            }
            guard ["", "http", "https"].contains(scheme) else {
                throw Failure(message: "unsupported scheme: \(scheme.prefix(40))")
            }
            secure = scheme != "http"
            if let end = rest.firstIndex(of: "?") { rest = rest[..<end] }
            var authority = rest
            var path: Substring = ""
            if let slash = rest.firstIndex(of: "/") {
                authority = rest[..<slash]
                path = rest[rest.index(after: slash)...]
            }
            if let at = authority.lastIndex(of: "@") {
                guard ServerURL.isValidUserinfo(authority[..<at]) else { throw Failure(message: "net/url: invalid userinfo") }
                authority = authority[authority.index(after: at)...]
            }
            var host = authority
            var port: Substring?
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { throw Failure(message: "missing ']' in host") }
                host = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                if !after.isEmpty {
                    guard ServerURL.isValidOptionalPort(after) else { throw Failure(message: "invalid port \"\(after.prefix(40))\" after host") }
                    port = after.dropFirst()
                }
            } else if let colon = authority.lastIndex(of: ":") {
                let colonPort = authority[colon...]
                guard ServerURL.isValidOptionalPort(colonPort) else { throw Failure(message: "invalid port \"\(colonPort.prefix(40))\" after host") }
                host = authority[..<colon]
                port = colonPort.dropFirst()
            }
            let name = try ServerURL.hostName(host)
            guard !name.isEmpty else { throw Failure(message: "no hostname in URL") }
            if let port, !port.isEmpty {
                guard let n = Int(port), n <= 65535 else { throw Failure(message: "invalid port in server URL") }
                self.port = String(n)
            }
            guard let decoded = ServerURL.percentDecode(path) else { throw Failure(message: "invalid escape in server URL path") }
            self.host = name
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
    static func parseStore(_ request: SecureBytes) throws -> Credentials {
        let malformed = Failure(message: "the credentials are not a JSON object of strings")
        guard let object = try? JSONValue.parse(request), object.isObject else { throw malformed }
        func member(_ key: String) throws -> JSONValue? {
            guard let value = object.lastMember(matching: key) else { return nil }
            guard value.isString else { throw malformed }
            return value
        }
        let serverURL = try member("serverurl").map { String(decoding: $0.bytes(in: request), as: UTF8.self) } ?? ""
        let username = try member("username").map { String(decoding: $0.bytes(in: request), as: UTF8.self) } ?? ""
        let secret = try member("secret")?.secure(in: request) ?? SecureBytes()
        guard !serverURL.isEmpty else { throw Failure(message: missingServerURL) }
        guard !username.isEmpty else { throw Failure(message: missingUsername) }
        return Credentials(serverURL: serverURL, username: username, secret: secret)
    }
}
