import FoundationEssentials
import Glibc

/// A calling app's entitlements (SPEC §6): Apple's `.entitlements` XML
/// property list, or JSON with the same keys.
public struct Entitlements: Sendable, Equatable {
    /// The access-group list: keychain-access-groups, then the application
    /// identifier, then the application groups, in order, without duplicates.
    public let accessGroups: [String]
    /// The application identifier, when the file has one.
    public let applicationIdentifier: String?

    /// The largest entitlements file read; real ones are a few hundred bytes.
    static let maximumFileSize = 1 << 20

    /// Reads and validates the file at `path`. Every failure is errSecParam
    /// with a message that starts with the path as given.
    public static func load(path: String) throws -> Entitlements {
        func fail(_ problem: String) -> KeychainError { KeychainError(.param, "\(path): \(problem)") }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw fail("cannot read the entitlements file: \(FileIO.errorText())") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { throw fail("not a regular file") }
        // Anyone who can rewrite the file can widen the app's access.
        guard st.st_mode & 0o022 == 0 else {
            throw fail("writable by other users (mode \(String(st.st_mode & 0o777, radix: 8))); run chmod 644 on it")
        }
        guard st.st_size <= maximumFileSize else { throw fail("larger than 1 MiB; not an entitlements file") }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var used = 0
        while used < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + used, $0.count - used) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw fail("cannot read the entitlements file: \(FileIO.errorText())") }
            used += n
        }
        return try parse(bytes, name: path)
    }

    /// Parses an entitlements document; `name` prefixes error messages.
    public static func parse(_ bytes: [UInt8], name: String) throws -> Entitlements {
        func fail(_ problem: String) -> KeychainError { KeychainError(.param, "\(name): \(problem)") }
        let first = bytes.first { ![0x20, 0x09, 0x0a, 0x0d, 0xef, 0xbb, 0xbf].contains($0) }
        let raw: RawEntitlements
        do {
            if first == UInt8(ascii: "{") {
                raw = try JSONDecoder().decode(RawEntitlements.self, from: Data(bytes))
            } else if first == UInt8(ascii: "<") || bytes.starts(with: Array("bplist".utf8)) {
                raw = try PropertyListDecoder().decode(RawEntitlements.self, from: Data(bytes))
            } else {
                throw fail("not an entitlements file (expected an XML property list or a JSON object)")
            }
        } catch let error as KeychainError {
            throw error
        } catch let DecodingError.typeMismatch(_, context) {
            throw fail(typeProblem(context.codingPath))
        } catch let DecodingError.valueNotFound(_, context) {
            throw fail(typeProblem(context.codingPath))
        } catch {
            throw fail("malformed: not a valid \(first == UInt8(ascii: "{") ? "JSON object" : "property list")")
        }

        let applicationIdentifier = raw.applicationIdentifier ?? raw.appleApplicationIdentifier
        if let id = applicationIdentifier { try checkName(id, key: "application-identifier", fail) }
        // The team prefix is everything up to and including the first dot.
        let prefix = applicationIdentifier.flatMap { id in id.firstIndex(of: ".").map { String(id[...$0]) } }

        func expand(_ value: String, key: String) throws -> String {
            var out = value
            for variable in ["$(AppIdentifierPrefix)", "$(TeamIdentifierPrefix)"] where out.contains(variable) {
                guard let prefix else {
                    throw fail("\(key) uses \(variable) but there is no application-identifier with a team prefix to expand it")
                }
                out = out.replacingAll(variable, prefix)
            }
            try checkName(out, key: key, fail)
            return out
        }

        var groups: [String] = []
        func append(_ group: String) { if !groups.contains(group) { groups.append(group) } }
        for group in raw.keychainAccessGroups ?? [] { append(try expand(group, key: "keychain-access-groups")) }
        if let id = applicationIdentifier { append(id) }
        for group in raw.applicationGroups ?? [] { append(try expand(group, key: "com.apple.security.application-groups")) }
        // Each group adds keys to a scoped session, which must fit a kernel key (32 KB).
        guard groups.count <= 64 else { throw fail("more than 64 access groups") }
        guard !groups.isEmpty else {
            throw fail("no access group: give keychain-access-groups, application-identifier or com.apple.security.application-groups")
        }
        return Entitlements(accessGroups: groups, applicationIdentifier: applicationIdentifier)
    }

    private static func typeProblem(_ path: [any CodingKey]) -> String {
        guard let key = path.first.flatMap({ RawEntitlements.CodingKeys(stringValue: $0.stringValue) }) else {
            return "malformed: the top level must be a dictionary"
        }
        switch key {
        case .keychainAccessGroups, .applicationGroups: return "\(key.rawValue) must be an array of strings"
        case .applicationIdentifier, .appleApplicationIdentifier: return "\(key.rawValue) must be a string"
        }
    }

    /// Access groups name keys in sessions and appear in messages: no empty
    /// names, no control characters, nothing absurdly long.
    private static func checkName(_ value: String, key: String, _ fail: (String) -> KeychainError) throws {
        guard !value.isEmpty else { throw fail("\(key) contains an empty name") }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) }) else {
            throw fail("\(key) contains a name with control characters")
        }
        guard value.utf8.count <= 200 else { throw fail("\(key) contains a name longer than 200 bytes") }
    }
}

/// The keys locket reads; everything else in the file is ignored.
private struct RawEntitlements: Decodable {
    var keychainAccessGroups: [String]?
    var applicationIdentifier: String?
    var appleApplicationIdentifier: String?
    var applicationGroups: [String]?

    enum CodingKeys: String, CodingKey {
        case keychainAccessGroups = "keychain-access-groups"
        case applicationIdentifier = "application-identifier"
        case appleApplicationIdentifier = "com.apple.application-identifier"
        case applicationGroups = "com.apple.security.application-groups"
    }
}

extension String {
    func replacingAll(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
