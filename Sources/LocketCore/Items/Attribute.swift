import LocketSupport

/// Item attributes (kSecAttr...). Values are canonical bytes: strings as
/// UTF-8, four-char codes as their four bytes, ports as two big-endian bytes;
/// the empty/zero value of every attribute is the empty byte string.
public enum Attribute: UInt8, CaseIterable, Sendable {
    case account = 1, service, label, description, comment, generic, creator, type
    case server, securityDomain, `protocol`, authenticationType, port, path
    case accessGroup, accessible

    /// How a value is written on the command line and in output.
    public enum Kind: Sendable { case string, bytes, fourCharCode, port, protectionClass }

    /// Apple's four-char attribute code.
    public var code: String {
        switch self {
        case .account: "acct"
        case .service: "svce"
        case .label: "labl"
        case .description: "desc"
        case .comment: "icmt"
        case .generic: "gena"
        case .creator: "crtr"
        case .type: "type"
        case .server: "srvr"
        case .securityDomain: "sdmn"
        case .protocol: "ptcl"
        case .authenticationType: "atyp"
        case .port: "port"
        case .path: "path"
        case .accessGroup: "agrp"
        case .accessible: "pdmn"
        }
    }

    /// The long option name, also the NAME of `update --set NAME=VALUE`.
    public var longName: String {
        switch self {
        case .account: "account"
        case .service: "service"
        case .label: "label"
        case .description: "description"
        case .comment: "comment"
        case .generic: "generic"
        case .creator: "creator"
        case .type: "type"
        case .server: "server"
        case .securityDomain: "security-domain"
        case .protocol: "protocol"
        case .authenticationType: "auth-type"
        case .port: "port"
        case .path: "path"
        case .accessGroup: "access-group"
        case .accessible: "accessible"
        }
    }

    /// The key in JSON output.
    public var jsonKey: String {
        switch self {
        case .securityDomain: "securityDomain"
        case .authenticationType: "authenticationType"
        case .accessGroup: "accessGroup"
        default: longName
        }
    }

    public var kind: Kind {
        switch self {
        case .generic: .bytes
        case .creator, .type, .protocol, .authenticationType: .fourCharCode
        case .port: .port
        case .accessible: .protectionClass
        default: .string
        }
    }

    /// Sealed attributes live in the item's sealed attribute record and have
    /// a blind-index column; access group and accessible are plaintext columns.
    var isSealed: Bool { self != .accessGroup && self != .accessible }

    /// The blind-index column of a sealed attribute.
    var column: String { "i_" + code }

    /// Finds an attribute by long name or four-char code (`update --set`).
    public init?(name: String) {
        guard let match = Attribute.allCases.first(where: { $0.longName == name || $0.code == name }) else { return nil }
        self = match
    }

    /// The longest attribute value accepted, in bytes.
    public static let maximumValueLength = 65_536
}

/// Turns user text into canonical attribute bytes and back.
public enum AttributeValue {
    /// Parses `text` as a value of `attribute`. Strings must be UTF-8.
    public static func parse(_ attribute: Attribute, _ text: [UInt8]) throws -> [UInt8] {
        guard text.count <= Attribute.maximumValueLength else {
            throw KeychainError(.dataTooLarge, "the \(attribute.longName) is longer than \(Attribute.maximumValueLength) bytes")
        }
        switch attribute.kind {
        case .bytes:
            return text
        case .string, .protectionClass:
            guard String(validating: text, as: UTF8.self) != nil else {
                throw KeychainError(.param, "the \(attribute.longName) is not valid UTF-8")
            }
            return text
        case .port:
            let s = String(decoding: text, as: UTF8.self)
            guard !s.isEmpty, s.count <= 5, s.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(s), n <= 65535 else {
                throw KeychainError(.param, "the port must be a number from 0 to 65535, not '\(Printable.clip(s))'")
            }
            return n == 0 ? [] : [UInt8(n >> 8), UInt8(n & 0xff)]
        case .fourCharCode:
            if text.isEmpty { return [] }
            let s = String(decoding: text, as: UTF8.self)
            if attribute == .protocol, let code = FourCharCodes.protocols[s] { return Array(code.utf8) }
            if attribute == .authenticationType, let code = FourCharCodes.authenticationTypes[s] { return Array(code.utf8) }
            guard text.count == 4, text.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
                let kinds = attribute == .protocol ? "a protocol name (https, ssh, ...) or " :
                    attribute == .authenticationType ? "an authentication type name (default, http-basic, ...) or " : ""
                throw KeychainError(.param, "the \(attribute.longName) must be \(kinds)a four-character code, not '\(Printable.clip(s))'")
            }
            return text
        }
    }

    /// The port number of canonical port bytes.
    public static func port(_ bytes: [UInt8]) -> Int {
        bytes.count == 2 ? Int(bytes[0]) << 8 | Int(bytes[1]) : 0
    }
}

/// Names users type for Apple's protocol and authentication-type codes.
public enum FourCharCodes {
    /// kSecAttrProtocol values by scheme name.
    public static let protocols: [String: String] = [
        "ftp": "ftp ", "ftpaccount": "ftpa", "http": "http", "irc": "irc ", "nntp": "nntp", "pop3": "pop3",
        "smtp": "smtp", "socks": "sox ", "imap": "imap", "ldap": "ldap", "appletalk": "atlk", "afp": "afp ",
        "telnet": "teln", "ssh": "ssh ", "ftps": "ftps", "https": "htps", "httpproxy": "htpx",
        "httpsproxy": "htsx", "ftpproxy": "ftpx", "cifs": "cifs", "smb": "smb ", "rtsp": "rtsp",
        "rtspproxy": "rtsx", "daap": "daap", "eppc": "eppc", "ipp": "ipp ", "nntps": "ntps", "ldaps": "ldps",
        "telnets": "tels", "imaps": "imps", "ircs": "ircs", "pop3s": "pops", "svn": "svn ",
    ]

    /// kSecAttrAuthenticationType values by name.
    public static let authenticationTypes: [String: String] = [
        "default": "dflt", "http-basic": "http", "http-digest": "httd", "form": "form", "html-form": "form",
        "ntlm": "ntlm", "msn": "msna", "dpa": "dpaa", "rpa": "rpaa",
    ]
}
