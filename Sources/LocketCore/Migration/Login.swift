import LocketSupport

/// A source entry in neutral terms, before it becomes items: every parser
/// fills one and `entries` applies the mapping rules of Migration.md once.
struct Login {
    /// Where it came from, for messages (no secret).
    var origin: String
    /// The entry's name (title); the service of a generic password and every item's label.
    var title: [UInt8] = []
    var username: [UInt8] = []
    /// URLs in source order; the first with a known scheme and a host makes an internet password.
    var urls: [[UInt8]] = []
    var password: SecureBytes = SecureBytes()
    /// An `otpauth://` URI or a bare base32 seed.
    var totp: SecureBytes?
    /// Text the source shows openly: notes, visible custom fields, folder, tags.
    var comment: [[UInt8]] = []
    /// Values the source conceals besides the password (hidden custom fields).
    var hidden: [(name: [UInt8], value: SecureBytes)] = []
    /// The kind of a non-login entry ("secure note", "credit card"), the description attribute.
    var kind: [UInt8] = []
    /// When set, the generic password's service instead of the title (pass paths).
    var service: [UInt8]?
    var created: Int64?
    var modified: Int64?

    init(origin: String) { self.origin = origin }

    /// Adds `name: value` to the comment when the value is not empty.
    mutating func note(_ name: String, _ value: [UInt8]) {
        guard !value.isEmpty else { return }
        comment.append(Array(name.utf8) + Array(": ".utf8) + value)
    }

    /// The items this entry becomes: the login itself, then a one-time-code
    /// item when it has a TOTP seed, then one item per hidden field; or the
    /// reason it can't be imported.
    func entries() throws -> [MigrationEntry] {
        func skip(_ reason: String) -> [MigrationEntry] { [.skipped(MigrationSkip(origin: origin, reason: reason))] }
        for (what, value) in [("name", title), ("username", username), ("kind", kind), ("service", service ?? [])] {
            guard String(validating: value, as: UTF8.self) != nil else { return skip("its \(what) is not valid UTF-8") }
            guard value.count <= Attribute.maximumValueLength else { return skip("its \(what) is longer than \(ByteSize.text(Attribute.maximumValueLength))") }
        }
        let commentBytes = Array(comment.joined(separator: [0x0a]))
        guard String(validating: commentBytes, as: UTF8.self) != nil else { return skip("its notes are not valid UTF-8") }
        guard commentBytes.count <= Attribute.maximumValueLength else {
            return skip("its notes and fields are longer than \(ByteSize.text(Attribute.maximumValueLength)), the most a comment holds")
        }
        guard password.count <= Keychain.maximumDataLength else { return skip("its password is larger than \(ByteSize.text(Keychain.maximumDataLength))") }

        var attributes: [Attribute: [UInt8]] = [:]
        var itemClass = ItemClass.genericPassword
        var name: [UInt8]
        var otherURLs = urls
        if let index = urls.firstIndex(where: { URLParts($0) != nil }), let url = URLParts(urls[index]) {
            itemClass = .internetPassword
            otherURLs.remove(at: index)
            attributes[.server] = url.host
            attributes[.protocol] = url.protocolCode
            attributes[.port] = url.port
            attributes[.path] = url.path
            attributes[.account] = username.isEmpty ? url.user : username
            name = url.host
        } else {
            name = service ?? title
            attributes[.service] = name
            attributes[.account] = username
        }
        attributes[.label] = title.isEmpty ? name : title
        attributes[.description] = kind
        var comment = commentBytes
        for url in otherURLs where !url.isEmpty {
            if !comment.isEmpty { comment.append(0x0a) }
            comment += Array("url: ".utf8) + url
        }
        guard comment.count <= Attribute.maximumValueLength else {
            return skip("its notes and fields are longer than \(ByteSize.text(Attribute.maximumValueLength)), the most a comment holds")
        }
        attributes[.comment] = comment
        attributes = attributes.filter { !$0.value.isEmpty }
        var main = MigrationItem(itemClass: itemClass, attributes: attributes, data: password, origin: origin)
        main.creationDate = created
        main.modificationDate = modified
        var out: [MigrationEntry] = [.item(main)]

        let account = attributes[.account] ?? []
        let label = attributes[.label] ?? []
        func companion(service: [UInt8], label suffix: String, kind: String, data: SecureBytes, origin what: String) throws -> MigrationEntry {
            var item = MigrationItem(itemClass: .genericPassword, attributes: [
                .service: service, .label: label + Array(suffix.utf8), .description: Array(kind.utf8),
            ].merging(account.isEmpty ? [:] : [.account: account]) { $1 }, data: data, origin: "\(origin) (\(what))")
            item.creationDate = created
            item.modificationDate = modified
            return .item(item)
        }
        if let totp, totp.count > 0 {
            out.append(try companion(service: Array("otp:".utf8) + name, label: " (one-time code)", kind: "one-time code",
                                 data: try OTPAuth.uri(totp, title: label, account: account), origin: "one-time code"))
        }
        for field in hidden {
            guard String(validating: field.name, as: UTF8.self) != nil, field.name.count < 1024 else {
                out += skip("a hidden field's name is not valid UTF-8 or too long")
                continue
            }
            out.append(try companion(service: Array("field:".utf8) + name + [UInt8(ascii: ":")] + field.name,
                                 label: ": " + String(decoding: field.name, as: UTF8.self), kind: "hidden field",
                                 data: field.value, origin: "field '\(Printable.clip(String(decoding: field.name, as: UTF8.self)))'"))
        }
        return out
    }
}

/// A login URL in internet-password attributes: `scheme://[user@]host[:port][/path][?query][#fragment]`,
/// or a bare host name (`github.com`, taken as https). nil when it is not one
/// (unknown scheme, no host): such a login stays a generic password.
struct URLParts {
    var protocolCode: [UInt8]
    var user: [UInt8]
    var host: [UInt8]
    /// Two big-endian bytes, or empty when the URL names no port.
    var port: [UInt8]
    /// Without its leading slash, query or fragment, as locket stores paths.
    var path: [UInt8]

    init?(_ raw: [UInt8]) {
        var text = raw
        while let last = text.last, last == 0x20 || last == 0x09 { text.removeLast() }
        while let first = text.first, first == 0x20 || first == 0x09 { text.removeFirst() }
        guard !text.isEmpty, !text.contains(where: { $0 < 0x21 || $0 == 0x7f }) else { return nil }
        var rest = text[...]
        let separator = Array("://".utf8)
        if let range = text.firstRange(matching: separator) {
            let scheme = String(decoding: text[..<range.lowerBound], as: UTF8.self).lowercased()
            guard let code = FourCharCodes.protocols[scheme] else { return nil }
            protocolCode = Array(code.utf8)
            rest = text[range.upperBound...]
        } else {
            // A bare host: letters, digits, dots and hyphens with at least one dot, optionally a path.
            let hostPart = text.prefix { $0 != UInt8(ascii: "/") }
            guard hostPart.contains(UInt8(ascii: ".")), hostPart.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a)
                    || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ":")
            }) else { return nil }
            protocolCode = Array("htps".utf8)
        }
        if let cut = rest.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { rest = rest[..<cut] }
        var authority = rest
        path = []
        if let slash = rest.firstIndex(of: UInt8(ascii: "/")) {
            authority = rest[..<slash]
            path = Array(rest[rest.index(after: slash)...])
        }
        user = []
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            user = PercentEncoding.decodeLenient(authority[..<at])
            // user:password@ in a URL: the password part is dropped, never stored as an attribute.
            if let colon = user.firstIndex(of: UInt8(ascii: ":")) { user = Array(user[..<colon]) }
            authority = authority[authority.index(after: at)...]
        }
        host = Array(authority)
        port = []
        if let colon = authority.lastIndex(of: UInt8(ascii: ":")), authority.last != UInt8(ascii: "]") {
            let digits = authority[authority.index(after: colon)...]
            host = Array(authority[..<colon])
            if !digits.isEmpty {
                guard digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                      let n = Int(String(decoding: digits, as: UTF8.self)), n <= 65535 else { return nil }
                port = n == 0 ? [] : [UInt8(n >> 8), UInt8(n & 0xff)]
            }
        }
        guard !host.isEmpty, String(validating: host, as: UTF8.self) != nil, String(validating: path, as: UTF8.self) != nil,
              String(validating: user, as: UTF8.self) != nil else { return nil }
    }
}

/// One-time-code seeds as `locket otp` reads them (SPEC §16): an
/// `otpauth://` URI is kept as it is; a bare base32 seed (Bitwarden and
/// KeePass accept those) becomes `otpauth://totp/LABEL?secret=SEED&issuer=TITLE`;
/// anything else (`steam://...`) is kept as written.
enum OTPAuth {
    static func uri(_ seed: SecureBytes, title: [UInt8], account: [UInt8]) throws -> SecureBytes {
        try seed.withUnsafeBytes { raw throws -> SecureBytes in
            var trimmed = raw.filter { $0 != 0x20 && $0 != 0x0a && $0 != 0x0d && $0 != 0x09 && $0 != UInt8(ascii: "-") }
            let prefix = Array("otpauth://".utf8)
            defer { wipe(&trimmed) }
            let isBase32 = !trimmed.isEmpty && trimmed.allSatisfy {
                ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x32 && $0 <= 0x37) || $0 == UInt8(ascii: "=")
            }
            guard isBase32, !raw.starts(with: prefix) else { return try SecureBytes(copying: raw) }
            var label = PercentEncoding.encode(title)
            if !account.isEmpty { label += Array("%3A".utf8) + PercentEncoding.encode(account) }
            let head = Array("otpauth://totp/".utf8) + label + Array("?secret=".utf8)
            let tail = title.isEmpty ? [] : Array("&issuer=".utf8) + PercentEncoding.encode(title)
            let out = try SecureBytes(count: head.count + trimmed.count + tail.count)
            out.withUnsafeMutableBytes { o in
                var i = 0
                for b in head { o[i] = b; i += 1 }
                for b in trimmed { o[i] = b >= 0x61 ? b - 0x20 : b; i += 1 }
                for b in tail { o[i] = b; i += 1 }
            }
            return out
        }
    }
}
