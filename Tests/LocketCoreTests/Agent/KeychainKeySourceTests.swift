import Foundation
@testable import LocketCore
import XCTest

/// The keychain as the ssh-agent's key source (SPEC §13): the private keys
/// the caller may see, opened afresh per request so that lock, protection
/// classes and access groups hold per signature; non-extractable keys sign;
/// no connection to the keychain is left open between requests.
final class KeychainKeySourceTests: KeychainTestCase {
    private var source: KeychainKeySource {
        KeychainKeySource(path: temporary.path, caller: .owner, environment: temporary.environment)
    }

    @discardableResult
    private func generate(_ type: KeyGenerationType, label: String?, group: String? = nil, accessible: ProtectionClass? = nil,
                          extractable: Bool = true) throws -> AsymmetricKey {
        var options = KeyItemOptions()
        options.label = label
        options.accessGroup = group
        options.accessible = accessible
        options.extractable = extractable
        return try keychain.keys.generateKey(type, options: options).publicKey
    }

    func testIdentitiesAreTheSSHPrivateKeysOldestFirstNamedByLabel() throws {
        let ed = try generate(.ed25519, label: "laptop")
        let p256 = try generate(.p256, label: "ci")
        try generate(.x25519, label: "backup recipient")
        let rsa = try generate(.rsa2048, label: nil)
        // A public key alone can't sign: not an identity.
        let other = try AsymmetricKey.generate(.p384)
        try keychain.keys.addKeyFile(try KeyImport.parse(Array(other.publicKeyPEM.utf8), passphrase: { throw KeychainError(.param) }))

        let listed = try source.identities()
        XCTAssertEqual(listed, [
            AgentIdentity(publicKeyBlob: try ed.sshPublicKeyBlob(), comment: "laptop"),
            AgentIdentity(publicKeyBlob: try p256.sshPublicKeyBlob(), comment: "ci"),
            AgentIdentity(publicKeyBlob: try rsa.sshPublicKeyBlob(), comment: ""),
        ])
    }

    func testANonExtractableKeySignsAndTheSignatureVerifies() throws {
        for type in [KeyGenerationType.ed25519, .p256, .p384, .p521, .rsa2048] {
            let key = try generate(type, label: type.rawValue, extractable: false)
            let data = Array("session data \(type.rawValue)".utf8)
            let flags = type == .rsa2048 ? AsymmetricKey.sshAgentRSASHA512 : 0
            let signature = try source.withPrivateKey(publicKeyBlob: try key.sshPublicKeyBlob()) { opened in
                XCTAssertNotNil((opened as? AsymmetricKey)?.pkcs8)
                return try opened.sshSignature(for: data, flags: flags)
            }
            XCTAssertTrue(try key.verifySSHSignature(signature, for: data), type.rawValue)
            XCTAssertFalse(try key.verifySSHSignature(signature, for: data + [1]), type.rawValue)
        }
    }

    func testEachRequestSeesTheLockOfItsMoment() throws {
        let ed = try generate(.ed25519, label: "wu")
        let blob = try ed.sshPublicKeyBlob()
        let source = self.source
        XCTAssertEqual(try source.identities().count, 1)

        try temporary.lock(all: false)
        XCTAssertKeychainError(.interactionNotAllowed, try source.withPrivateKey(publicKeyBlob: blob) { _ in () })
        XCTAssertKeychainError(.interactionNotAllowed, try source.identities())

        try temporary.unlock()
        XCTAssertNoThrow(try source.withPrivateKey(publicKeyBlob: blob) { _ in () })
        XCTAssertEqual(try source.identities().count, 1)
    }

    func testALockedClassIsLeftOutWhileAnOpenOneIsListed() throws {
        let locked = try generate(.ed25519, label: "when-unlocked", accessible: .whenUnlocked)
        let open = try generate(.p256, label: "after-first-unlock", accessible: .afterFirstUnlock)
        try temporary.lock(all: false)
        XCTAssertEqual(try source.identities().map(\.comment), ["after-first-unlock"])
        XCTAssertNoThrow(try source.withPrivateKey(publicKeyBlob: try open.sshPublicKeyBlob()) { _ in () })
        XCTAssertKeychainError(.interactionNotAllowed, try source.withPrivateKey(publicKeyBlob: try locked.sshPublicKeyBlob()) { _ in () })
    }

    func testAnAppSeesOnlyTheKeysOfItsGroups() throws {
        let mine = try generate(.ed25519, label: "mine", group: "T.a")
        let theirs = try generate(.ed25519, label: "theirs", group: "T.b")
        let app = KeychainKeySource(path: temporary.path, caller: .app(try Entitlements.parse(bytes(#"{"keychain-access-groups": ["T.a"]}"#), name: "a.json")),
                                    environment: temporary.environment)
        XCTAssertEqual(try app.identities().map(\.comment), ["mine"])
        XCTAssertNoThrow(try app.withPrivateKey(publicKeyBlob: try mine.sshPublicKeyBlob()) { _ in () })
        XCTAssertKeychainError(.itemNotFound, try app.withPrivateKey(publicKeyBlob: try theirs.sshPublicKeyBlob()) { _ in () })
        XCTAssertEqual(try source.identities().map(\.comment), ["mine", "theirs"])
    }

    func testAKeyNotHeldOrABlobOfNothingIsNotFound() throws {
        try generate(.ed25519, label: "held")
        let stranger = try AsymmetricKey.generate(.ed25519)
        XCTAssertKeychainError(.itemNotFound, try source.withPrivateKey(publicKeyBlob: try stranger.sshPublicKeyBlob()) { _ in () })
        XCTAssertKeychainError(.itemNotFound, try source.withPrivateKey(publicKeyBlob: [0, 0, 0, 3, 0x61]) { _ in () })
    }

    func testAnEmptyKeychainListsNothing() throws {
        XCTAssertEqual(try source.identities(), [])
    }

    /// The agent must not hold the keychain between requests: other commands would wait on it.
    func testNoConnectionToTheKeychainOutlivesARequest() throws {
        let ed = try generate(.ed25519, label: "k")
        // The probe sees a connection that is open (one held on purpose), then none:
        // a Keychain holds its file only while a call runs (exclusive locking).
        let held = try Keychain.open(at: temporary.path, environment: temporary.environment, keepsFileOpen: true)
        XCTAssertGreaterThan(openDescriptors(of: temporary.path), 0)
        held.releaseFile()
        keychain = nil
        XCTAssertEqual(openDescriptors(of: temporary.path), 0)
        _ = try source.identities()
        XCTAssertEqual(openDescriptors(of: temporary.path), 0, "identities() left the keychain open")
        // Not even while the key is used (a slow signer must not hold other commands up).
        let during = try source.withPrivateKey(publicKeyBlob: try ed.sshPublicKeyBlob()) { _ in openDescriptors(of: temporary.path) }
        XCTAssertEqual(during, 0, "the keychain was open while the key was used")
        XCTAssertEqual(openDescriptors(of: temporary.path), 0, "withPrivateKey left the keychain open")
    }

    /// How many of this process's descriptors are the keychain file or its -wal/-shm.
    private func openDescriptors(of given: String) -> Int {
        // The kernel names the file by its canonical path (the temporary directory's has a double slash).
        guard let canonical = realpath(given, nil) else { return -1 }
        let path = String(cString: canonical)
        free(canonical)
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd) else { return false }
            return target == path || target.hasPrefix(path + "-")
        }.count
    }
}
