import LocketCore
import LocketSupport

/// Where a remote keychain is (SPEC §17): a `postgres://` URL turned into
/// libpq keywords. The URL names the server, database and user; the
/// password is never part of it (libpq's own sources, or a locket item).
public struct RemoteLocation: Sendable {
    /// The URL as given, for messages (it holds no password).
    public let url: String
    /// libpq keyword/value pairs.
    public var parameters: [(String, String)]
    /// The helper to start; nil: the installed one beside locket.
    public var helper: String?

    /// The query keywords a URL may carry; anything else is refused rather than ignored.
    static let keywords: Set<String> = ["host", "hostaddr", "port", "dbname", "user", "sslmode", "sslrootcert", "sslcert",
                                        "sslkey", "sslcrl", "connect_timeout", "application_name", "service", "passfile",
                                        "target_session_attrs", "load_balance_hosts"]

    /// A location from libpq keywords already split (tests, named remotes); `url` names it in messages.
    public init(url: String, parameters: [(String, String)], helper: String? = nil) {
        self.url = url
        self.parameters = parameters
        self.helper = helper
    }

    /// Whether `text` names a remote keychain rather than a file.
    public static func isURL(_ text: String) -> Bool {
        // The first byte first: every file keychain's command asks.
        text.utf8.first == UInt8(ascii: "p") && (text.hasPrefix("postgres://") || text.hasPrefix("postgresql://"))
    }

    /// Parses `postgres[ql]://[USER@][HOST[:PORT]][,HOST[:PORT]]...[/DBNAME][?KEYWORD=VALUE&...]`
    /// as libpq parses it: a list of hosts becomes libpq's `host` list and
    /// their ports its `port` list (an empty entry where a host has none:
    /// the default port), so that `target_session_attrs` and
    /// `load_balance_hosts` choose among them as for psql. A HOST may be a
    /// percent-encoded socket directory (`%2Frun%2Fpostgresql`) or an IPv6
    /// address in brackets; `?host=/a,/b&port=5432,5433` gives the lists as
    /// keywords. A keyword given twice keeps its last value, as in libpq.
    public init(url: String, helper: String? = nil) throws {
        self.url = url
        self.helper = helper
        guard Self.isURL(url) else { throw Self.bad(url, "it does not start with postgres://") }
        var rest = url.drop { $0 != ":" }.dropFirst(3)
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var pairs: [(String, String)] = []
        if let at = rest.lastIndex(of: "@") {
            let user = rest[..<at]
            if user.contains(":") {
                throw Self.bad(url, "a password does not belong in the URL (use PGPASSFILE, ~/.pgpass, or a password item)")
            }
            pairs.append(("user", try Self.decode(user, url)))
            rest = rest[rest.index(after: at)...]
        }
        var hosts: [String] = [], ports: [String] = []
        if !rest.isEmpty {
            for spec in rest.split(separator: ",", omittingEmptySubsequences: false) {
                let (host, port) = try Self.hostAndPort(spec, url)
                hosts.append(try Self.decode(host, url))
                ports.append(String(port ?? ""))
            }
        }
        if hosts.contains(where: { !$0.isEmpty }) || hosts.count > 1 { pairs.append(("host", hosts.joined(separator: ","))) }
        if ports.contains(where: { !$0.isEmpty }) { pairs.append(("port", ports.joined(separator: ","))) }
        if !path.isEmpty { pairs.append(("dbname", try Self.decode(path, url))) }
        for item in query.split(separator: "&") where !item.isEmpty {
            guard let equals = item.firstIndex(of: "=") else { throw Self.bad(url, "'\(item)' has no value") }
            let keyword = try Self.decode(item[..<equals], url)
            guard Self.keywords.contains(keyword) else {
                throw Self.bad(url, keyword == "password" ? "a password does not belong in the URL (use PGPASSFILE, ~/.pgpass, or a password item)"
                                                          : "'\(keyword)' is not a connection keyword locket passes on")
            }
            pairs.removeAll { $0.0 == keyword }
            pairs.append((keyword, try Self.decode(item[item.index(after: equals)...], url)))
        }
        parameters = pairs
        try checkLists()
    }

    /// One `HOST[:PORT]` or `[IPV6][:PORT]` of the URL's host list.
    private static func hostAndPort(_ spec: Substring, _ url: String) throws -> (Substring, Substring?) {
        if spec.hasPrefix("[") {
            guard let close = spec.firstIndex(of: "]") else { throw bad(url, "an IPv6 address without its ]") }
            let after = spec[spec.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw bad(url, "'\(after)' follows an IPv6 address") }
            return (spec[spec.index(after: spec.startIndex)..<close], after.isEmpty ? nil : after.dropFirst())
        }
        guard let colon = spec.firstIndex(of: ":") else { return (spec, nil) }
        return (spec[..<colon], spec[spec.index(after: colon)...])
    }

    /// Ports are numbers (an empty entry: the default port), and a list of
    /// them names one port for every host, or one for all, as libpq requires.
    private func checkLists() throws {
        func entries(_ keyword: String) -> [Substring] {
            value(keyword).map { $0.split(separator: ",", omittingEmptySubsequences: false) } ?? []
        }
        let ports = entries("port")
        for port in ports where !port.isEmpty && (UInt16(port) ?? 0) == 0 {
            throw Self.bad(url, "the port '\(port)' is not a number from 1 to 65535")
        }
        let hosts = max(entries("host").count, entries("hostaddr").count)
        if ports.count > 1 && hosts != ports.count {
            throw Self.bad(url, "it gives \(ports.count) ports for \(hosts) host\(hosts == 1 ? "" : "s") (give one for each host, or one for all)")
        }
    }

    /// The value of `keyword`, if the URL gave one.
    public func value(_ keyword: String) -> String? { parameters.first { $0.0 == keyword }?.1 }

    private static func decode(_ text: Substring, _ url: String) throws -> String {
        guard let bytes = PercentEncoding.decodeStrict(text.utf8) else { throw bad(url, "a broken %-escape") }
        guard let decoded = String(validating: bytes, as: UTF8.self), !decoded.utf8.contains(0) else {
            throw bad(url, "an escape that is not UTF-8 text")
        }
        return decoded
    }

    private static func bad(_ url: String, _ why: String) -> KeychainError {
        KeychainError(.param, "\(redacted(url)) is not a usable remote keychain URL: \(why)")
    }

    /// `url` with whatever could be a password blanked: the user-info after
    /// a colon, and the value of a `password` keyword. A refused URL is
    /// named in the error without what made it refused.
    static func redacted(_ url: String) -> String {
        var text = Substring(url)
        var out = ""
        if let scheme = text.firstIndex(of: "/") {
            out += text[..<scheme]
            text = text[scheme...]
        }
        let authorityEnd = text.dropFirst(2).firstIndex { $0 == "/" || $0 == "?" } ?? text.endIndex
        if let at = text[..<authorityEnd].lastIndex(of: "@"), let colon = text[..<at].firstIndex(of: ":") {
            out += text[...colon] + "****"
            text = text[at...]
        }
        return (out + text).split(separator: "&", omittingEmptySubsequences: false).map { part in
            guard let equals = part.firstIndex(of: "="), part[..<equals].hasSuffix("password") else { return String(part) }
            return part[...equals] + "****"
        }.joined(separator: "&")
    }
}
