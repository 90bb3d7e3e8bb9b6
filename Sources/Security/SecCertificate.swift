import LocketCore

/// An X.509 certificate (DER), parsed by the engine (libcrypto).
public final class SecCertificate: Hashable, @unchecked Sendable {
    let certificate: Certificate

    init(_ certificate: Certificate) { self.certificate = certificate }

    public static func == (a: SecCertificate, b: SecCertificate) -> Bool { a.certificate.der == b.certificate.der }
    public func hash(into hasher: inout Hasher) { hasher.combine(certificate.sha256Fingerprint) }

    /// The terms that find this certificate in a keychain: its primary key (type, issuer, serial number).
    func terms() -> [(Attribute, [UInt8])] {
        [(.certificateType, Array(String(certificate.certificateType).utf8)), (.issuer, certificate.issuer),
         (.serialNumber, certificate.serialNumber)]
    }
}

/// A certificate from its DER; nil when `data` is not one.
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    (try? Certificate(der: Array(data as Data))).map(SecCertificate.init)
}

/// The certificate's DER.
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    Data(certificate.certificate.der) as NSData
}

/// A short name for the certificate: its subject's common name, else its
/// first e-mail address, else its subject.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? {
    certificate.certificate.defaultLabel as NSString
}

/// The subject's common name.
public func SecCertificateCopyCommonName(_ certificate: SecCertificate, _ commonName: UnsafeMutablePointer<CFString?>) -> OSStatus {
    commonName.pointee = certificate.certificate.commonName.map { $0 as NSString }
    return errSecSuccess
}

/// The e-mail addresses of the subject (the first one locket reads).
public func SecCertificateCopyEmailAddresses(_ certificate: SecCertificate, _ emailAddresses: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    emailAddresses.pointee = (certificate.certificate.email.map { [$0] } ?? []) as NSArray
    return errSecSuccess
}

/// The certificate's serial number, big-endian.
public func SecCertificateCopySerialNumberData(_ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    Data(certificate.certificate.serialNumber) as NSData
}

/// The certificate's public key (nil for a key type locket does not support).
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? {
    certificate.certificate.publicKey.map { SecKey($0) }
}

/// The type identifier of certificates.
public func SecCertificateGetTypeID() -> CFTypeID { 301 }

/// A certificate and its private key (kSecClassIdentity): never stored as
/// such; the keychain pairs a certificate with the private key whose
/// application label is its public key hash (SPEC §12).
public final class SecIdentity: Hashable, @unchecked Sendable {
    let certificate: SecCertificate
    let privateKey: SecKey

    init(certificate: SecCertificate, privateKey: SecKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    public static func == (a: SecIdentity, b: SecIdentity) -> Bool { a.certificate == b.certificate && a.privateKey == b.privateKey }
    public func hash(into hasher: inout Hasher) { hasher.combine(certificate) }
}

/// The identity's private key.
public func SecIdentityCopyPrivateKey(_ identityRef: SecIdentity, _ privateKeyRef: UnsafeMutablePointer<SecKey?>) -> OSStatus {
    privateKeyRef.pointee = identityRef.privateKey
    return errSecSuccess
}

/// The identity's certificate.
public func SecIdentityCopyCertificate(_ identityRef: SecIdentity, _ certificateRef: UnsafeMutablePointer<SecCertificate?>) -> OSStatus {
    certificateRef.pointee = identityRef.certificate
    return errSecSuccess
}

/// The type identifier of identities.
public func SecIdentityGetTypeID() -> CFTypeID { 302 }
