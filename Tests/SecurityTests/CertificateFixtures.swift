import Foundation
import LocketTestSupport
import XCTest

/// Certificates and a PKCS#12 file made by openssl at test time (P-256
/// keys: fast): a CA, a leaf it signed with its key, and the leaf's identity
/// with the CA in its chain. A test without openssl is skipped with a reason.
struct CertificateFixtures {
    let directory: String
    static let p12Password = "p12 password"

    init(in root: String) throws {
        guard let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("openssl is not installed (make test-deps installs it)")
        }
        directory = root + "/certificates"
        if FileManager.default.fileExists(atPath: directory + "/leaf.p12") { return }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let d = directory
        let steps: [[String]] = [
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", d + "/ca.key"],
            ["req", "-x509", "-new", "-key", d + "/ca.key", "-out", d + "/ca.pem", "-days", "30", "-subj", "/O=Locket Test/CN=Locket Test CA"],
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", d + "/leaf.key"],
            ["req", "-new", "-key", d + "/leaf.key", "-out", d + "/leaf.csr", "-subj", "/O=Locket Test/CN=leaf.example.com"],
            ["x509", "-req", "-in", d + "/leaf.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key", "-CAcreateserial", "-out", d + "/leaf.pem", "-days", "30"],
            ["x509", "-in", d + "/leaf.pem", "-outform", "DER", "-out", d + "/leaf.der"],
            ["pkcs12", "-export", "-inkey", d + "/leaf.key", "-in", d + "/leaf.pem", "-certfile", d + "/ca.pem", "-name", "Leaf Identity",
             "-passout", "pass:\(CertificateFixtures.p12Password)", "-out", d + "/leaf.p12"],
        ]
        for step in steps {
            let result = Spawn.run(openssl, step, environment: OpenSSLFixtures.environment.merging(["PATH": "/usr/bin:/bin"]) { $1 },
                                   input: .devNull, timeout: 60)
            guard result.status == 0 else { throw UnexpectedOutput("openssl \(step.joined(separator: " ")): \(result.err)") }
        }
    }

    func leafDER() throws -> Data { try Data(contentsOf: URL(fileURLWithPath: directory + "/leaf.der")) }
    func pkcs12() throws -> Data { try Data(contentsOf: URL(fileURLWithPath: directory + "/leaf.p12")) }
    var path: String { directory }
}
