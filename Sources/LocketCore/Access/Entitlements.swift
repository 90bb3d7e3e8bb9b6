import Glibc
import LocketSupport

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
    /// with a message that starts with the path as given. The file must be
    /// the caller's own (or root's), writable by nobody else, in a directory
    /// others cannot write (unless sticky, like /tmp): whoever can rewrite or
    /// replace it can widen the app's access (`TrustedFile`).
    public static func load(path: String) throws -> Entitlements {
        let file = TrustedFile(what: "an entitlements file", holds: "entitlements", maximumSize: maximumFileSize)
        return try parse(try file.read(path), name: path)
    }

    /// Parses an entitlements document; `name` prefixes error messages.
    public static func parse(_ bytes: [UInt8], name: String) throws -> Entitlements {
        func fail(_ problem: String) -> KeychainError { KeychainError(.param, "\(name): \(problem)") }
        let raw = try RawEntitlements(bytes, fail)

        let applicationIdentifier = raw.applicationIdentifier ?? raw.appleApplicationIdentifier
        if let id = applicationIdentifier { try checkName(id, key: "application-identifier", fail) }
        // The team prefix is everything up to and including the first dot.
        let prefix = applicationIdentifier.flatMap { id in id.firstIndex(of: ".").map { String(id[...$0]) } }

        func expand(_ value: String, key: String) throws -> String {
            var out = value
            for variable in ["$(AppIdentifierPrefix)", "$(TeamIdentifierPrefix)"] where out.contains(occurrenceOf: variable) {
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
struct RawEntitlements: Equatable {
    var keychainAccessGroups: [String]?
    var applicationIdentifier: String?
    var appleApplicationIdentifier: String?
    var applicationGroups: [String]?

    /// Parses `bytes` as JSON, an XML or a binary property list, by its
    /// first byte, and reads the four keys; `fail` words each refusal.
    init(_ bytes: [UInt8], _ fail: (String) -> KeychainError) throws {
        let first = bytes.first { ![0x20, 0x09, 0x0a, 0x0d, 0xef, 0xbb, 0xbf].contains($0) }
        let document: DocumentValue
        do {
            if first == UInt8(ascii: "{") {
                document = try JSONDocument.parse(bytes)
            } else if bytes.starts(with: Array("bplist".utf8)) {
                document = try BinaryPropertyList.parse(bytes)
            } else if first == UInt8(ascii: "<") {
                document = try XMLPropertyList.parse(bytes)
            } else {
                throw fail("not an entitlements file (expected an XML property list or a JSON object)")
            }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw fail("malformed: not a valid \(first == UInt8(ascii: "{") ? "JSON object" : "property list")")
        }
        guard case .dictionary(let top) = document else { throw fail("malformed: the top level must be a dictionary") }

        // A null value counts as absent, as it did with Foundation's decodeIfPresent.
        func strings(_ key: String) throws -> [String]? {
            switch top[key] {
            case nil, .null?:
                return nil
            case .array(let elements)?:
                return try elements.map { element in
                    guard case .string(let string) = element else { throw fail("\(key) must be an array of strings") }
                    return string
                }
            default:
                throw fail("\(key) must be an array of strings")
            }
        }
        func string(_ key: String) throws -> String? {
            switch top[key] {
            case nil, .null?: return nil
            case .string(let string)?: return string
            default: throw fail("\(key) must be a string")
            }
        }
        // In this order, Foundation's: of two wrongly typed keys, the first is reported.
        keychainAccessGroups = try strings("keychain-access-groups")
        applicationIdentifier = try string("application-identifier")
        appleApplicationIdentifier = try string("com.apple.application-identifier")
        applicationGroups = try strings("com.apple.security.application-groups")
    }
}

extension String {
    func replacingAll(_ target: String, _ replacement: String) -> String {
        replacing(every: target, with: replacement)
    }
}
