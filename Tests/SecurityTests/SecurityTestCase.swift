import Glibc
import LocketCore
import LocketTestSupport
import XCTest

/// A test of the Security module against a keychain of its own: a private
/// HOME and XDG directories (`Sandbox`) put into this process's environment,
/// where the module finds them as an app would, and a `login` keychain made
/// there, unlocked, with a password (the weakest Argon2id cost: tests only).
class SecurityTestCase: XCTestCase {
    var sandbox: Sandbox!
    let password = "correct horse"

    /// The variables of locket's that the developer's environment might set.
    static let inherited = ["LOCKET_KEYCHAIN", "LOCKET_ENTITLEMENTS", "LOCKET_DEVICE_KEY", "LOCKET_FORMAT", "LOCKET_TPM"]
    /// The TPMs this test started (`useSoftwareTPM`).
    private var tpms: [SoftwareTPM] = []

    override func setUpWithError() throws {
        sandbox = try Sandbox()
        for name in Self.inherited { unsetenv(name) }
        // The sandbox's variables, but the process's own PATH (its tools are the test's).
        for (name, value) in sandbox.environment where name != "PATH" { setenv(name, value, 1) }
        try Keychain.create(at: sandbox.loginKeychain, password: try SecureBytes(copying: Array(password.utf8)),
                            kdf: .weakForTests, environment: .process)
    }

    /// A swtpm of this test's own on loopback, named by LOCKET_TPM in this
    /// process's environment as a Secure Enclave needs one (SPEC §21); the
    /// module finds locket-tpm beside the test bundle. A skip where swtpm is missing.
    @discardableResult
    func useSoftwareTPM() throws -> SoftwareTPM {
        let tpm: SoftwareTPM
        do { tpm = try SoftwareTPM() } catch let unavailable as TestUnavailable { throw XCTSkip(unavailable.reason) }
        tpms.append(tpm)
        setenv("LOCKET_TPM", tpm.tcti, 1)
        return tpm
    }

    override func tearDown() {
        unsetenv("LOCKET_TPM")
        for tpm in tpms { tpm.stop() }
        tpms = []
        if let keychain = try? Keychain.open(at: sandbox.loginKeychain, environment: .process) { keychain.session.lock(all: true) }
        sandbox?.remove()
        sandbox = nil
    }

    /// The keychain as the engine opens it (to lock and unlock it as `locket` would).
    func engineKeychain() throws -> Keychain { try Keychain.open(at: sandbox.loginKeychain, environment: .process) }

    /// `locket lock`, from another object, as another process would.
    func lock(all: Bool = false) throws { try engineKeychain().session.lock(all: all) }

    /// `locket unlock`.
    func unlock() throws { try engineKeychain().session.unlock(password: try SecureBytes(copying: Array(password.utf8)), timeout: nil) }

    /// The release binary (`LOCKET_BIN`), or a skip saying it is missing.
    func locketBinary() throws -> String {
        guard let path = LocketBinary.path else { throw XCTSkip("no locket binary: set LOCKET_BIN or run make build") }
        return path
    }

    /// The run's RSA-2048 key (`TestKeys`) in Apple's representation of a
    /// private key (PKCS#1), for SecKeyCreateWithData: for a test that uses
    /// an RSA key, not one about making it (a prime search, 0.1-0.5 CPU-s).
    func runRSAKeyData() throws -> Data {
        let items = try KeyImport.parse(try TestKeys.genpkey("rsa2048"), passphrase: { throw KeychainError(.param, "the run's key has no passphrase") })
        return Data(try items.keys[0].key.privateKeyExternalRepresentation().bytes)
    }

    /// Runs `locket ARGS` in the sandbox, as a shell next to the app would.
    func locket(_ arguments: [String], input: Input = .devNull) throws -> RunResult {
        Spawn.run(try locketBinary(), arguments, environment: sandbox.environment, input: input, timeout: 60)
    }
}
