import LocketSupport

/// The provider's object paths (the Secret Service's own layout, so that
/// clients that build paths by hand, as go-keyring builds
/// `/org/freedesktop/secrets/collection/login`, find them):
///
///     /org/freedesktop/secrets                          the service
///     /org/freedesktop/secrets/collection/NAME          a collection (a keychain)
///     /org/freedesktop/secrets/aliases/ALIAS            the same collection by alias
///     /org/freedesktop/secrets/collection/NAME/REF      an item: REF is its persistent reference in hex
///     /org/freedesktop/secrets/session/N, .../prompt/N  sessions and prompts
///
/// An item's path is made from its reference alone, so the provider keeps
/// no table of items: a path names the same item for its whole life, in
/// every run of the provider, and memory does not grow with the keychain.
enum ObjectPath {
    static let service = "/org/freedesktop/secrets"
    static let collectionPrefix = service + "/collection/"
    static let aliasPrefix = service + "/aliases/"
    static let sessionPrefix = service + "/session/"
    static let promptPrefix = service + "/prompt/"
    /// "No object" (no prompt needed, no such alias).
    static let none = "/"

    /// What a path names.
    enum Target {
        case root
        case service
        /// `/org/freedesktop/secrets/collection` or `/aliases`: a directory of collections.
        case collections
        /// A collection, by name or by alias (`element` is what the path said).
        case collection(name: String, viaAlias: Bool)
        case item(collection: String, viaAlias: Bool, ref: [UInt8])
        case session(String)
        case prompt(String)
        /// `/org`, `/org/freedesktop`: only introspection answers.
        case ancestor
        case unknown
    }

    /// Parses `path`; `alias` resolves an alias to a collection name.
    static func target(_ path: String, alias: (String) -> String?) -> Target {
        switch path {
        case "/": return .root
        case "/org", "/org/freedesktop": return .ancestor
        case service: return .service
        case service + "/collection", service + "/aliases": return .collections
        default: break
        }
        for (prefix, viaAlias) in [(collectionPrefix, false), (aliasPrefix, true)] where path.hasPrefix(prefix) {
            let rest = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
            guard let first = rest.first, !first.isEmpty else { return .unknown }
            let name = viaAlias ? alias(String(first)) : String(first)
            guard let name else { return .unknown }
            if rest.count == 1 { return .collection(name: name, viaAlias: viaAlias) }
            guard rest.count == 2, let ref = Hex.decode(String(rest[1])), ref.count == 16 else { return .unknown }
            return .item(collection: name, viaAlias: viaAlias, ref: ref)
        }
        if path.hasPrefix(sessionPrefix) { return .session(String(path.dropFirst(sessionPrefix.count))) }
        if path.hasPrefix(promptPrefix) { return .prompt(String(path.dropFirst(promptPrefix.count))) }
        return .unknown
    }

    static func collection(_ name: String) -> String { collectionPrefix + name }

    static func item(_ collectionPath: String, ref: [UInt8]) -> String { collectionPath + "/" + Hex.encode(ref) }

    /// A keychain name as one path element: [A-Za-z0-9] stay, every other
    /// byte becomes `_XX` (its hex), as gnome-keyring spells collection names.
    static func element(_ name: String) -> String {
        var out = ""
        for byte in name.utf8 {
            if byte != UInt8(ascii: "_") && isElementByte(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "_" + Hex.encode([byte])
            }
        }
        return out.isEmpty ? "_" : out
    }

    /// Whether `byte` may stand in an object path's element: [A-Za-z0-9_].
    static func isElementByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"): true
        default: false
        }
    }
}
