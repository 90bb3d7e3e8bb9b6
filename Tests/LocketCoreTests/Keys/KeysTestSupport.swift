import Foundation
import LocketCore
// One import for every file of this target: the shared support of all the test targets.
@_exported import LocketTestSupport
import XCTest

// Fixtures for the key-layer tests, made at test time by the openssl and
// ssh-keygen command lines (the keys once per run, `TestKeys`) and copied
// into a private temporary directory (no private key is committed), and a
// small runner for those tools. Passphrases reach the tools through files
// (openssl's `file:`) or an askpass program (ssh-keygen), never argv.

/// A finished tool run.
struct ToolResult {
    let status: Int32
    let stdout: [UInt8]
    let stderr: String
    var text: String { String(decoding: stdout, as: UTF8.self) }
}

enum Tools {
    /// The path of `name` on PATH, or nil.
    static func find(_ name: String) -> String? { executableOnPath(name) }

    /// Runs `tool args` with `stdin`, in `directory`, with `environment` added.
    @discardableResult
    static func run(_ tool: String, _ args: [String], stdin: [UInt8] = [], environment: [String: String] = [:], in directory: String? = nil) throws -> ToolResult {
        // env(1) finds a bare name on PATH and changes directory (-C) for us.
        var executable = tool, arguments = args
        if !tool.hasPrefix("/") || directory != nil {
            executable = "/usr/bin/env"
            arguments = (directory.map { ["-C", $0] } ?? []) + [tool] + args
        }
        var env = ProcessInfo.processInfo.environment
        if tool == "openssl" { env.merge(OpenSSLFixtures.environment) { $1 } }
        for (k, v) in environment { env[k] = v }
        let result = Spawn.run(executable, arguments, environment: env, input: .bytes(stdin), timeout: 300)
        guard let status = result.status else { throw KeysTestError.toolFailed("\(tool): \(result.summary)") }
        return ToolResult(status: status, stdout: result.stdout, stderr: result.err)
    }

    /// Runs and fails the test unless the tool exits 0.
    @discardableResult
    static func must(_ tool: String, _ args: [String], stdin: [UInt8] = [], environment: [String: String] = [:], in directory: String? = nil,
                     file: StaticString = #filePath, line: UInt = #line) throws -> ToolResult {
        let result = try run(tool, args, stdin: stdin, environment: environment, in: directory)
        if result.status != 0 {
            XCTFail("\(tool) \(args.joined(separator: " ")) exited \(result.status): \(result.stderr)", file: file, line: line)
            throw KeysTestError.toolFailed(tool)
        }
        return result
    }

    /// A python3 that can import `module` (PATH's first, then Debian's), or nil;
    /// asked once a test process (a class's tests share one; issue 38).
    static func python(with module: String) -> String? {
        if let known = pythons[module] { return known }
        var found: String?
        for candidate in [find("python3"), "/usr/bin/python3"].compactMap({ $0 }) {
            if let r = try? run(candidate, ["-c", "import \(module)"]), r.status == 0 {
                found = candidate
                break
            }
        }
        pythons[module] = .some(found)
        return found
    }

    nonisolated(unsafe) private static var pythons: [String: String?] = [:]
}

enum KeysTestError: Error { case toolFailed(String) }

/// A 0700 temporary directory, removed when the fixture goes.
final class KeysFixture {
    let dir: String
    /// The passphrase the fixtures are encrypted with, in a 0600 file for `-passin file:`.
    let passphrase = "correct horse battery"
    var passFile: String { dir + "/pass" }
    /// An askpass program printing the passphrase, for ssh-keygen.
    var askpass: [String: String] { ["SSH_ASKPASS": dir + "/askpass", "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"] }

    init() throws {
        dir = NSTemporaryDirectory() + "locket-keys-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        XCTAssertTrue(FileManager.default.createFile(atPath: passFile, contents: Data(passphrase.utf8), attributes: [.posixPermissions: 0o600]))
        let script = "#!/bin/sh\ncat '\(passFile)'\n"
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/askpass", contents: Data(script.utf8), attributes: [.posixPermissions: 0o700]))
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    func path(_ name: String) -> String { dir + "/" + name }

    func read(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    func write(_ name: String, _ bytes: [UInt8]) throws {
        XCTAssertTrue(FileManager.default.createFile(atPath: path(name), contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
    }

    var pass: SecureBytes { get throws { try SecureBytes(copying: Array(passphrase.utf8)) } }

    /// `openssl genpkey` for `kind`: rsa2048, p256, p384, p521, ed25519, x25519; PKCS#8 PEM at `name`
    /// (a run's key of that kind, `TestKeys`: this fixture's own copy).
    func genpkey(_ kind: String, _ name: String) throws {
        try TestKeys.genpkey(kind, to: path(name))
    }

    /// A self-signed CA, and a leaf for `keyName` signed by it, with an e-mail SAN. Names: ca.pem, ca.key, `leaf`.
    func makeCA() throws {
        if FileManager.default.fileExists(atPath: path("ca.pem")) { return }
        try genpkey("p256", "ca.key")
        try Tools.must("openssl", ["req", "-x509", "-new", "-key", path("ca.key"), "-out", path("ca.pem"), "-days", "30",
                                   "-subj", "/C=GB/O=Locket Test/CN=Locket Test CA", "-addext", "basicConstraints=critical,CA:TRUE"])
    }

    func makeLeaf(key keyName: String, cert certName: String, cn: String, email: String? = "leaf@example.com") throws {
        try makeCA()
        try Tools.must("openssl", ["req", "-new", "-key", path(keyName), "-out", path(certName + ".csr"), "-subj", "/O=Locket Test/CN=\(cn)"])
        var ext = "basicConstraints=CA:FALSE\nsubjectKeyIdentifier=hash\n"
        if let email { ext += "subjectAltName=email:\(email),DNS:\(cn)\n" }
        try write(certName + ".ext", Array(ext.utf8))
        try Tools.must("openssl", ["x509", "-req", "-in", path(certName + ".csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                                   "-CAcreateserial", "-out", path(certName), "-days", "30", "-extfile", path(certName + ".ext")])
    }

    /// SHA-1 as `openssl dgst -sha1` computes it, of a file.
    func opensslSHA1(_ name: String) throws -> [UInt8] {
        try Tools.must("openssl", ["dgst", "-sha1", "-binary", path(name)]).stdout
    }

    /// Apple's external representation of the public key in `keyName`, cut
    /// out by openssl alone: PKCS#1 for RSA, the point or raw key (the
    /// subjectPublicKey BIT STRING's contents) otherwise.
    func opensslExternalRepresentation(_ keyName: String, rsa: Bool) throws -> [UInt8] {
        if rsa {
            return try Tools.must("openssl", ["rsa", "-in", path(keyName), "-RSAPublicKey_out", "-outform", "DER"]).stdout
        }
        let spki = try Tools.must("openssl", ["pkey", "-in", path(keyName), "-pubout", "-outform", "DER"]).stdout
        try write(keyName + ".spki", spki)
        let listing = try Tools.must("openssl", ["asn1parse", "-inform", "DER", "-in", path(keyName + ".spki")]).text
        return OpenSSLFixtures.subjectPublicKey(spki: spki, asn1parse: listing)
    }
}

/// The base of the key layer's suites: one fixture directory per class,
/// made by the class's `prepare` before its first test and removed after its
/// last. (Each suite wrote this out before: a static fixture, a class setUp
/// making it, a class tearDown dropping it, and `f`.)
class KeysTestCase: XCTestCase {
    /// Makes what the class's tests read from `fixture` (keys, certificates, scripts).
    class func prepare(_ fixture: KeysFixture) throws {}

    override class func setUp() {
        super.setUp()
        KeysFixture.make(for: self, prepare)
    }

    override class func tearDown() {
        KeysFixture.remove(for: self)
        super.tearDown()
    }

    /// This class's fixture.
    var f: KeysFixture { KeysFixture.of(type(of: self)) }
}

extension KeysFixture {
    nonisolated(unsafe) private static var byClass: [ObjectIdentifier: KeysFixture] = [:]

    /// Makes `owner`'s fixture and runs `prepare` on it; a failure stops the run, as a broken fixture would fail every test.
    static func make(for owner: AnyClass, _ prepare: (KeysFixture) throws -> Void) {
        let fixture = try! KeysFixture()
        try! prepare(fixture)
        byClass[ObjectIdentifier(owner)] = fixture
    }

    static func of(_ owner: AnyClass) -> KeysFixture { byClass[ObjectIdentifier(owner)]! }

    /// Removes `owner`'s fixture directory.
    static func remove(for owner: AnyClass) { byClass[ObjectIdentifier(owner)] = nil }
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
    init(hex: String) {
        var out: [UInt8] = []
        let digits = Array(hex.utf8.filter { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) })
        var i = 0
        while i + 1 < digits.count {
            out.append(UInt8(String(decoding: digits[i...(i + 1)], as: UTF8.self), radix: 16)!)
            i += 2
        }
        self = out
    }
}

/// Asserts that `body` throws a KeychainError with `code`; returns it.
@discardableResult
func assertKeychainError<T>(_ code: KeychainError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> T) -> KeychainError? {
    do {
        _ = try body()
        XCTFail("expected \(code.name), got success", file: file, line: line)
    } catch let error as KeychainError {
        XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
        // Never a libcrypto error code or its "error:0A..." string in a message.
        XCTAssertFalse(error.description.contains("error:"), "\(error)", file: file, line: line)
        return error
    } catch {
        XCTFail("expected KeychainError \(code.name), got \(error)", file: file, line: line)
    }
    return nil
}

extension AsymmetricKey {
    /// The run's first openssl key of `kind` (`TestKeys`), parsed:
    /// for a test that needs an RSA key, not one about making it (a prime
    /// search, ~0.1-0.4 CPU-s at 2,048 bits).
    static func runKey(_ kind: String) throws -> AsymmetricKey {
        try KeyImport.parse(try TestKeys.genpkey(kind), passphrase: noPassphrase).keys[0].key
    }
}

/// A passphrase callback that must not be called.
func noPassphrase() throws -> SecureBytes {
    XCTFail("the passphrase was asked for")
    throw KeychainError(.userCanceled)
}
