import Foundation
import LocketCLI
import LocketTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 16, item 4: `docker-credential-locket store|get|erase|list` speaks
/// the docker credential-helpers protocol (docker/docker-credential-helpers:
/// credentials/credentials.go, client/client.go), over internet passwords.
/// The last test is the real client: skopeo logs in to a docker-registry on
/// loopback with htpasswd basic auth through the helper, pushes and inspects
/// an image with the stored credentials, and fails after `skopeo logout`.
final class EndToEndDockerCredentialTests: EndToEndCase {
    var registry: LoopbackRegistry?

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    override func tearDown() {
        registry?.stop()
        registry = nil
        super.tearDown()
    }

    /// A directory with `docker-credential-locket`, a symlink to the binary, as `make install` makes it.
    func helperDirectory() throws -> String {
        try HelperLinks.directory(in: sandbox.root, linking: "docker-credential-locket", to: binary)
    }

    /// Runs the helper as docker does: one action, the request on stdin.
    @discardableResult
    func helper(_ action: String, _ request: String, file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let result = Spawn.run(try helperDirectory() + "/docker-credential-locket", [action], environment: sandbox.environment,
                               input: .text(request), timeout: Self.timeout)
        XCTAssertFalse(result.timedOut, result.summary, file: file, line: line)
        return result
    }

    func store(_ url: String, _ user: String, _ secret: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let request = try JSONSerialization.data(withJSONObject: ["ServerURL": url, "Username": user, "Secret": secret])
        let result = try helper("store", String(decoding: request, as: UTF8.self), file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.out, "", file: file, line: line)
    }

    func get(_ url: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: String]? {
        let result = try helper("get", url, file: file, line: line)
        guard result.status == 0 else {
            XCTAssertEqual(result.status, 1, result.summary, file: file, line: line)
            XCTAssertEqual(result.out, "credentials not found in native keychain\n", file: file, line: line)
            return nil
        }
        XCTAssertTrue(result.out.hasSuffix("}\n"), result.out, file: file, line: line)
        return try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: String]
    }

    func testStoreGetEraseRoundTrip() throws {
        let secret = "p\u{00e9}ss \"word\" \\ with\nnewline"
        try store("https://registry.example.com/v2/", "alice", secret)
        XCTAssertEqual(try get("https://registry.example.com/v2/"),
                       ["ServerURL": "https://registry.example.com/v2/", "Username": "alice", "Secret": secret])
        // Stored as an internet password that find shows as a docker credential.
        let item = try expect(0, "--json", "find", "--class", "inet", "-s", "registry.example.com", "-g").jsonObject()
        XCTAssertEqual(item["label"] as? String, "Docker Credentials")
        XCTAssertEqual(item["protocol"] as? String, "htps")
        XCTAssertEqual(item["path"] as? String, "v2/")
        XCTAssertEqual(item["account"] as? String, "alice")
        XCTAssertEqual(item["data"] as? String, secret)
        // exec finds it by the same URL.
        XCTAssertEqual(ok("exec", "--env", "T=https://alice@registry.example.com/v2/", "--", "printenv", "T").out, secret + "\n")

        // A miss: the exact message clients match, exit 1.
        XCTAssertNil(try get("https://registry.example.com/"))
        XCTAssertNil(try get("registry.example.com:5000/v2/"))
        XCTAssertNil(try get("http://registry.example.com/v2/"))

        let erased = try helper("erase", "https://registry.example.com/v2/\n")
        XCTAssertEqual(erased.status, 0, erased.summary)
        XCTAssertNil(try get("https://registry.example.com/v2/"))
        // Nothing to erase is no failure (the secretservice helper's answer; skopeo crashes on a not-found here).
        XCTAssertEqual(try helper("erase", "https://registry.example.com/v2/").status, 0)
    }

    /// No scheme means https; host, port and path are matched exactly.
    func testServerURLs() throws {
        try store("127.0.0.1:5000", "ci", "one")
        try store("http://127.0.0.1:5000", "ci", "two")
        try store("[::1]:5000", "ci", "three")
        try store("index.docker.io/v1/", "hub", "four")
        XCTAssertEqual(try get("127.0.0.1:5000")?["Secret"], "one")
        XCTAssertEqual(try get("https://127.0.0.1:5000")?["Secret"], "one")
        XCTAssertEqual(try get("  //127.0.0.1:5000 \n")?["Secret"], "one")
        XCTAssertEqual(try get("http://127.0.0.1:5000")?["Secret"], "two")
        XCTAssertEqual(try get("https://[::1]:5000")?["Secret"], "three")
        XCTAssertEqual(try get("https://index.docker.io/v1/")?["Secret"], "four")
        XCTAssertNil(try get("127.0.0.1"))
        XCTAssertNil(try get("127.0.0.1:5001"))
        let unsupported = try helper("get", "ftp://127.0.0.1")
        XCTAssertEqual(unsupported.status, 1)
        XCTAssertEqual(unsupported.out, "unsupported scheme: ftp\n")
        XCTAssertEqual(try helper("get", "https://").out, "no hostname in URL\n")
    }

    /// Issue 31: a server URL is read as docker's helpers read it (Go's
    /// net/url, registryurl.Parse): a host with a blank or another character
    /// no host has, a control character, a bad port: refused, never taken
    /// for another host. A fragment is refused too (Go would drop it, but
    /// docker's own config keys `host#x` apart from `host`). Blanks around
    /// the whole request are the protocol's: docker's Get trims them.
    func testServerURLsDockerRefusesAreRefused() throws {
        try store("registry.example.com", "alice", "secret-a")
        for (url, message) in [("https://  registry.example.com", #"invalid character " " in host name"#),
                               ("//  registry.example.com", #"invalid character " " in host name"#),
                               ("regi stry.example.com", #"invalid character " " in host name"#),
                               ("registry.example.com#x", "invalid server URL: it has a fragment (#)"),
                               ("https://registry.example.com/v2/#x", "invalid server URL: it has a fragment (#)"),
                               ("registry.example.com\u{7f}", "net/url: invalid control character in URL"),
                               ("registry%2eexample.com", #"invalid URL escape "%2e""#),
                               ("registry.example.com:50x0", #"invalid port ":50x0" after host"#),
                               ("https://a b@registry.example.com", "net/url: invalid userinfo")] {
            let result = try helper("get", url)
            XCTAssertEqual(result.status, 1, url)
            XCTAssertEqual(result.out, message + "\n", url)
        }
        // store takes its ServerURL as given (docker's Store trims nothing): "  host" is no host.
        let padded = try helper("store", #"{"ServerURL": "  registry.example.com", "Username": "mallory", "Secret": "m"}"#)
        XCTAssertEqual(padded.status, 1, padded.summary)
        XCTAssertEqual(padded.out, #"invalid character " " in host name"# + "\n")
        XCTAssertEqual(try get("registry.example.com")?["Username"], "alice")
        // Around the whole get request, blanks are framing, as for docker.
        XCTAssertEqual(try get("  registry.example.com\n")?["Secret"], "secret-a")
        // A host Go reads through its escapes is that host.
        try store("r\u{e9}gistry.example", "bob", "secret-b")
        XCTAssertEqual(try get("https://r%C3%A9gistry.example")?["Secret"], "secret-b")
    }

    func testListShowsDockerCredentialsOnly() throws {
        let empty = try helper("list", "unused")
        XCTAssertEqual(empty.status, 0, empty.summary)
        XCTAssertEqual(empty.out, "{}\n")
        try store("registry.example.com", "alice", "a")
        try store("http://127.0.0.1:5000/v2", "bob", "b")
        // An internet password stored some other way (git's helper) is not listed, but get finds it.
        add("--class", "inet", "-s", "git.example.com", "-r", "https", "-a", "carol", secret: "git-secret")
        let list = try helper("list", "unused")
        XCTAssertEqual(list.status, 0, list.summary)
        let map = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: String]
        XCTAssertEqual(map, ["https://registry.example.com": "alice", "http://127.0.0.1:5000/v2": "bob"])
        XCTAssertEqual(try get("git.example.com")?["Secret"], "git-secret")
    }

    /// One login per registry: another user's docker credential is replaced;
    /// other internet passwords for the host are left alone.
    func testStoreReplacesTheLoginOfAnotherUser() throws {
        add("--class", "inet", "-s", "registry.example.com", "-r", "https", "-a", "git-user", secret: "git-secret")
        try store("registry.example.com", "alice", "a1")
        try store("registry.example.com", "alice", "a2")
        try store("registry.example.com", "bob", "b1")
        let items = try expect(0, "--json", "find", "--class", "inet", "-s", "registry.example.com", "--all", "-g").jsonArray()
        XCTAssertEqual(Set(items.compactMap { $0["account"] as? String }), ["git-user", "bob"])
        XCTAssertEqual(items.first { $0["account"] as? String == "bob" }?["data"] as? String, "b1")
    }

    func testProtocolErrors() throws {
        for (request, message) in [(#"{"ServerURL": "", "Username": "u", "Secret": "s"}"#, "no credentials server URL"),
                                   (#"{"ServerURL": "r.example", "Username": "", "Secret": "s"}"#, "no credentials username"),
                                   (#"{"ServerURL": "r.example", "Secret": "s"}"#, "no credentials username"),
                                   ("not json", "the credentials are not a JSON object of strings"),
                                   (#"{"ServerURL": "r.example", "Username": "u", "Secret": "s"} trailing"#, "not a JSON object")] {
            let result = try helper("store", request)
            XCTAssertEqual(result.status, 1, result.summary)
            XCTAssertTrue(result.out.contains(message), "\(request): \(result.out)")
        }
        // Keys in any case, unknown members skipped, as Go's encoding/json reads them.
        let relaxed = try helper("store", #"{"serverurl": "r.example", "USERNAME": "u", "Secret": "s\u00e9", "Extra": [1, {"a": null}]}"#)
        XCTAssertEqual(relaxed.status, 0, relaxed.summary)
        XCTAssertEqual(try get("r.example")?["Secret"], "s\u{00e9}")
        XCTAssertEqual(try helper("get", "").out, "no credentials server URL\n")
        let unknown = try helper("frobnicate", "")
        XCTAssertEqual(unknown.status, 1)
        XCTAssertEqual(unknown.out, "docker-credential-locket: unknown action: frobnicate\n")
        let version = try helper("version", "")
        XCTAssertEqual(version.out, "docker-credential-locket (locket) \(CommandTable.version)\n")
        // The same through `locket docker-credential`.
        XCTAssertEqual(locket(["docker-credential", "get"], input: .text("r.example")).status, 0)
    }

    func testLockedKeychainIsAFailureOnStdout() throws {
        try store("r.example", "u", "s")
        ok("lock")
        let result = try helper("get", "r.example")
        XCTAssertEqual(result.status, 1, result.summary)
        XCTAssertTrue(result.out.contains("errSecInteractionNotAllowed"), result.out)
        XCTAssertFalse(result.out.contains("credentials not found"), "a locked item reported as missing")
    }

    // MARK: - The real client

    func testSkopeoLoginPushInspectLogoutThroughTheHelper() throws {
        let skopeo = try SystemTool.require("skopeo", for: "the docker credential helper's real-client test")
        let registryBinary = try SystemTool.require("docker-registry", for: "the docker credential helper's real-client test")
        let htpasswd = try SystemTool.require("htpasswd", for: "the registry's password file (apache2-utils)")
        let python = try SystemTool.require("python3", for: "making a test image")
        let root = sandbox.root
        // The registry: htpasswd basic auth (bcrypt), loopback, a port the kernel found free.
        let server = try LoopbackRegistry(registry: registryBinary, htpasswd: htpasswd, root: root + "/registry", user: "alice",
                                          password: "right-pass")
        registry = server

        // skopeo, with the helper first in PATH and locket named for this registry only.
        let auth = root + "/auth.json"
        writeFile(auth, #"{"credHelpers": {"\#(server.host)": "locket"}}"#, mode: 0o600)
        let tools = ["PATH": try helperDirectory() + ":/usr/local/bin:/usr/bin:/bin"]
        func skopeoRun(_ arguments: [String], input: Input = .devNull) -> RunResult {
            runTool(skopeo, arguments, input: input, environment: tools, timeout: 30)
        }
        let host = server.host
        let port = Int(host.split(separator: ":")[1])!
        let image = "docker://\(host)/locket/hello:latest"

        let wrong = skopeoRun(["login", "--authfile", auth, "--tls-verify=false", "-u", "alice", "--password-stdin", host],
                              input: .text("wrong-pass"))
        XCTAssertNotEqual(wrong.status, 0, "a wrong password logged in: \(wrong.summary)")
        expect(44, "find", "--class", "inet", "-s", "127.0.0.1")

        let login = skopeoRun(["login", "--authfile", auth, "--tls-verify=false", "-u", "alice", "--password-stdin", host],
                              input: .text("right-pass"))
        XCTAssertEqual(login.status, 0, login.summary)
        let item = try expect(0, "--json", "find", "--class", "inet", "-s", "127.0.0.1", "-P", "\(port)", "-g").jsonObject()
        XCTAssertEqual(item["label"] as? String, "Docker Credentials")
        XCTAssertEqual(item["account"] as? String, "alice")
        XCTAssertEqual(item["data"] as? String, "right-pass")
        let authFile = readText(auth) ?? ""
        XCTAssertFalse(authFile.contains("right-pass") || authFile.contains(Data("alice:right-pass".utf8).base64EncodedString()),
                       "skopeo wrote the password to its own file: \(authFile)")

        // Push a one-layer image and read it back: both authenticated with what the helper returned.
        let layout = root + "/image"
        let built = runTool(python, ["-c", Self.imageScript, layout])
        XCTAssertEqual(built.status, 0, built.summary)
        let push = skopeoRun(["copy", "--authfile", auth, "--dest-tls-verify=false", "oci:\(layout):latest", image])
        XCTAssertEqual(push.status, 0, push.summary)
        let inspect = skopeoRun(["inspect", "--authfile", auth, "--tls-verify=false", image])
        XCTAssertEqual(inspect.status, 0, inspect.summary)
        XCTAssertTrue(inspect.out.contains("\"Name\": \"\(host)/locket/hello\""), inspect.out)

        // Logout erases the item; the same request is then refused by the registry.
        let logout = skopeoRun(["logout", "--authfile", auth, host])
        XCTAssertEqual(logout.status, 0, logout.summary)
        expect(44, "find", "--class", "inet", "-s", "127.0.0.1")
        let refused = skopeoRun(["inspect", "--authfile", auth, "--tls-verify=false", image])
        XCTAssertNotEqual(refused.status, 0, "inspect worked after logout: \(refused.summary)")
        XCTAssertTrue(refused.err.contains("unauthorized") || refused.err.contains("authentication required"), refused.err)
    }

    /// An OCI image layout with one layer holding one file.
    static let imageScript = #"""
        import hashlib, io, json, os, sys, tarfile
        out = sys.argv[1]
        os.makedirs(out + "/blobs/sha256")
        def blob(data):
            digest = hashlib.sha256(data).hexdigest()
            with open(f"{out}/blobs/sha256/{digest}", "wb") as f:
                f.write(data)
            return {"digest": "sha256:" + digest, "size": len(data)}
        layer = io.BytesIO()
        with tarfile.open(fileobj=layer, mode="w") as tar:
            data = b"hello from locket\n"
            info = tarfile.TarInfo("hello.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        layer = blob(layer.getvalue())
        config = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                                  "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}).encode())
        manifest = blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                                    "config": dict(config, mediaType="application/vnd.oci.image.config.v1+json"),
                                    "layers": [dict(layer, mediaType="application/vnd.oci.image.layer.v1.tar")]}).encode())
        with open(out + "/index.json", "w") as f:
            json.dump({"schemaVersion": 2, "manifests": [dict(manifest, mediaType="application/vnd.oci.image.manifest.v1+json",
                       annotations={"org.opencontainers.image.ref.name": "latest"})]}, f)
        with open(out + "/oci-layout", "w") as f:
            f.write('{"imageLayoutVersion": "1.0.0"}')
        """#
}
