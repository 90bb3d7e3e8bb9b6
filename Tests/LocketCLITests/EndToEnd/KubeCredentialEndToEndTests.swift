import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 29, point 4, with the real client: kubectl with the README's
/// kubeconfig user, whose exec plugin runs `locket kube-credential`, against
/// an HTTPS server on loopback that checks the bearer token or the client
/// certificate, for every ExecCredential version the kubectl installed
/// speaks (Debian's 1.20: v1beta1; 1.22 and later: v1 too).
final class KubeCredentialEndToEndTests: CloudCredentialEndToEndCase {
    var server: BackgroundProcess?

    override func tearDown() {
        server?.terminate()
        server = nil
        super.tearDown()
    }

    /// An API server stand-in: 200 and who it let in for the right bearer
    /// token or a client certificate the test CA issued, 401 otherwise.
    static let serverScript = #"""
        import http.server, ssl, sys
        certificate, key, ca, token = sys.argv[1:5]

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                who = None
                peer = self.connection.getpeercert()
                if self.headers.get("Authorization") == "Bearer " + token:
                    who = "token"
                elif peer:
                    who = "certificate " + dict(field[0] for field in peer["subject"])["commonName"]
                body = (("welcome " + who) if who else "unauthorized").encode()
                self.send_response(200 if who else 401)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format, *args):
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        context.load_verify_locations(ca)
        context.verify_mode = ssl.CERT_OPTIONAL
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    func testKubectlAuthenticatesWithTheKeychain() throws {
        let kubectl = try SystemTool.require("kubectl", for: "the kubectl test (Debian package kubernetes-client)")
        let python = try SystemTool.require("python3", for: "the kubectl test's HTTPS server")
        let openssl = try SystemTool.require("openssl", for: "the kubectl test's certificates")
        let pki = sandbox.root + "/pki"
        XCTAssertEqual(mkdir(pki, 0o700), 0)
        func run(_ arguments: [String]) {
            let result = runTool(openssl, arguments, environment: OpenSSLFixtures.environment)
            XCTAssertEqual(result.status, 0, result.summary)
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        run(["req", "-x509"] + ec + ["-keyout", pki + "/ca.key", "-out", pki + "/ca.pem", "-subj", "/CN=locket test CA", "-days", "2"])
        writeFile(pki + "/server.ext", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        writeFile(pki + "/client.ext", "extendedKeyUsage=clientAuth\n")
        for (name, subject) in [("server", "/CN=127.0.0.1"), ("client", "/CN=deploy")] {
            run(["req"] + ec + ["-keyout", "\(pki)/\(name).key", "-out", "\(pki)/\(name).csr", "-subj", subject])
            run(["x509", "-req", "-in", "\(pki)/\(name).csr", "-CA", pki + "/ca.pem", "-CAkey", pki + "/ca.key", "-CAcreateserial",
                 "-out", "\(pki)/\(name).pem", "-days", "2", "-extfile", "\(pki)/\(name).ext"])
        }
        let token = "eyJhbGciOiJSUzI1NiJ9.deploy-token.signature"
        writeFile(sandbox.root + "/server.py", Self.serverScript)
        let process = try BackgroundProcess(python, [sandbox.root + "/server.py", pki + "/server.pem", pki + "/server.key", pki + "/ca.pem", token],
                                            environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": sandbox.root])
        server = process
        guard process.waitUntil(timeout: 10, { process.out.hasSuffix("\n") || process.hasExited }),
              let port = Int(process.out.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            return XCTFail("the HTTPS server did not start: \(process.summary)")
        }

        // The keychain: the token the README's user names, and the client identity.
        initKeychain()
        add("-s", "kubernetes", "-a", "deploy", secret: token)
        writeFile(pki + "/deploy.pem", try XCTUnwrap(readText(pki + "/client.key")) + XCTUnwrap(readText(pki + "/client.pem")), mode: 0o600)
        ok("import", pki + "/deploy.pem")

        // The README's user in a kubeconfig for the server.
        let readme = try ServicesReadme.load()
        let user = readme.kubeUser
        XCTAssertTrue(user.contains("command: locket\n") && user.contains(#"args: ["kube-credential", "-s", "kubernetes", "-a", "deploy"]"#), user)
        let ca = Data(try XCTUnwrap(readText(pki + "/ca.pem")).utf8).base64EncodedString()
        func kubeconfig(_ user: String) -> String {
            let path = sandbox.root + "/kubeconfig"
            writeFile(path, """
                apiVersion: v1
                kind: Config
                clusters:
                - name: test
                  cluster:
                    server: https://127.0.0.1:\(port)
                    certificate-authority-data: \(ca)
                contexts:
                - name: test
                  context:
                    cluster: test
                    user: deploy
                current-context: test
                \(user)
                """, mode: 0o600)
            return path
        }
        func get(_ user: String) throws -> RunResult {
            runTool(kubectl, ["--kubeconfig", kubeconfig(user), "get", "--raw", "/api"], environment: try toolEnvironment(), timeout: 30)
        }

        // Every ExecCredential version this kubectl speaks (v1 from 1.22).
        let version = runTool(kubectl, ["version", "--client", "-o", "json"], timeout: 30)
        let minor = Int((try? version.jsonObject())
            .flatMap { ($0["clientVersion"] as? [String: Any])?["minor"] as? String }?.prefix { $0.isNumber } ?? "") ?? 0
        var versions = ["client.authentication.k8s.io/v1beta1"]
        if minor >= 22 { versions.append("client.authentication.k8s.io/v1") }
        for apiVersion in versions {
            let answer = try get(user.replacingOccurrences(of: "apiVersion: client.authentication.k8s.io/v1\n", with: "apiVersion: \(apiVersion)\n"))
            XCTAssertEqual(answer.status, 0, "\(apiVersion): \(answer.summary)")
            XCTAssertEqual(answer.out.trimmingCharacters(in: .whitespacesAndNewlines), "welcome token", apiVersion)
        }
        let latest = versions.last!
        let asLatest = user.replacingOccurrences(of: "apiVersion: client.authentication.k8s.io/v1\n", with: "apiVersion: \(latest)\n")

        // The client certificate instead, as the README gives its args.
        let identity = asLatest.replacingOccurrences(of: #"args: ["kube-credential", "-s", "kubernetes", "-a", "deploy"]"#,
                                                     with: #"args: ["kube-credential", "--class", "identity", "--label", "deploy"]"#)
        let byCertificate = try get(identity)
        XCTAssertEqual(byCertificate.status, 0, byCertificate.summary)
        XCTAssertEqual(byCertificate.out.trimmingCharacters(in: .whitespacesAndNewlines), "welcome certificate deploy")

        // The server does check: another token is turned away.
        ok("update", "-s", "kubernetes", "-a", "deploy", "-w", input: .text("not-the-token"))
        let wrong = try get(asLatest)
        XCTAssertNotEqual(wrong.status, 0, wrong.summary)
        // kubectl 1.20 says "(Unauthorized)", later ones say why in words.
        XCTAssertTrue(wrong.err.contains("You must be logged in to the server"), wrong.err)

        // Locked: kubectl fails with locket's words.
        ok("lock")
        let locked = try get(asLatest)
        XCTAssertNotEqual(locked.status, 0, locked.summary)
        XCTAssertTrue(locked.err.contains("errSecInteractionNotAllowed"), locked.err)
    }

    /// A key that never leaves the keychain can't be handed to kubectl.
    func testANonExtractableKeyIsRefused() throws {
        let openssl = try SystemTool.require("openssl", for: "a client certificate")
        initKeychain()
        let key = sandbox.root + "/client.key", certificate = sandbox.root + "/client.pem"
        let made = runTool(openssl, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                                     "-out", certificate, "-subj", "/CN=sealed", "-days", "2"])
        XCTAssertEqual(made.status, 0, made.summary)
        writeFile(sandbox.root + "/sealed.pem", try XCTUnwrap(readText(key)) + XCTUnwrap(readText(certificate)), mode: 0o600)
        ok("import", "--non-extractable", sandbox.root + "/sealed.pem")
        let refused = expect(28, "kube-credential", "--class", "identity", "--label", "sealed")
        assertError(refused, "errSecDataNotAvailable", -25316)
        XCTAssertTrue(refused.err.contains("the identity's private key is non-extractable"), refused.err)
        // kubectl shows the plugin's stderr: a usage error is one line too.
        for (arguments, mention) in [(["kube-credential"], "name the item"), (["kube-credential", "--class", "identity"], "name the identity")] {
            let usage = locket(arguments)
            XCTAssertEqual(usage.status, 2, usage.summary)
            XCTAssertEqual(usage.errLines.count, 1, usage.summary)
            XCTAssertTrue(usage.err.hasPrefix("locket: error: \(mention)") && usage.err.hasSuffix("(see 'locket help kube-credential')\n"), usage.summary)
        }
        let alpha = expect(206, "kube-credential", "-s", "x", environment: ["KUBERNETES_EXEC_INFO": #"{"apiVersion":"client.authentication.k8s.io/v1alpha1"}"#])
        XCTAssertTrue(alpha.err.contains("locket answers client.authentication.k8s.io/v1 and client.authentication.k8s.io/v1beta1"), alpha.err)
    }
}
