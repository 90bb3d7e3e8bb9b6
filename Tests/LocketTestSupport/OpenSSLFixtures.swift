/// What the key tests of both targets ask the openssl command line for
/// (fixtures made at test time, no private key committed): the options of
/// each kind of key, and the public key's bits cut out of openssl's own
/// parse, to check locket's against an independent reading.
public enum OpenSSLFixtures {
    /// What an openssl run's environment adds: no default CA bundle. openssl
    /// 3.0's x509 command loads it (SSL_CERT_FILE, else
    /// /etc/ssl/certs/ca-certificates.crt: ~140 certificates through its
    /// decoders) at every start, though it verifies nothing unless asked:
    /// 30 of the 37 ms a fingerprint or a signed leaf took (issue 38). No test
    /// asks openssl for the system's trust; the other commands never read it.
    public static let environment = ["SSL_CERT_FILE": "/dev/null"]

    /// `openssl genpkey` options for `kind`: rsa2048, p256, p384, p521,
    /// ed25519, x25519; nil for another.
    public static func genpkeyOptions(_ kind: String) -> [String]? {
        switch kind {
        case "rsa2048": ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
        case "p256": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
        case "p384": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]
        case "p521": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521"]
        case "ed25519": ["-algorithm", "ED25519"]
        case "x25519": ["-algorithm", "X25519"]
        default: nil
        }
    }

    /// The subjectPublicKey BIT STRING's contents (the point or raw key;
    /// PKCS#1 for RSA) of the DER `spki`, located by `listing`, openssl
    /// asn1parse's listing of it: its last BIT STRING, less the unused-bits byte.
    public static func subjectPublicKey(spki: [UInt8], asn1parse listing: String) -> [UInt8] {
        let last = listing.split(separator: "\n").last { $0.contains("BIT STRING") }!
        let offset = Int(last.split(separator: ":")[0].trimmingCharacters(in: .whitespaces))!
        let header = Int(last.split(separator: "hl=")[1].split(separator: " ")[0])!
        let length = Int(last.split(separator: "l=")[2].split(separator: " ")[0].trimmingCharacters(in: .whitespaces))!
        return Array(spki[(offset + header + 1)..<(offset + header + length)])
    }
}
