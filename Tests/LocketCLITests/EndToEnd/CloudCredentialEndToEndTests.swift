import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 29, points 3 and 4, with the real clients: the AWS CLI (version 2,
/// Debian's `awscli`) with the README's profile, whose `credential_process`
/// runs `locket aws-credential`; kubectl with the README's kubeconfig user,
/// whose exec plugin runs `locket kube-credential`, against an HTTPS server
/// on loopback that checks the bearer token or the client certificate.
/// `locket` is found on PATH, as the README's examples find it.
class CloudCredentialEndToEndCase: EndToEndCase {
    /// A directory with `locket` (a link to the binary under test), first on the tools' PATH.
    func toolEnvironment(_ extra: [String: String] = [:]) throws -> [String: String] {
        let bin = sandbox.root + "/bin"
        if !fileExists(bin) {
            XCTAssertEqual(mkdir(bin, 0o755), 0)
            try FileManager.default.createSymbolicLink(atPath: bin + "/locket", withDestinationPath: binary)
        }
        return extra.merging(["PATH": bin + ":/usr/local/bin:/usr/bin:/bin"]) { $1 }
    }
}

final class AWSCredentialEndToEndTests: CloudCredentialEndToEndCase {
    /// Version 2's `aws configure export-credentials` (Debian's awscli is 2.9).
    func awsCLI() throws -> String {
        if access("/usr/bin/aws", X_OK) == 0 { return "/usr/bin/aws" }
        let aws = try SystemTool.require("aws", for: "the AWS CLI test (Debian package awscli)")
        guard runTool(aws, ["--version"], timeout: 60).out.hasPrefix("aws-cli/2") else {
            throw XCTSkip("the AWS CLI on PATH is not version 2 (no 'aws configure export-credentials'); Debian's awscli is")
        }
        return aws
    }

    func export(_ aws: String, profile: String) throws -> RunResult {
        runTool(aws, ["configure", "export-credentials", "--profile", profile],
                environment: try toolEnvironment(["AWS_EC2_METADATA_DISABLED": "true", "AWS_SHARED_CREDENTIALS_FILE": sandbox.root + "/no-credentials"]),
                timeout: 60)
    }

    func testTheAWSCLIGetsExactlyTheStoredCredential() throws {
        let aws = try awsCLI()
        initKeychain()
        let readme = try ServicesReadme.load()
        XCTAssertTrue(readme.awsProfile.contains("credential_process = locket aws-credential"), readme.awsProfile)
        XCTAssertEqual(mkdir(sandbox.home + "/.aws", 0o700), 0)
        writeFile(sandbox.home + "/.aws/config", readme.awsProfile)
        let profile = try XCTUnwrap(readme.awsProfile.firstMatch(of: /\[profile ([a-z]+)\]/).map { String($0.output.1) })

        // The README's way to store the usual two values, as it stands.
        let store = try XCTUnwrap(readme.shellLines.first { $0.contains("aws-credential add") && $0.hasPrefix("printf") })
        let keyID = "AKIAIOSFODNN7EXAMPLE", secretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        let stored = runTool("/bin/sh", ["-c", store], environment: try toolEnvironment(["AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": secretKey]))
        XCTAssertEqual(stored.status, 0, stored.summary)
        var exported = try export(aws, profile: profile)
        XCTAssertEqual(exported.status, 0, exported.summary)
        var credential = try exported.jsonObject()
        XCTAssertEqual(credential["Version"] as? Int, 1)
        XCTAssertEqual(credential["AccessKeyId"] as? String, keyID)
        XCTAssertEqual(credential["SecretAccessKey"] as? String, secretKey)
        XCTAssertNil(credential["SessionToken"])
        XCTAssertNil(credential["Expiration"])

        // Temporary credentials, as `aws sts` prints them: the token and the expiration come back too.
        let token = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ+token="
        let sts = #"{"Credentials": {"AccessKeyId": "ASIAEXAMPLE", "SecretAccessKey": "temporary/secret", "SessionToken": "\#(token)", "Expiration": "2031-03-04T05:06:07+00:00"}}"#
        ok("aws-credential", "add", "-s", "aws", "-a", profile, "-U", input: .text(sts))
        exported = try export(aws, profile: profile)
        XCTAssertEqual(exported.status, 0, exported.summary)
        credential = try exported.jsonObject()
        XCTAssertEqual(credential["AccessKeyId"] as? String, "ASIAEXAMPLE")
        XCTAssertEqual(credential["SecretAccessKey"] as? String, "temporary/secret")
        XCTAssertEqual(credential["SessionToken"] as? String, token)
        let expiration = try XCTUnwrap(credential["Expiration"] as? String)
        XCTAssertEqual(ISO8601DateFormatter().date(from: expiration), ISO8601DateFormatter().date(from: "2031-03-04T05:06:07Z"), expiration)

        // Locked: the CLI fails, and says why in locket's words.
        ok("lock")
        exported = try export(aws, profile: profile)
        XCTAssertNotEqual(exported.status, 0, exported.summary)
        XCTAssertEqual(exported.out, "")
        XCTAssertTrue(exported.err.contains("Error when retrieving credentials from custom-process: locket: error: the keychain is locked"), exported.err)
        XCTAssertTrue(exported.err.contains("(errSecInteractionNotAllowed -25308)"), exported.err)
    }
}

/// `aws-credential` itself, in-process: the item layout, and what it refuses.
final class AWSCredentialCommandTests: EndToEndCase {
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    func testTheItemLayout() throws {
        ok("aws-credential", "add", "-s", "aws", "-a", "prod", input: .text("AKIA1\nsecret/1\n"))
        let item = try ok("--json", "find", "-s", "aws", "-a", "prod", "-g").jsonObject()
        XCTAssertEqual(item["description"] as? String, "AWS access key")
        XCTAssertEqual(item["label"] as? String, "aws")
        XCTAssertEqual(item["data"] as? String, #"{"AccessKeyId":"AKIA1","SecretAccessKey":"secret/1"}"#)
        XCTAssertEqual(ok("aws-credential", "-s", "aws", "-a", "prod").out, #"{"Version":1,"AccessKeyId":"AKIA1","SecretAccessKey":"secret/1"}"# + "\n")
        // Added again: a duplicate, unless -U.
        expect(45, "aws-credential", "add", "-s", "aws", "-a", "prod", input: .text("AKIA2\nsecret/2\n"))
        ok("aws-credential", "add", "-s", "aws", "-a", "prod", "-U", input: .text("AKIA2\nsecret/2\n"))
        ok("aws-credential", "add", "-s", "aws", "-a", "server", "--accessible", "after-first-unlock", input: .text("AKIA5\nsecret/5\n"))
        XCTAssertEqual(try ok("--json", "find", "-s", "aws", "-a", "server").jsonObject()["accessible"] as? String, "after-first-unlock")
        XCTAssertEqual(ok("aws-credential", "-s", "aws", "-a", "prod").out, #"{"Version":1,"AccessKeyId":"AKIA2","SecretAccessKey":"secret/2"}"# + "\n")
        // An item made by hand: the key ID as its account, the secret key as its secret.
        add("-s", "legacy", "-a", "AKIA3", secret: "secret/3")
        XCTAssertEqual(ok("aws-credential", "-s", "legacy").out, #"{"Version":1,"AccessKeyId":"AKIA3","SecretAccessKey":"secret/3"}"# + "\n")
        add("-s", "blank", "-a", "AKIA4", secret: "not one word")
        let notAWS = expect(93, "aws-credential", "-s", "blank")
        XCTAssertTrue(notAWS.err.contains("the item does not hold an AWS credential"), notAWS.err)
        XCTAssertFalse(notAWS.err.contains("not one word"))
    }

    func testRefusals() {
        assertUsage(locket("aws-credential"), mentions: ["name the item"])
        assertUsage(locket("aws-credential", "add", input: .text("A\nS\n")), mentions: ["name the item"])
        assertUsage(locket("aws-credential", "-s", "aws", "-U"), mentions: ["-U/--update is for aws-credential add"])
        assertUsage(locket("aws-credential", "add", "-s", "aws", "--ref", "00"), mentions: ["--ref is for reading"])
        assertUsage(locket("aws-credential", "remove", "-s", "aws"), mentions: ["takes no operand but add"])
        assertError(expect(44, "aws-credential", "-s", "missing"), "errSecItemNotFound", -25300)
        // An idle stdin (a CI job's) fails instead of hanging.
        let idle = expect(36, "aws-credential", "add", "-s", "aws", "-a", "idle", input: .silentPipe)
        XCTAssertTrue(idle.err.contains("no AWS credential on standard input and no terminal to ask at"), idle.err)
        let expired = #"{"AccessKeyId": "A", "SecretAccessKey": "S", "Expiration": "2001-01-01T00:00:00Z"}"#
        let refused = expect(206, "aws-credential", "add", "-s", "aws", "-a", "old", input: .text(expired))
        XCTAssertTrue(refused.err.contains("the AWS credential expired at 2001-01-01T00:00:00Z; nothing was stored"), refused.err)
        expect(44, "find", "-s", "aws", "-a", "old")
        // Stored before it expired (here by hand): refused when asked for, not handed to the SDK.
        add("-s", "aws", "-a", "stale", secret: expired)
        let late = expect(53, "aws-credential", "-s", "aws", "-a", "stale")
        XCTAssertTrue(late.err.contains("the AWS credential in the item expired at 2001-01-01T00:00:00Z"), late.err)
        ok("aws-credential", "add", "-s", "aws", "-a", "locked", input: .text("A\nS\n"))
        ok("lock")
        assertError(expect(36, "aws-credential", "-s", "aws", "-a", "locked"), "errSecInteractionNotAllowed", -25308)
    }
}

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
            let result = runTool(openssl, arguments)
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
        assertUsage(locket("kube-credential"), mentions: ["name the item"])
        assertUsage(locket("kube-credential", "--class", "identity"), mentions: ["name the identity"])
        let alpha = expect(206, "kube-credential", "-s", "x", environment: ["KUBERNETES_EXEC_INFO": #"{"apiVersion":"client.authentication.k8s.io/v1alpha1"}"#])
        XCTAssertTrue(alpha.err.contains("locket answers client.authentication.k8s.io/v1 and client.authentication.k8s.io/v1beta1"), alpha.err)
    }
}
