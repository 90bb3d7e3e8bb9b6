import CCrypto
#if canImport(Glibc)
import Glibc
import LocketSupport
#endif

// An X.509 certificate and the attributes Apple derives from its DER
// (SecCertificateCopyAttributeDictionary): ctyp, cenc, subj, issr, slnr,
// skid, pkhh; plus a SHA-256 fingerprint, the label and alias defaults, the
// validity dates and the public key. Parsed by libcrypto.

/// An X.509 certificate with its keychain attributes. All are derived from
/// `der` and never change.
public struct Certificate: Sendable {
    /// The certificate's DER, as the keychain stores it (v_Data).
    public let der: [UInt8]
    /// kSecAttrCertificateType (`ctyp`): Apple's CSSM_CERT_X_509v1/v2/v3, the X.509 version (1, 2 or 3).
    public let certificateType: Int
    /// kSecAttrCertificateEncoding (`cenc`): 3, CSSM_CERT_ENCODING_DER.
    public let certificateEncoding: Int
    /// kSecAttrSubject (`subj`): the subject Name's DER contents without the
    /// outer SEQUENCE, normalized as Apple does (PrintableString upper-cased,
    /// blanks collapsed).
    public let subject: [UInt8]
    /// kSecAttrIssuer (`issr`): the issuer Name, as `subject`.
    public let issuer: [UInt8]
    /// kSecAttrSerialNumber (`slnr`): the contents of the serial number's DER INTEGER.
    public let serialNumber: [UInt8]
    /// kSecAttrSubjectKeyID (`skid`): the subject key identifier extension's key identifier; nil when absent.
    public let subjectKeyID: [UInt8]?
    /// kSecAttrPublicKeyHash (`pkhh`): SHA-1 of the subjectPublicKey BIT
    /// STRING's contents, which equals the matching private key's application label.
    public let publicKeyHash: [UInt8]
    /// SHA-256 of the DER (what `openssl x509 -fingerprint -sha256` prints), for `--hash`.
    public let sha256Fingerprint: [UInt8]
    /// The subject's common name (the last CN, the most specific); nil when there is none.
    public let commonName: String?
    /// The first e-mail address: the first rfc822Name of the subject
    /// alternative names, else the subject's emailAddress; nil when none.
    public let email: String?
    /// The subject in RFC 2253 form, for display.
    public let subjectName: String
    /// The issuer in RFC 2253 form, for display.
    public let issuerName: String
    /// notBefore, in seconds since 1970 (UTC).
    public let notBefore: Int64
    /// notAfter, in seconds since 1970 (UTC).
    public let notAfter: Int64
    /// The subject public key; nil when locket does not support its type
    /// (a chain's CA may use a curve locket has no keys on), the attributes are there all the same.
    public let publicKey: AsymmetricKey?

    /// `labl` when none is given: the common name, else the e-mail address, else the subject.
    public var defaultLabel: String { commonName ?? email ?? subjectName }
    /// `alis`: the first e-mail address.
    public var alias: String? { email }
    /// The subject equals the issuer (normalized): a self-issued certificate, such as a root.
    public var isSelfIssued: Bool { subject == issuer }

    /// Parses DER. errSecDecode when the bytes are not exactly one certificate.
    public init(der: [UInt8]) throws {
        try OpenSSL.ready()
        let x509: OpaquePointer = try der.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { throw KeychainError(.decode, "empty certificate") }
            var p: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
            let x = try OpenSSL.check(d2i_X509(nil, &p, raw.count), .decode, "not an X.509 certificate")
            guard p == base.assumingMemoryBound(to: UInt8.self) + raw.count else {
                X509_free(x)
                throw KeychainError(.decode, "trailing bytes after the certificate")
            }
            return x
        }
        defer { X509_free(x509) }
        try self.init(x509: x509, der: der)
    }

    /// The attributes of a parsed certificate whose DER is `der`.
    init(x509: OpaquePointer, der: [UInt8]) throws {
        self.der = der
        certificateType = Int(X509_get_version(x509)) + 1
        certificateEncoding = 3
        guard let subjectName = X509_get_subject_name(x509), let issuerName = X509_get_issuer_name(x509) else {
            throw KeychainError(.decode, "certificate without subject or issuer")
        }
        subject = try DER.normalizedNameContents(Certificate.encode(name: subjectName))
        issuer = try DER.normalizedNameContents(Certificate.encode(name: issuerName))
        self.subjectName = Certificate.rfc2253(subjectName)
        self.issuerName = Certificate.rfc2253(issuerName)

        guard let serial = X509_get0_serialNumber(x509) else { throw KeychainError(.decode, "certificate without serial number") }
        var serialDER = [UInt8](repeating: 0, count: Int(i2d_ASN1_INTEGER(serial, nil)))
        serialDER.withUnsafeMutableBufferPointer { buffer in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_ASN1_INTEGER(serial, &p)
        }
        let serialElement = try DER.element(serialDER, at: 0)
        serialNumber = Array(serialDER[serialElement.contents])

        subjectKeyID = X509_get0_subject_key_id(x509).map { Certificate.bytes($0) }
        guard let bits = X509_get0_pubkey_bitstr(x509) else { throw KeychainError(.decode, "certificate without public key") }
        publicKeyHash = Digest.sha1(Certificate.bytes(UnsafePointer(bits)))
        sha256Fingerprint = Digest.sha256(der)

        commonName = Certificate.lastEntry(subjectName, NID_commonName)
        email = Certificate.firstEmail(x509, subjectName)

        var tm = tm()
        guard let start = X509_get0_notBefore(x509), ASN1_TIME_to_tm(start, &tm) == 1 else { throw KeychainError(.decode, "certificate with an invalid notBefore") }
        notBefore = Int64(timegm(&tm))
        guard let end = X509_get0_notAfter(x509), ASN1_TIME_to_tm(end, &tm) == 1 else { throw KeychainError(.decode, "certificate with an invalid notAfter") }
        notAfter = Int64(timegm(&tm))

        if let key = X509_get_pubkey(x509) {
            publicKey = try? AsymmetricKey(evp: EVPKey(taking: key), isPrivate: false)
        } else {
            ERR_clear_error()
            publicKey = nil
        }
    }

    /// True when `key` (private or public) is this certificate's key: its
    /// application label equals the public key hash, as Apple forms identities.
    public func matches(_ key: AsymmetricKey) -> Bool { key.applicationLabel == publicKeyHash }

    /// The certificate as PEM text.
    public var pem: String { PEM.encode(label: "CERTIFICATE", der) }

    /// The hexadecimal SHA-256 fingerprint, colon-separated in upper case as `openssl x509 -fingerprint -sha256`.
    public var fingerprintText: String { sha256Fingerprint.map { Hex.encode([$0], uppercase: true) }.joined(with: ":") }

    static func bytes(_ string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let n = Int(ASN1_STRING_length(string))
        guard n > 0, let p = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }

    private static func encode(name: OpaquePointer) throws -> [UInt8] {
        try OpenSSL.der("an X.509 name", .decode) { i2d_X509_NAME(name, $0) }
    }

    private static func rfc2253(_ name: OpaquePointer) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, locket_xn_flag_rfc2253()) >= 0 else { return "" }
        var data: UnsafeMutablePointer<CChar>?
        let n = locket_bio_mem_data(bio, &data)
        guard n > 0, let data else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
    }

    private static func utf8(_ string: UnsafePointer<ASN1_STRING>) -> String? {
        var out: UnsafeMutablePointer<UInt8>?
        let n = ASN1_STRING_to_UTF8(&out, string)
        guard n >= 0, let out else { return nil }
        defer { locket_openssl_free(out) }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(n)), as: UTF8.self)
    }

    private static func lastEntry(_ name: OpaquePointer, _ nid: Int32) -> String? {
        var index: Int32 = -1, last: Int32 = -1
        while true {
            index = X509_NAME_get_index_by_NID(name, nid, index)
            if index < 0 { break }
            last = index
        }
        guard last >= 0, let entry = X509_NAME_get_entry(name, last), let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        return utf8(UnsafePointer(data))
    }

    private static func firstEmail(_ x509: OpaquePointer, _ subject: OpaquePointer) -> String? {
        if let names = X509_get_ext_d2i(x509, NID_subject_alt_name, nil, nil) {
            let stack = OpaquePointer(names)
            defer { GENERAL_NAMES_free(stack) }
            for i in 0..<OPENSSL_sk_num(stack) {
                guard let name = OPENSSL_sk_value(stack, i) else { continue }
                var type: Int32 = 0
                if let value = GENERAL_NAME_get0_value(name.assumingMemoryBound(to: GENERAL_NAME.self), &type), type == GEN_EMAIL,
                   let text = utf8(value.assumingMemoryBound(to: ASN1_STRING.self)) {
                    return text
                }
            }
        }
        ERR_clear_error()
        let index = X509_NAME_get_index_by_NID(subject, NID_pkcs9_emailAddress, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(subject, index), let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        return utf8(UnsafePointer(data))
    }
}
