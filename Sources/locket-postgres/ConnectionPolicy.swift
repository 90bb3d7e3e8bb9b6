import CLibPQ

/// What locket lets a connection be: TLS with full verification unless every
/// host is a Unix socket directory, and the password never a keyword (it
/// comes from libpq's own sources or from locket's password field).
enum ConnectionPolicy {
    /// Adjusts `keywords`/`values` in place; a reason when the connection is refused.
    static func apply(keywords: inout [String], values: inout [String]) -> String? {
        if keywords.contains("password") {
            return "the password is not a connection keyword: it comes from libpq's password file or from locket"
        }
        // A keyword this libpq doesn't know (load_balance_hosts before libpq
        // 16) is refused by name: ignoring it would change what the URL means.
        if let unknown = keywords.first(where: { !known.contains($0) }) {
            return "this locket-postgres's libpq (\(libraryVersion)) does not know the connection keyword '\(unknown)'"
        }
        let host = keywords.firstIndex(of: "host").map { values[$0] }
        let hostaddr = keywords.contains("hostaddr")
        // A socket directory is an absolute path (or an abstract socket, "@name").
        let local = !hostaddr && host.map { !$0.isEmpty && $0.split(separator: ",", omittingEmptySubsequences: false)
            .allSatisfy { $0.hasPrefix("/") || $0.hasPrefix("@") } } == true
        if let index = keywords.firstIndex(of: "sslmode") {
            if !local && values[index] != "verify-full" {
                return "sslmode \(values[index]) is refused for a network connection: locket needs verify-full"
            }
        } else if !local {
            // Set explicitly, so that neither PGSSLMODE nor a service file can weaken it.
            keywords.append("sslmode")
            values.append("verify-full")
        }
        if !keywords.contains("connect_timeout") {
            keywords.append("connect_timeout")
            values.append("10")
        }
        return nil
    }

    /// The keywords the linked libpq accepts (PQconndefaults).
    static let known: Set<String> = {
        var names: Set<String> = []
        guard let options = PQconndefaults() else { return names }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            names.insert(String(cString: keyword))
            option += 1
        }
        return names
    }()

    /// "libpq 15.18"-style, from PQlibVersion (major * 10000 + minor).
    static var libraryVersion: String {
        let version = PQlibVersion()
        return "libpq \(version / 10000).\(version % 10000)"
    }
}
