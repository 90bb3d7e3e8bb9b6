import Foundation
@testable import LocketCore
import XCTest

// Certificate attributes against openssl's own view of the same DER: pkhh
// equals the matching key's klbl and the SHA-1 openssl computes from the
// key; fingerprint, serial, subject key identifier, label and alias.
final class KeysCertificateTests: KeysTestCase {
    override class func prepare(_ fixture: KeysFixture) throws {
        for kind in ["rsa2048", "p256", "p384", "ed25519"] {
            try fixture.genpkey(kind, kind + ".key")
            try fixture.makeLeaf(key: kind + ".key", cert: kind + ".pem", cn: "\(kind).example.com")
        }
    }

    func certificate(_ name: String) throws -> Certificate {
        let items = try KeyImport.parse(try f.read(name), passphrase: noPassphrase)
        XCTAssertEqual(items.certificates.count, 1)
        return items.certificates[0].certificate
    }

    func testPublicKeyHashEqualsApplicationLabelAndOpenSSLSHA1() throws {
        for kind in ["rsa2048", "p256", "p384", "ed25519"] {
            let cert = try certificate(kind + ".pem")
            let key = try KeyImport.parse(try f.read(kind + ".key"), passphrase: noPassphrase).keys[0].key
            let external = try f.opensslExternalRepresentation(kind + ".key", rsa: kind.hasPrefix("rsa"))
            try f.write(kind + ".external", external)
            let sha1 = try f.opensslSHA1(kind + ".external")
            XCTAssertEqual(cert.publicKeyHash, sha1, kind)
            XCTAssertEqual(key.applicationLabel, sha1, kind)
            XCTAssertTrue(cert.matches(key), kind)
            XCTAssertEqual(cert.publicKey?.applicationLabel, key.applicationLabel, kind)
            XCTAssertNoThrow(try Identity(key: key, certificate: cert))
        }
        let other = try KeyImport.parse(try f.read("p256.key"), passphrase: noPassphrase).keys[0].key
        XCTAssertFalse(try certificate("p384.pem").matches(other))
        assertKeychainError(.param) { try Identity(key: other, certificate: try self.certificate("p384.pem")) }
        assertKeychainError(.param) { try Identity(key: other.publicKey, certificate: try self.certificate("p256.pem")) }
    }

    func testAttributesAsOpenSSLSeesThem() throws {
        let cert = try certificate("p256.pem")
        XCTAssertEqual(cert.certificateType, 3)
        XCTAssertEqual(cert.certificateEncoding, 3)
        let fingerprint = try Tools.must("openssl", ["x509", "-in", f.path("p256.pem"), "-noout", "-fingerprint", "-sha256"]).text
        XCTAssertEqual("sha256 Fingerprint=" + cert.fingerprintText, fingerprint.trimmingCharacters(in: .whitespacesAndNewlines))
        let der = try Tools.must("openssl", ["x509", "-in", f.path("p256.pem"), "-outform", "DER"]).stdout
        XCTAssertEqual(cert.der, der)
        XCTAssertEqual(cert.sha256Fingerprint, try Tools.must("openssl", ["dgst", "-sha256", "-binary"], stdin: der).stdout)
        let serial = try Tools.must("openssl", ["x509", "-in", f.path("p256.pem"), "-noout", "-serial"]).text
        let serialHex = serial.split(separator: "=")[1].trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        // slnr is the INTEGER's contents: a leading zero byte when the top bit is set.
        XCTAssertEqual(cert.serialNumber.hex.trimmingPrefix("00"), serialHex.trimmingPrefix("00"))
        XCTAssertEqual(cert.serialNumber.first.map { $0 & 0x80 }, 0)
        let ski = try Tools.must("openssl", ["x509", "-in", f.path("p256.pem"), "-noout", "-ext", "subjectKeyIdentifier"]).text
        let skiHex = ski.split(separator: "\n")[1].replacingOccurrences(of: ":", with: "").trimmingCharacters(in: .whitespaces).lowercased()
        XCTAssertEqual(cert.subjectKeyID?.hex, skiHex)
        XCTAssertEqual(cert.commonName, "p256.example.com")
        XCTAssertEqual(cert.defaultLabel, "p256.example.com")
        XCTAssertEqual(cert.alias, "leaf@example.com")
        XCTAssertEqual(cert.notAfter - cert.notBefore, 30 * 86_400)
        XCTAssertTrue(cert.subjectName.contains("CN=p256.example.com"), cert.subjectName)
        XCTAssertTrue(cert.issuerName.contains("CN=Locket Test CA"), cert.issuerName)

        // subj and issr: the Names' DER without the outer SEQUENCE; openssl's
        // UTF8Strings are not changed by the normalization, its PrintableString "GB" already upper case.
        let ca = try certificate("ca.pem")
        XCTAssertEqual(cert.issuer, ca.subject)
        XCTAssertTrue(ca.isSelfIssued)
        XCTAssertFalse(cert.isSelfIssued)
        XCTAssertEqual(ca.subjectKeyID != nil, true)
        let subjectDER = try DER.element(cert.der, at: 0)
        XCTAssertEqual(subjectDER.tag, 0x30)
        XCTAssertEqual(ca.subject.first, 0x31, "starts with the first RDN SET, not the Name's SEQUENCE")
        XCTAssertEqual(ca.alias, nil)
    }

    func testEmailFromTheSubjectWhenNoAlternativeName() throws {
        try Tools.must("openssl", ["req", "-x509", "-new", "-key", f.path("p256.key"), "-out", f.path("mail.pem"), "-days", "1",
                                   "-subj", "/CN=Mail Person/emailAddress=person@example.org"])
        let cert = try certificate("mail.pem")
        XCTAssertEqual(cert.alias, "person@example.org")
        XCTAssertEqual(cert.defaultLabel, "Mail Person")
    }

    /// A PrintableString subject (a config with string_mask=default), lower
    /// case and with runs of blanks: subj is upper-cased and collapsed.
    func testPrintableStringSubjectIsNormalizedAsApple() throws {
        let config = "[req]\ndistinguished_name=dn\nstring_mask=default\nprompt=no\n[dn]\nC=gb\nO=  Acme   Widgets \nCN=mouse ca\n"
        try f.write("printable.cnf", Array(config.utf8))
        try Tools.must("openssl", ["req", "-x509", "-new", "-key", f.path("p256.key"), "-out", f.path("printable.pem"), "-days", "1", "-config", f.path("printable.cnf")])
        let cert = try certificate("printable.pem")
        let text = String(decoding: cert.subject.filter { $0 >= 0x20 && $0 < 0x7f }, as: UTF8.self)
        XCTAssertTrue(text.contains("GB"), text)
        XCTAssertTrue(text.contains("ACME WIDGETS"), text)
        XCTAssertTrue(text.contains("MOUSE CA"), text)
        XCTAssertFalse(text.contains("  "), text)
        XCTAssertEqual(cert.commonName, "mouse ca", "the label keeps the name as written")
    }

    func testExportedCertificateReadsBackInOpenSSL() throws {
        let cert = try certificate("rsa2048.pem")
        try f.write("out.pem", Array(cert.pem.utf8))
        try f.write("out.der", cert.der)
        let a = try Tools.must("openssl", ["x509", "-in", f.path("out.pem"), "-noout", "-fingerprint", "-sha256"]).text
        let b = try Tools.must("openssl", ["x509", "-inform", "DER", "-in", f.path("out.der"), "-noout", "-fingerprint", "-sha256"]).text
        XCTAssertEqual(a, b)
        XCTAssertTrue(a.contains(cert.fingerprintText))
    }
}

extension String {
    func trimmingPrefix(_ prefix: String) -> String {
        var s = self
        while s.hasPrefix(prefix) && s.count > prefix.count { s.removeFirst(prefix.count) }
        return s
    }
}
