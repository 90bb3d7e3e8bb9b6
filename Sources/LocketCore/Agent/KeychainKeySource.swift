import LocketSupport

/// The keychain's private keys as an SSH agent's identities (SPEC §13).
///
/// Every call opens the keychain afresh as `caller` and lets it go before
/// returning: no connection is held between requests (other locket
/// commands would wait on it), and `lock`, auto-lock, protection classes,
/// access groups and access control are those of the moment of the request.
public struct KeychainKeySource: AgentKeySource, Sendable {
    /// The keychain file.
    public let path: String
    /// Who the agent serves: the owner, or an app by its entitlements (`-e`).
    public let caller: Caller
    let environment: Environment

    public init(path: String, caller: Caller, environment: Environment) {
        self.path = path
        self.caller = caller
        self.environment = environment
    }

    /// The SSH-capable private keys (ed25519, P-256/384/521, RSA) the caller
    /// may see whose protection class is open now, oldest first, each named
    /// by its label (else its tag). A listing is not a use: it does not
    /// extend the auto-lock timer. When every such key is locked, the lock's
    /// error (errSecInteractionNotAllowed), so that the refusal is said.
    public func identities() throws -> [AgentIdentity] {
        let keychain = try Keychain.open(at: path, caller: caller, environment: environment, extendSession: false)
        return try keychain.agentKeys(applicationLabel: nil).map { item, key in
            let name = item[.label].isEmpty ? item[.applicationTag] : item[.label]
            return AgentIdentity(publicKeyBlob: try key.sshPublicKeyBlob(), comment: String(decoding: name, as: UTF8.self))
        }
    }

    /// Opens the keychain, finds the private key whose public key is
    /// `publicKeyBlob` by its application label (one blind-index probe), and
    /// runs `body` with it, non-extractable keys included; the key's
    /// guarded memory is wiped when it goes. A locked class is
    /// errSecInteractionNotAllowed, a key the caller can't see errSecItemNotFound.
    public func withPrivateKey<R>(publicKeyBlob: [UInt8], _ body: (AsymmetricKey) throws -> R) throws -> R {
        let wanted: AsymmetricKey
        do {
            wanted = try AsymmetricKey(sshPublicKeyBlob: publicKeyBlob)
        } catch {
            // A blob no key of ours could have: as for any key we don't hold.
            throw KeychainError(.itemNotFound, "the agent holds no such key")
        }
        let keychain = try Keychain.open(at: path, caller: caller, environment: environment)
        guard let (_, key) = try keychain.agentKeys(applicationLabel: wanted.applicationLabel).first(where: { $0.key.pairs(with: wanted) }) else {
            throw KeychainError(.itemNotFound, "the agent holds no such key")
        }
        return try body(key)
    }
}

extension Keychain {
    /// The private keys SSH can use that the caller may see, opened (values
    /// included, extractable or not). With `applicationLabel`, only that key
    /// and strictly: a locked match throws. Without, keys of a locked class
    /// are left out, and if that leaves none while some were locked, the
    /// lock's error.
    func agentKeys(applicationLabel: [UInt8]?) throws -> [(item: Item, key: AsymmetricKey)] {
        var query = Query(itemClass: .key)
        try query.match(.keyClass, Array(KeyClass.private.rawValue.utf8))
        if let applicationLabel { try query.match(.applicationLabel, applicationLabel) }
        let sshTypes: Set<String> = [KeyType.ed25519.rawValue, KeyType.ec.rawValue, KeyType.rsa.rawValue]
        return try database.transaction(write: false) {
            try refreshFormat()
            let cursor = try store.select(try storeFilter(query), data: true)
            var found: [(item: Item, key: AsymmetricKey)] = []
            var locked: KeychainError?
            while let row = try cursor.next() {
                guard let item = try open(row, itemClass: .key, data: true, strict: applicationLabel != nil) else { continue }
                guard item.availability == .available else {
                    if item.availability != .damaged, locked == nil {
                        locked = unavailable(item.accessible, item.accessGroup)
                    }
                    continue
                }
                guard query.attributes.allSatisfy({ item[$0.0] == $0.1 }),
                      sshTypes.contains(String(decoding: item[.type], as: UTF8.self)), let data = item.data else { continue }
                found.append((item, try AsymmetricKey(pkcs8: data)))
            }
            // As a search does: a rotation since open is not reported as no key or a locked one.
            if found.isEmpty { try checkKeysCurrent() }
            if found.isEmpty, let locked { throw locked }
            return found
        }
    }
}
