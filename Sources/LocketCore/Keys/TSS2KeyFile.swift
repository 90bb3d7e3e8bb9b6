import LocketSupport

// The TCG's key file for TPM objects ("TPM 2.0 Key Files", the ASN.1 that
// tpm2-openssl, openssl_tpm2_engine, go-tpm-keyfiles and so ssh-tpm-agent
// read), PEM label `TSS2 PRIVATE KEY`:
//
//   TPMKey ::= SEQUENCE {
//     type        OBJECT IDENTIFIER,   -- 2.23.133.10.1.3 loadable, .5 sealed
//     emptyAuth   [0] EXPLICIT BOOLEAN OPTIONAL,
//     policy      [1] EXPLICIT SEQUENCE OF TPMPolicy OPTIONAL,
//     secret      [2] EXPLICIT OCTET STRING OPTIONAL,   -- importable keys only
//     authPolicy  [3] EXPLICIT SEQUENCE OF TPMAuthPolicy OPTIONAL,
//     description [4] EXPLICIT UTF8String OPTIONAL,
//     parent      INTEGER,           -- 0x40000001: the owner hierarchy's SRK
//     pubkey      OCTET STRING,      -- a marshalled TPM2B_PUBLIC
//     privkey     OCTET STRING }     -- a marshalled TPM2B_PRIVATE
//   TPMPolicy ::= SEQUENCE { commandCode [0] EXPLICIT INTEGER,
//                            commandPolicy [1] EXPLICIT OCTET STRING }
//
// Everything read here comes from a keychain or a file a user names: any
// malformed, truncated or hostile input is errSecDecode, never a crash.

/// A TPM object in the TCG key-file form: what the keychain keeps of a
/// Secure Enclave key (the TPM's wrapped private part, useless without
/// that TPM) and of a TPM-sealed device secret.
public struct TSS2KeyFile: Equatable, Sendable {
    /// The object kinds locket makes and reads.
    public enum Kind: Sendable, Equatable {
        /// id-loadablekey, 2.23.133.10.1.3: a key made in the TPM.
        case loadable
        /// id-sealedkey, 2.23.133.10.1.5: a keyed-hash object holding a secret.
        case sealed
    }

    /// One step of the policy that satisfies the object's authPolicy, in order.
    public struct PolicyStep: Equatable, Sendable {
        /// The policy command (TPM2_CC_PolicyPCR 0x17F, TPM2_CC_PolicyAuthValue 0x16B).
        public let commandCode: UInt32
        /// That command's parameters after its handles, marshalled.
        public let commandPolicy: [UInt8]

        public init(commandCode: UInt32, commandPolicy: [UInt8]) {
            self.commandCode = commandCode
            self.commandPolicy = commandPolicy
        }
    }

    /// The PEM label.
    public static let label = "TSS2 PRIVATE KEY"
    /// TPM_RH_OWNER: the parent is the storage key made from the owner hierarchy's seed (the H-2 template).
    public static let ownerParent: UInt32 = 0x4000_0001
    /// The largest marshalled public or private part accepted (a P-256 key's are about 90 and 130 bytes).
    public static let maximumPart = 4096

    public let kind: Kind
    /// No authorization value (`emptyAuth` TRUE).
    public let emptyAuth: Bool
    public let policy: [PolicyStep]
    public let description: String?
    public let parent: UInt32
    /// The marshalled TPM2B_PUBLIC.
    public let publicArea: [UInt8]
    /// The marshalled TPM2B_PRIVATE: the TPM's wrapped private part.
    public let privateArea: [UInt8]

    public init(kind: Kind, emptyAuth: Bool, policy: [PolicyStep] = [], description: String? = nil, parent: UInt32 = ownerParent,
                publicArea: [UInt8], privateArea: [UInt8]) {
        self.kind = kind
        self.emptyAuth = emptyAuth
        self.policy = policy
        self.description = description
        self.parent = parent
        self.publicArea = publicArea
        self.privateArea = privateArea
    }

    private static let loadableOID: [UInt8] = [0x67, 0x81, 0x05, 0x0a, 0x01, 0x03]
    private static let importableOID: [UInt8] = [0x67, 0x81, 0x05, 0x0a, 0x01, 0x04]
    private static let sealedOID: [UInt8] = [0x67, 0x81, 0x05, 0x0a, 0x01, 0x05]
    /// 2.23.133.10.2, the draft's loadable key, as older tools wrote it.
    private static let oldLoadableOID: [UInt8] = [0x67, 0x81, 0x05, 0x0a, 0x02]

    /// The first `TSS2 PRIVATE KEY` block of `text`.
    public init(pem text: some Collection<UInt8>) throws {
        let bytes = Array(text)
        guard bytes.count <= 64 * 1024 else { throw KeychainError(.decode, "the TSS2 key file is larger than any TPM key") }
        let der: [UInt8] = try bytes.withUnsafeBytes { raw in
            guard let block = try PEM.blocks(in: raw).first(where: { $0.label == Self.label }) else {
                throw KeychainError(.decode, "no \(Self.label) block")
            }
            return try PEM.decode(block, in: raw).withUnsafeBytes { Array($0) }
        }
        try self.init(der: der)
    }

    /// The DER of a TPMKey; errSecDecode for anything else.
    public init(der: [UInt8]) throws {
        let outer = try Self.element(der, at: 0)
        guard outer.tag == DER.sequence, outer.whole == 0..<der.count else { throw Self.malformed("not one DER SEQUENCE") }
        var fields = try DER.children(der, outer.contents)[...]
        func next() throws -> DER.Element {
            guard let field = fields.popFirst() else { throw Self.malformed("it ends early") }
            return field
        }
        let type = try next()
        guard type.tag == 0x06 else { throw Self.malformed("no object type") }
        switch Array(der[type.contents]) {
        case Self.loadableOID, Self.oldLoadableOID: kind = .loadable
        case Self.sealedOID: kind = .sealed
        case Self.importableOID: throw KeychainError(.decode, "the TSS2 key file holds an importable key: locket only uses keys made in the TPM")
        default: throw Self.malformed("an object type that is not a TPM key's")
        }
        var emptyAuth = false
        var policy: [PolicyStep] = []
        var description: String?
        var field = try next()
        var lastTag = -1
        // The optional fields, each at most once, in order.
        while field.tag & 0xe0 == 0xa0 {
            let number = Int(field.tag & 0x1f)
            guard number > lastTag else { throw Self.malformed("optional field [\(number)] out of order") }
            lastTag = number
            let inner = try DER.children(der, field.contents)
            guard inner.count == 1 else { throw Self.malformed("optional field [\(number)] is not one element") }
            switch number {
            case 0:
                guard inner[0].tag == 0x01, inner[0].contents.count == 1 else { throw Self.malformed("emptyAuth is not a BOOLEAN") }
                emptyAuth = der[inner[0].contents.lowerBound] != 0
            case 1:
                policy = try Self.policy(der, inner[0])
            case 2:
                throw KeychainError(.decode, "the TSS2 key file carries an import secret: locket only uses keys made in the TPM")
            case 3:
                throw KeychainError(.decode, "the TSS2 key file has signed policies (authPolicy), which locket does not satisfy")
            case 4:
                guard inner[0].tag == 0x0c, inner[0].contents.count <= 1024,
                      let text = String(validating: der[inner[0].contents], as: UTF8.self) else { throw Self.malformed("the description is not UTF-8") }
                description = text
            default:
                throw KeychainError(.decode, "the TSS2 key file has field [\(number)], which locket does not know (an RSA parent?)")
            }
            field = try next()
        }
        parent = try Self.handle(der, field)
        publicArea = try Self.part(der, try next(), "pubkey")
        privateArea = try Self.part(der, try next(), "privkey")
        guard fields.isEmpty else { throw Self.malformed("bytes after privkey") }
        self.emptyAuth = emptyAuth
        self.policy = policy
        self.description = description
    }

    /// The DER; `emptyAuth` is always written, FALSE included: tpm2-openssl
    /// before 1.3 reads an absent emptyAuth as TRUE and would not ask for the password.
    public var der: [UInt8] {
        var body = Self.tlv(0x06, kind == .loadable ? Self.loadableOID : Self.sealedOID)
        body += Self.tlv(0xa0, Self.tlv(0x01, [emptyAuth ? 0xff : 0x00]))
        if !policy.isEmpty {
            let steps = policy.flatMap { step in
                Self.tlv(DER.sequence, Self.tlv(0xa0, Self.integer(step.commandCode)) + Self.tlv(0xa1, Self.tlv(0x04, step.commandPolicy)))
            }
            body += Self.tlv(0xa1, Self.tlv(DER.sequence, steps))
        }
        if let description { body += Self.tlv(0xa4, Self.tlv(0x0c, Array(description.utf8))) }
        body += Self.integer(parent)
        body += Self.tlv(0x04, publicArea)
        body += Self.tlv(0x04, privateArea)
        return Self.tlv(DER.sequence, body)
    }

    /// The PEM text tpm2-openssl and ssh-tpm-agent read.
    public var pem: String { PEM.encode(label: Self.label, der) }

    // MARK: reading

    private static func malformed(_ why: String) -> KeychainError {
        KeychainError(.decode, "the TSS2 key file is malformed: \(why)")
    }

    private static func element(_ der: [UInt8], at offset: Int, end: Int? = nil) throws -> DER.Element {
        do { return try DER.element(der, at: offset, end: end) } catch { throw malformed("a DER element is truncated or too long") }
    }

    private static func policy(_ der: [UInt8], _ list: DER.Element) throws -> [PolicyStep] {
        guard list.tag == DER.sequence else { throw malformed("the policy is not a SEQUENCE") }
        let steps = try DER.children(der, list.contents)
        guard steps.count <= 16 else { throw malformed("more than 16 policy steps") }
        return try steps.map { step in
            guard step.tag == DER.sequence else { throw malformed("a policy step is not a SEQUENCE") }
            let parts = try DER.children(der, step.contents)
            guard parts.count == 2, parts[0].tag == 0xa0, parts[1].tag == 0xa1 else { throw malformed("a policy step is not [0] commandCode, [1] commandPolicy") }
            let code = try DER.children(der, parts[0].contents)
            let body = try DER.children(der, parts[1].contents)
            guard code.count == 1, body.count == 1, body[0].tag == 0x04, body[0].contents.count <= maximumPart else {
                throw malformed("a policy step's fields")
            }
            return PolicyStep(commandCode: try handle(der, code[0]), commandPolicy: Array(der[body[0].contents]))
        }
    }

    /// A non-negative INTEGER that fits 32 bits (a handle, a command code).
    private static func handle(_ der: [UInt8], _ element: DER.Element) throws -> UInt32 {
        guard element.tag == 0x02, !element.contents.isEmpty else { throw malformed("an INTEGER was expected") }
        var bytes = der[element.contents]
        guard bytes.first! & 0x80 == 0 else { throw malformed("a negative INTEGER") }
        while bytes.count > 1, bytes.first == 0 { bytes = bytes.dropFirst() }
        guard bytes.count <= 4 else { throw malformed("an INTEGER over 32 bits") }
        return bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// An OCTET STRING holding one marshalled TPM2B (its 2-byte size, then that many bytes).
    private static func part(_ der: [UInt8], _ element: DER.Element, _ name: String) throws -> [UInt8] {
        guard element.tag == 0x04 else { throw malformed("\(name) is not an OCTET STRING") }
        let bytes = Array(der[element.contents])
        guard bytes.count >= 3, bytes.count <= maximumPart, Int(bytes[0]) << 8 | Int(bytes[1]) == bytes.count - 2 else {
            throw malformed("\(name) is not one TPM2B")
        }
        return bytes
    }

    // MARK: writing

    private static func tlv(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] { DER.header(tag, contents.count) + contents }

    private static func integer(_ value: UInt32) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        while bytes.count > 1, bytes[0] == 0, bytes[1] & 0x80 == 0 { bytes.removeFirst() }
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }
}
