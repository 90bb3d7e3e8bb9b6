import LocketSupport

/// Item attributes (kSecAttr...). Values are canonical bytes: strings as
/// UTF-8, four-char codes as their four bytes, ports as two big-endian bytes;
/// the empty/zero value of every attribute is the empty byte string.
public enum Attribute: UInt8, CaseIterable, Sendable {
    case account = 1, service, label, description, comment, generic, creator, type
    case server, securityDomain, `protocol`, authenticationType, port, path
    case accessGroup, accessible
    // Keys and certificates (SPEC §12); appended so that the tags of sealed records stay as they were.
    case keyClass, applicationLabel, applicationTag, keySize, effectiveKeySize, extractable
    case canSign, canVerify, canEncrypt, canDecrypt, canDerive, canWrap, canUnwrap, startDate, endDate
    case certificateType, certificateEncoding, subject, issuer, serialNumber, subjectKeyID, publicKeyHash, alias
    case fingerprint, subjectName, issuerName, notBefore, notAfter
    /// kSecAttrSynchronizable (SPEC §4): stored as Apple stores it, "1" or
    /// absent, part of every class's primary key, and matched as Apple
    /// matches it (`Query.synchronizable`). Whether an item may leave this
    /// device stays its protection class's (ThisDeviceOnly), never this.
    case synchronizable
    /// Which of the item's string attributes were given as bytes (Apple's
    /// CFData) rather than text: their tags, so that the Security module
    /// gives each back as it was stored (an account stored as Data reads
    /// back as Data, as on Apple's platforms). Locket's own: sealed with the
    /// other values, never indexed, shown or queried.
    case valueTypes
    /// kSecAttrTokenID: where a key lives. `com.apple.setoken` (Apple's
    /// kSecAttrTokenIDSecureEnclave) for a key made inside the TPM, whose
    /// value is the TPM's wrapped blob (SPEC §21); absent for every other
    /// key. Set when the key is made, never changed.
    case tokenID

    /// How a value is written on the command line and in output.
    public enum Kind: Sendable {
        case string, bytes, fourCharCode, port, protectionClass
        /// Binary, written as hexadecimal (digests, DER names, serial numbers).
        case hex
        /// A decimal number, stored as its decimal digits.
        case number
        /// true or false, stored as "1" or "0".
        case boolean
    }

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
        case .keyClass: "kcls"
        case .applicationLabel: "klbl"
        case .applicationTag: "atag"
        case .keySize: "bsiz"
        case .effectiveKeySize: "esiz"
        case .extractable: "extr"
        case .canSign: "sign"
        case .canVerify: "vrfy"
        case .canEncrypt: "encr"
        case .canDecrypt: "decr"
        case .canDerive: "drve"
        case .canWrap: "wrap"
        case .canUnwrap: "unwp"
        case .startDate: "sdat"
        case .endDate: "edat"
        case .certificateType: "ctyp"
        case .certificateEncoding: "cenc"
        case .subject: "subj"
        case .issuer: "issr"
        case .serialNumber: "slnr"
        case .subjectKeyID: "skid"
        case .publicKeyHash: "pkhh"
        case .alias: "alis"
        // Beyond Apple: the SHA-256 fingerprint users query by (`--hash`), and readable forms of derived values.
        case .fingerprint: "hash"
        case .subjectName: "sbjn"
        case .issuerName: "isrn"
        case .notBefore: "vfrm"
        case .notAfter: "vend"
        case .synchronizable: "sync"
        case .valueTypes: "vtyp"
        case .tokenID: "tkid"
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
        case .keyClass: "key-class"
        case .applicationLabel: "application-label"
        case .applicationTag: "tag"
        case .keySize: "key-size"
        case .effectiveKeySize: "effective-key-size"
        case .extractable: "extractable"
        case .canSign: "can-sign"
        case .canVerify: "can-verify"
        case .canEncrypt: "can-encrypt"
        case .canDecrypt: "can-decrypt"
        case .canDerive: "can-derive"
        case .canWrap: "can-wrap"
        case .canUnwrap: "can-unwrap"
        case .startDate: "start-date"
        case .endDate: "end-date"
        case .certificateType: "certificate-type"
        case .certificateEncoding: "certificate-encoding"
        case .subject: "subject"
        case .issuer: "issuer"
        case .serialNumber: "serial-number"
        case .subjectKeyID: "subject-key-id"
        case .publicKeyHash: "public-key-hash"
        case .alias: "alias"
        case .fingerprint: "hash"
        case .subjectName: "subject-name"
        case .issuerName: "issuer-name"
        case .notBefore: "not-before"
        case .notAfter: "not-after"
        case .synchronizable: "synchronizable"
        case .valueTypes: "value-types"
        case .tokenID: "token-id"
        }
    }

    /// The key in JSON output.
    public var jsonKey: String {
        switch self {
        case .securityDomain: "securityDomain"
        case .authenticationType: "authenticationType"
        case .accessGroup: "accessGroup"
        case .keyClass: "keyClass"
        case .applicationLabel: "applicationLabel"
        case .applicationTag: "applicationTag"
        case .keySize: "keySizeInBits"
        case .effectiveKeySize: "effectiveKeySize"
        case .canSign: "canSign"
        case .canVerify: "canVerify"
        case .canEncrypt: "canEncrypt"
        case .canDecrypt: "canDecrypt"
        case .canDerive: "canDerive"
        case .canWrap: "canWrap"
        case .canUnwrap: "canUnwrap"
        case .startDate: "startDate"
        case .endDate: "endDate"
        case .certificateType: "certificateType"
        case .certificateEncoding: "certificateEncoding"
        case .serialNumber: "serialNumber"
        case .subjectKeyID: "subjectKeyID"
        case .publicKeyHash: "publicKeyHash"
        case .fingerprint: "sha256Fingerprint"
        case .subjectName: "subjectName"
        case .issuerName: "issuerName"
        case .notBefore: "notBefore"
        case .notAfter: "notAfter"
        case .tokenID: "tokenID"
        default: longName
        }
    }

    public var kind: Kind {
        switch self {
        case .generic: .bytes
        case .creator, .type, .protocol, .authenticationType: .fourCharCode
        case .port: .port
        case .accessible: .protectionClass
        case .applicationLabel, .subject, .issuer, .serialNumber, .subjectKeyID, .publicKeyHash, .fingerprint, .valueTypes: .hex
        case .keySize, .effectiveKeySize, .startDate, .endDate, .certificateType, .certificateEncoding, .notBefore, .notAfter: .number
        case .extractable, .canSign, .canVerify, .canEncrypt, .canDecrypt, .canDerive, .canWrap, .canUnwrap, .synchronizable: .boolean
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

    /// Finds an attribute by name as `itemClass` has it: `type` of a key is
    /// its key type, `key-type` too.
    public init?(name: String, for itemClass: ItemClass) {
        if itemClass == .key && name == "key-type" { self = .type; return }
        self.init(name: name)
    }

    /// The longest attribute value accepted, in bytes.
    public static let maximumValueLength = 65_536
}

/// Turns user text into canonical attribute bytes and back.
public enum AttributeValue {
    /// Parses `text` as a value of `attribute`. Strings must be UTF-8.
    public static func parse(_ attribute: Attribute, _ text: [UInt8]) throws -> [UInt8] {
        guard text.count <= Attribute.maximumValueLength else {
            throw KeychainError(.dataTooLarge, "the \(attribute.longName) is longer than \(ByteSize.text(Attribute.maximumValueLength))")
        }
        switch attribute.kind {
        case .bytes:
            return text
        case .string, .protectionClass:
            // UTF8Check, not String(validating:as:): the standard library
            // leaves that one generic, and its witness and metadata lookups
            // were 15 k instructions of every `find -s S -a A`.
            guard text.withUnsafeBytes({ UTF8Check.isValid($0) }) else {
                throw KeychainError(.param, "the \(attribute.longName) is not valid UTF-8")
            }
            return text
        case .port:
            let s = String(decoding: text, as: UTF8.self)
            guard !s.isEmpty, s.count <= 5, s.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(s), n <= 65535 else {
                throw KeychainError(.param, "the port must be a number from 0 to 65535, not '\(Printable.clip(s))'")
            }
            return n == 0 ? [] : [UInt8(n >> 8), UInt8(n & 0xff)]
        case .hex:
            let s = String(decoding: text.filter { $0 != UInt8(ascii: ":") }, as: UTF8.self)
            guard let bytes = Hex.decode(s) else {
                throw KeychainError(.param, "the \(attribute.longName) must be hexadecimal, not '\(Printable.clip(s))'")
            }
            return bytes
        case .number:
            let s = String(decoding: text, as: UTF8.self)
            guard !s.isEmpty, s.count <= 19, s.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int64(s) else {
                throw KeychainError(.param, "the \(attribute.longName) must be a number, not '\(Printable.clip(s))'")
            }
            return Array(String(n).utf8)
        case .boolean:
            switch String(decoding: text, as: UTF8.self) {
            case "true", "yes", "1": return Array("1".utf8)
            case "false", "no", "0": return Array("0".utf8)
            default: throw KeychainError(.param, "the \(attribute.longName) must be true or false")
            }
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

    /// Parses `text` as a value of `attribute` in items of `itemClass`: a
    /// key's `type` and `kcls` are names (rsa, ec, ed25519, x25519; public, private).
    public static func parse(_ attribute: Attribute, _ text: [UInt8], for itemClass: ItemClass) throws -> [UInt8] {
        guard itemClass == .key, attribute == .type || attribute == .keyClass else { return try parse(attribute, text) }
        let s = String(decoding: text, as: UTF8.self)
        if attribute == .type {
            guard KeyType(rawValue: s) != nil else {
                throw KeychainError(.param, "the key type must be one of \(KeyType.allCases.map(\.rawValue).joined(with: ", ")), not '\(Printable.clip(s))'")
            }
        } else if KeyClass(rawValue: s) == nil {
            throw KeychainError(.param, "the key class must be public or private, not '\(Printable.clip(s))'")
        }
        return text
    }

    /// The port number of canonical port bytes.
    public static func port(_ bytes: [UInt8]) -> Int {
        bytes.count == 2 ? Int(bytes[0]) << 8 | Int(bytes[1]) : 0
    }
}
