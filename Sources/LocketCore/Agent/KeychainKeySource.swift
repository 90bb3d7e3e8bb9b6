import CSodium
import LocketSupport
import Synchronization

/// The keychain's private keys as an SSH agent's identities (SPEC §13).
///
/// Every call opens the keychain afresh as `caller` and lets it go before
/// returning: no connection is held between requests (other locket
/// commands would wait on it), and `lock`, auto-lock, protection classes,
/// access groups and access control are those of the moment of the request.
public struct KeychainKeySource: AgentKeySource, Sendable {
    /// The keychain's path or URL.
    public let path: String
    /// Who the agent serves: the owner, or an app by its entitlements (`-e`).
    public let caller: Caller
    /// Opens the keychain for one request (its argument: whether that counts as a use).
    private let opener: @Sendable (Bool) throws -> Keychain
    /// Public key blobs already derived, for listings (see PublicBlobs).
    private let publicBlobs = PublicBlobs()
    /// The TPM's helper for Secure Enclave keys, started by the first
    /// signature with one and kept for the agent's life (warm signatures).
    private let tpm = AgentTPM()

    /// Keys from the keychain `open` opens afresh for every request (for a
    /// keychain named by a location, `KeychainKeySource(location:...)`, which
    /// opens a remote one with its helper, its connection and its database
    /// password every time); `path` names it in messages.
    public init(path: String, caller: Caller, open: @escaping @Sendable (_ extendSession: Bool) throws -> Keychain) {
        self.path = path
        self.caller = caller
        self.opener = open
    }

    /// Keys from the keychain file at `path`.
    public init(path: String, caller: Caller, environment: Environment) {
        self.init(path: path, caller: caller) { extendSession in
            try Keychain.open(at: path, caller: caller, environment: environment, extendSession: extendSession)
        }
    }

    /// Opens the keychain for one request (`extendSession`: whether it counts as a use).
    private func open(extendSession: Bool) throws -> Keychain { try opener(extendSession) }

    /// The SSH-capable private keys (ed25519, P-256/384/521, RSA) the caller
    /// may see whose protection class is open now, oldest first, each named
    /// by its label (else its tag). A listing is not a use: it does not
    /// extend the auto-lock timer. When every such key is locked, the lock's
    /// error (errSecInteractionNotAllowed), so that the refusal is said.
    public func identities() throws -> [AgentIdentity] {
        let keychain = try open(extendSession: false)
        return try keychain.keys.agentKeys(applicationLabel: nil).map { item, pkcs8 in
            let name = item[.label].isEmpty ? item[.applicationTag] : item[.label]
            // A Secure Enclave key's value is its TPM key file: the public key is read from it, without the TPM.
            let blob = try publicBlobs.blob(of: pkcs8) {
                try (item.isHeldByTPM ? TPMKey(TSS2KeyFile(der: pkcs8.bytes)).publicKey : AsymmetricKey(pkcs8: pkcs8)).sshPublicKeyBlob()
            }
            return AgentIdentity(publicKeyBlob: blob, comment: String(decoding: name, as: UTF8.self))
        }
    }

    /// Opens the keychain, finds the private key whose public key is
    /// `publicKeyBlob` by its application label (one blind-index probe), and
    /// runs `body` with it, non-extractable keys included; the key's
    /// guarded memory is wiped when it goes. A locked class is
    /// errSecInteractionNotAllowed, a key the caller can't see errSecItemNotFound.
    public func withPrivateKey<R>(publicKeyBlob: [UInt8], _ body: (any PrivateKeyOperations) throws -> R) throws -> R {
        let wanted: AsymmetricKey
        do {
            wanted = try AsymmetricKey(sshPublicKeyBlob: publicKeyBlob)
        } catch {
            // A blob no key of ours could have: as for any key we don't hold.
            throw KeychainError(.itemNotFound, "the agent holds no such key")
        }
        // The application label is the SHA-1 of the public key, sealed with the
        // item and checked byte for byte: the match is the key, and its
        // private half is decoded once, by the signature itself. The keychain
        // (its connection) is let go before the signature is made.
        let keychain = try open(extendSession: true)
        let found = try keychain.keys.agentKeys(applicationLabel: wanted.applicationLabel).first {
                $0.item[.type] == Array(wanted.keyType.rawValue.utf8) && $0.item[.keySize] == Array(String(wanted.sizeInBits).utf8)
            }
        guard let (item, value) = found else { throw KeychainError(.itemNotFound, "the agent holds no such key") }
        guard item.isHeldByTPM else { return try body(AsymmetricKey(pkcs8: value, publicHalf: wanted)) }
        let key = try TPMKey(TSS2KeyFile(der: value.bytes))
        // The agent can't ask for an application password: such a key is refused, as any key that needs a proof.
        guard !key.needsAuthorization else {
            throw KeychainError(.interactionNotAllowed, "the key has an application password, which the agent can't ask for")
        }
        let environment = keychain.engine.environment
        return try tpm.withClient(environment) { client in try body(TPMKeyUse(key: key, client: client, authorization: nil)) }
    }
}

extension KeychainKeys {
    /// The private keys SSH can use that the caller may see, opened: each
    /// item and its PKCS#8 (extractable or not). With `applicationLabel`,
    /// only that key and strictly: a locked match throws. Without, keys of a
    /// locked class are left out, and if that leaves none while some were
    /// locked, the lock's error.
    func agentKeys(applicationLabel: [UInt8]?) throws -> [(item: Item, pkcs8: SecureBytes)] {
        var query = Query(itemClass: .key)
        // Every private key the caller may see, synchronizable or not: the agent serves keys, not a SecItem query.
        query.synchronizable = .any
        try query.match(.keyClass, Array(KeyClass.private.rawValue.utf8))
        if let applicationLabel { try query.match(.applicationLabel, applicationLabel) }
        let sshTypes: Set<String> = [KeyType.ed25519.rawValue, KeyType.ec.rawValue, KeyType.rsa.rawValue]
        return try engine.transaction(write: false) {
            let scan = RowScan(query, filter: try engine.storeFilter(query), data: true, strict: applicationLabel != nil)
            // A listing leaves out the groups this machine can't open; a key asked for by its label is refused as a find is.
            scan.listing = applicationLabel == nil
            // Each key opened is a read of its secret, listed or used (SPEC §17 audit).
            scan.recordingReads = true
            scan.reportingRotation = true
            scan.admits = { sshTypes.contains(String(decoding: $0[.type], as: UTF8.self)) }
            var found: [(item: Item, pkcs8: SecureBytes)] = []
            var locked: KeychainError?
            try engine.scan(scan) { match in
                let item = match.item
                guard item.availability == .available else {
                    if item.availability != .damaged, locked == nil {
                        locked = engine.unavailable(item.accessible, item.accessGroup)
                    }
                    return true
                }
                if let data = item.data { found.append((item, data)) }
                return true
            }
            if found.isEmpty, let locked { throw locked }
            return found
        }
    }
}

/// The SSH public key blob of each private key a listing has seen, by a
/// BLAKE2b digest of its PKCS#8. Deriving a public key from a private one
/// goes through libcrypto 3.0's decoder and encoders (about a millisecond
/// for an EC key here), and every `ssh` lists every key. Only public blobs
/// are kept, never a key; a listing still opens the keychain and every key
/// it lists, so lock, protection classes and access groups hold as before.
/// One TPM client for an agent's life, one request at a time (the helper
/// answers in order); a client whose helper died starts another at its next request.
final class AgentTPM: @unchecked Sendable {
    private let lock = Mutex<Void>(())
    /// Touched only under `lock`.
    private var client: TPMClient?

    func withClient<R>(_ environment: Environment, _ body: (TPMClient) throws -> R) throws -> R {
        try lock.withLock { _ in
            if client == nil { client = try TPMClient(environment: environment) }
            return try body(client!)
        }
    }
}

final class PublicBlobs: Sendable {
    private let blobs = Mutex<[[UInt8]: [UInt8]]>([:])
    /// More keys than anyone lists: past it the memo starts again.
    private static let limit = 1024

    func blob(of pkcs8: SecureBytes, derive: () throws -> [UInt8]) throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        pkcs8.withUnsafeBytes { der in
            _ = crypto_generichash(&digest, 32, der.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(der.count), nil, 0)
        }
        if let known = blobs.withLock({ $0[digest] }) { return known }
        let blob = try derive()
        blobs.withLock { blobs in
            if blobs.count >= Self.limit { blobs.removeAll() }
            blobs[digest] = blob
        }
        return blob
    }
}
