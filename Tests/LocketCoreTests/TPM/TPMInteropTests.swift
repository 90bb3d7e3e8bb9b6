import Foundation
@testable import LocketCore
import XCTest

/// The key file locket keeps is the one the TPM tools read (SPEC §21):
/// tpm2-openssl signs with a key locket made, and locket with one
/// tpm2-openssl made, against the same swtpm.
final class TPMInteropTests: TPMTestCase {
    /// tpm2-openssl's provider, on the test's TPM; a skip where it is missing.
    func provider(_ tpm: SoftwareTPM) throws -> [String: String] {
        // openssl's module directory (MODULESDIR: "/usr/lib/x86_64-linux-gnu/ossl-modules"), whatever the architecture.
        let modules = (try? Tools.run("openssl", ["version", "-m"]))?.text.split(separator: "\"").dropFirst().first.map(String.init)
        guard let modules, FileManager.default.fileExists(atPath: modules + "/tpm2.so") else {
            throw XCTSkip("tpm2-openssl is not installed (Debian package tpm2-openssl; make test-deps installs it)")
        }
        return ["TPM2OPENSSL_TCTI": tpm.tcti]
    }

    func testTPM2OpenSSLSignsWithTheKeyFileLocketKeeps() throws {
        let tpm = try sharedTPM()
        let environment = try provider(tpm)
        let client = try client(tpm)
        let key = try client.createKey()
        let protected = try client.createKey(authorization: try password("1234"))
        write("key.pem", Array(key.file.pem.utf8))
        write("protected.pem", Array(protected.file.pem.utf8))
        write("pass", Array("1234".utf8))
        let digest = Digest.sha256(Array("signed by tpm2-openssl".utf8))
        write("digest", digest)
        for (file, extra) in [("key.pem", [String]()), ("protected.pem", ["-passin", "file:pass"])] {
            try Tools.must("openssl", ["pkeyutl", "-provider", "tpm2", "-provider", "default", "-sign", "-inkey", file, "-in", "digest", "-out", "signature"] + extra,
                           environment: environment, in: fixture.dir)
            let publicKey = file == "key.pem" ? key.publicKey : protected.publicKey
            XCTAssertTrue(try publicKey.verify(signature: try read("signature"), for: digest, algorithm: .ecdsaDigestX962SHA256), file)
        }
        // tpm2-openssl reads the public key out of the file as locket does.
        let exported = try Tools.must("openssl", ["pkey", "-provider", "tpm2", "-provider", "default", "-in", "key.pem", "-pubout"],
                                      environment: environment, in: fixture.dir)
        XCTAssertEqual(exported.text, key.publicKey.publicKeyPEM)
    }

    func testLocketSignsWithAKeyFileTPM2OpenSSLMade() throws {
        let tpm = try sharedTPM()
        let environment = try provider(tpm)
        try Tools.must("openssl", ["genpkey", "-provider", "tpm2", "-provider", "default", "-algorithm", "EC", "-pkeyopt", "group:P-256", "-out", "made.pem"],
                       environment: environment, in: fixture.dir)
        let key = try TPMKey(TSS2KeyFile(pem: try read("made.pem")))
        let message = Array("signed by locket with tpm2-openssl's key".utf8)
        let signature = try client(tpm).sign(message, algorithm: .ecdsaMessageX962SHA256, with: key)
        try Tools.must("openssl", ["pkey", "-provider", "tpm2", "-provider", "default", "-in", "made.pem", "-pubout", "-out", "made.pub.pem"],
                       environment: environment, in: fixture.dir)
        write("message", message)
        write("signature", signature)
        let verified = try Tools.must("openssl", ["dgst", "-sha256", "-verify", "made.pub.pem", "-signature", "signature", "message"], in: fixture.dir)
        XCTAssertEqual(verified.text, "Verified OK\n")
    }
}
