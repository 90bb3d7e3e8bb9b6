import Foundation
import XCTest

// Key and certificate fixtures for the end-to-end tests of issue 13, made at
// test time by the openssl command line (the keys once per run, `TestKeys`)
// and copied into the test's sandbox: no private key is committed. Passphrases reach openssl through files (`file:`).

extension EndToEndCase {
    /// The directory fixtures are made in (inside the sandbox, 0700).
    var keysDirectory: String {
        let dir = sandbox.root + "/keys"
        if !FileManager.default.fileExists(atPath: dir) {
            try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/pass", contents: Data(Self.keyPassphrase.utf8), attributes: [.posixPermissions: 0o600]))
        }
        return dir
    }

    static var keyPassphrase: String { "fixture passphrase" }
    func key(_ name: String) -> String { keysDirectory + "/" + name }
    var passFile: String { "file:" + key("pass") }

    /// Runs openssl in the fixture directory; fails the test unless it exits 0.
    @discardableResult
    func openssl(_ arguments: [String], input: Input = .devNull, file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = Spawn.run("/usr/bin/env", ["openssl"] + arguments, environment: sandbox.environment.merging(OpenSSLFixtures.environment) { $1 },
                               input: input, timeout: 120)
        XCTAssertEqual(result.status, 0, "openssl \(arguments.joined(separator: " ")): \(result.err)", file: file, line: line)
        return result
    }

    /// A private key (`OpenSSLFixtures.genpkeyOptions`) as PKCS#8 PEM: the
    /// run's key of that kind (`TestKeys`), this test's own copy.
    func makeKey(_ kind: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNoThrow(try TestKeys.genpkey(kind, to: key(name)), file: file, line: line)
    }

    /// A CA (ca.key, ca.pem) with a distinctive subject, made once per sandbox.
    func makeCA(cn: String = "Locket E2E CA") {
        if FileManager.default.fileExists(atPath: key("ca.pem")) { return }
        makeKey("p256", "ca.key")
        openssl(["req", "-x509", "-new", "-key", key("ca.key"), "-out", key("ca.pem"), "-days", "30",
                 "-subj", "/O=Locket E2E/CN=\(cn)", "-addext", "basicConstraints=critical,CA:TRUE"])
    }

    /// A leaf for `keyName` signed by the CA (a new serial each time).
    func makeLeaf(key keyName: String, cert: String, cn: String, email: String = "leaf@example.com") {
        makeCA()
        openssl(["req", "-new", "-key", key(keyName), "-out", key(cert + ".csr"), "-subj", "/O=Locket E2E/CN=\(cn)"])
        XCTAssertTrue(FileManager.default.createFile(atPath: key(cert + ".ext"),
                                                     contents: Data("basicConstraints=CA:FALSE\nsubjectAltName=email:\(email)\n".utf8)))
        openssl(["x509", "-req", "-in", key(cert + ".csr"), "-CA", key("ca.pem"), "-CAkey", key("ca.key"), "-CAcreateserial",
                 "-out", key(cert), "-days", "30", "-extfile", key(cert + ".ext")])
    }

    /// A PKCS#12 of key, leaf and the CA; `options` choose the encryption (default: AES-256).
    func makePKCS12(key keyName: String, cert: String, out: String, _ options: [String] = []) {
        openssl(["pkcs12", "-export", "-inkey", key(keyName), "-in", key(cert), "-certfile", key("ca.pem"),
                 "-passout", passFile, "-out", key(out)] + options)
    }

    /// The SHA-256 fingerprint openssl prints (`AB:CD:...`).
    func opensslFingerprint(_ cert: String) -> String {
        String(openssl(["x509", "-in", key(cert), "-noout", "-fingerprint", "-sha256"]).out.split(separator: "=")[1])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// SHA-1 of the public key as Apple hashes it (the subjectPublicKey BIT
    /// STRING's contents: PKCS#1 for RSA, the point or raw key otherwise), by openssl, in hex.
    func opensslApplicationLabel(_ keyName: String, rsa: Bool) -> String {
        let publicKey: [UInt8]
        if rsa {
            publicKey = openssl(["rsa", "-in", key(keyName), "-RSAPublicKey_out", "-outform", "DER"]).stdout
        } else {
            let spki = openssl(["pkey", "-in", key(keyName), "-pubout", "-outform", "DER"]).stdout
            XCTAssertTrue(FileManager.default.createFile(atPath: key(keyName + ".spki"), contents: Data(spki)))
            let listing = openssl(["asn1parse", "-inform", "DER", "-in", key(keyName + ".spki")]).out
            publicKey = OpenSSLFixtures.subjectPublicKey(spki: spki, asn1parse: listing)
        }
        return openssl(["dgst", "-sha1", "-r"], input: .bytes(publicKey)).out.split(separator: " ")[0].lowercased()
    }

    /// The public key of a private or public key file as openssl prints it (SPKI PEM).
    func opensslPublicKey(_ path: String, isPublic: Bool = false) -> String {
        openssl(["pkey", "-in", path, "-pubout"] + (isPublic ? ["-pubin"] : [])).out
    }

    func keyFileBytes(_ name: String) -> [UInt8] { Array(FileManager.default.contents(atPath: key(name)) ?? Data()) }

    /// `import FILE` with the fixture passphrase on stdin.
    @discardableResult
    func importKeys(_ name: String, _ more: [String] = [], file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        locket(["import", key(name), "--passphrase-stdin"] + more, input: .text(Self.keyPassphrase + "\n"), file: file, line: line)
    }

    /// How many items of `itemClass` `find --all` sees (0 when none).
    func countItems(_ itemClass: String, file: StaticString = #filePath, line: UInt = #line) -> Int {
        let result = locket(["--json", "find", "--class", itemClass, "--all"], file: file, line: line)
        if result.status == 44 { return 0 }
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        return ((try? result.json()) as? [Any])?.count ?? -1
    }
}
