import LocketCore
import LocketSupport

/// An asymmetric key: in memory (SecKeyCreateWithData, a key not made
/// permanent, a public key copied out), or in a keychain, where it is used
/// without leaving it (SPEC §13): a signature or a decryption opens it
/// inside the engine for that one operation, with its protection class,
/// access group and access control applied then, as `locket key sign` does.
public final class SecKey: Hashable, @unchecked Sendable {
    enum Backing {
        /// A key held by this object; `extractable` false for one made with
        /// kSecAttrTokenIDSoftwareEnclave and not kept.
        case memory(AsymmetricKey, extractable: Bool)
        /// A key item of a keychain.
        case stored(StoredKey)
        /// A Secure Enclave key made without kSecAttrIsPermanent: in the
        /// TPM, known by its key file, used through this object's helper.
        case tpm(TPMKeyUse)
    }

    let backing: Backing
    private let lock = NSLock()
    private var publicHalf: AsymmetricKey?

    init(_ key: AsymmetricKey, extractable: Bool = true) {
        backing = .memory(key, extractable: extractable || key.keyClass == .public)
    }

    init(tpm use: TPMKeyUse) {
        backing = .tpm(use)
    }

    init(stored: StoredKey, publicKey: AsymmetricKey? = nil) {
        backing = .stored(stored)
        publicHalf = publicKey
    }

    var keyClass: KeyClass {
        switch backing {
        case .memory(let key, _): key.keyClass
        case .stored(let stored): stored.keyClass
        case .tpm: .private
        }
    }

    var keyType: KeyType? {
        switch backing {
        case .memory(let key, _): key.keyType
        case .stored(let stored): KeyType(rawValue: String(decoding: stored.item[.type], as: UTF8.self))
        case .tpm: .ec
        }
    }

    var sizeInBits: Int {
        switch backing {
        case .memory(let key, _): key.sizeInBits
        case .stored(let stored): Int(String(decoding: stored.item[.keySize], as: UTF8.self)) ?? 0
        case .tpm: 256
        }
    }

    var isExtractable: Bool {
        switch backing {
        case .memory(_, let extractable): extractable
        case .stored(let stored): stored.item.isExtractable && !stored.item.isHeldByTPM
        case .tpm: false
        }
    }

    /// Whether the private key is in a TPM (a Secure Enclave key).
    var isHeldByTPM: Bool {
        switch backing {
        case .memory: false
        case .stored(let stored): stored.item.isHeldByTPM
        case .tpm: true
        }
    }

    /// The public key: a stored private key's is read from the keychain
    /// once (which needs its proof when it has access control).
    func publicKey() throws -> AsymmetricKey {
        switch backing {
        case .memory(let key, _): return key.publicKey
        case .tpm(let use): return use.publicKey
        case .stored(let stored):
            if let known = lock.withLock({ publicHalf }) { return known }
            let key = try stored.use { keychain in try keychain.keys.publicKey(stored.query()).key }
            lock.withLock { publicHalf = key }
            return key
        }
    }

    /// Runs `body` with the private key: in memory, or opened inside the
    /// keychain for this one use.
    func withPrivateKey<R>(_ what: String, _ body: (any PrivateKeyOperations) throws -> R) throws -> R {
        guard keyClass == .private else { throw KeychainError(.param, "\(what) needs a private key; this is a public key") }
        switch backing {
        case .memory(let key, _): return try body(key)
        case .tpm(let use): return try body(use)
        case .stored(let stored):
            return try stored.use { keychain in try keychain.keys.withKey(stored.query(), needsPrivate: true) { _, key in try body(key) } }
        }
    }

    public static func == (a: SecKey, b: SecKey) -> Bool {
        switch (a.backing, b.backing) {
        case (.memory(let x, _), .memory(let y, _)): x.keyClass == y.keyClass && x.pairs(with: y)
        case (.stored(let x), .stored(let y)): x.ref == y.ref && x.target == y.target
        case (.tpm(let x), .tpm(let y)): x.key.file.der == y.key.file.der
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch backing {
        case .memory(let key, _): hasher.combine(key.publicKeyExternalRepresentation)
        case .stored(let stored): hasher.combine(stored.ref)
        case .tpm(let use): hasher.combine(use.publicKey.publicKeyExternalRepresentation)
        }
    }
}

/// A key item of a keychain, as a SecKey refers to it: where, which
/// (persistent reference), its attributes, and how its uses may be proven.
struct StoredKey {
    let target: KeychainTarget
    let item: Item
    let authentication: Authentication

    var ref: [UInt8] { item.persistentRef }
    var keyClass: KeyClass { item[.keyClass] == Array("private".utf8) ? .private : .public }

    func query() -> Query {
        var query = Query(itemClass: .key)
        query.persistentRef = item.persistentRef
        return query
    }

    /// `body` with the key's keychain, proofs supplied as its access control asks.
    func use<R>(_ body: (Keychain) throws -> R) throws -> R {
        try Operation.run(authentication, target: target) { keychain, _ in try body(keychain) }
    }
}

/// The type identifier of keys.
public func SecKeyGetTypeID() -> CFTypeID { 300 }
