import CSodium
import LocketSupport

/// The keys behind user-presence and password-current-set (SPEC §14).
///
/// Each is an X25519 key pair. The secret key is a keybag row wrapped by the
/// password's KEK only: never by the device key, never in the session, so
/// the unlocked session alone can't open it. The public key is a meta row
/// (covered by the header MAC), so `add` seals to it without a password.
/// `upk` (user-presence) is re-wrapped at a password change; `pcs`
/// (password-current-set) is replaced, which leaves its items sealed to a
/// key that no longer exists.
enum PresenceKeys {
    static let presenceName = "upk"
    static let currentSetName = "pcs"
    static let names = [presenceName, currentSetName]
    /// The when-unlocked session's random value that presence reuse windows are masked under.
    static let reuseNonceName = "prn"

    /// The meta row holding the public key of `name`.
    static func publicKeyRow(_ name: String) -> MetaKey {
        name == presenceName ? .presencePublicKey : .currentSetPublicKey
    }

    /// A fresh key pair: (public, secret).
    static func generate() throws -> ([UInt8], SecureBytes) {
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        let secretKey = try SecureBytes(count: Int(crypto_box_SECRETKEYBYTES))
        secretKey.withUnsafeMutableBytes { _ = crypto_box_keypair(&publicKey, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        return (publicKey, secretKey)
    }

    /// Opens an item secret sealed to this keychain's presence key;
    /// errSecDecode when it was sealed to another key or altered.
    static func open(_ sealed: [UInt8], publicKey: [UInt8], secretKey: SecureBytes) throws -> SecureBytes {
        guard sealed.count > SealedBox.sealBytes else { throw KeychainError(.decode, "an item's access-control record is truncated") }
        guard let out = try SealedBox.open(sealed, publicKey: publicKey, secretKey: secretKey) else {
            throw KeychainError(.decode, "an item's access-control record does not open with this keychain's key")
        }
        return out
    }
}

/// An item's access control as stored, inside its sealed attribute record
/// (tag 0xf2 of ItemRecord): the flags, the item's random secret (sealed to
/// a presence public key, or as is when only an application password guards
/// it), and the Argon2id parameters of the application password.
///
/// `version (1) | flags (1) | public key (32, with presence) | secret
/// (80 sealed, or 32) | salt (16), ops (8), mem (8) (with an application
/// password) | the key's public half (the rest, with flag 8)`
///
/// Flag 8 (issue 31): a private key's SubjectPublicKeyInfo, kept here, outside
/// the proof, so that `key public` gives it freely, as Apple does; a release
/// before it reads such a record as malformed. Keys added before it have
/// none, and their public key still needs the proof.
///
/// Flag 16 (SPEC §21): the application password is a Secure Enclave key's
/// TPM authorization value and nothing else: no Argon2id parameters, no
/// application key in the data key. The TPM checks it and counts wrong
/// ones toward its lockout; stretching it here would only slow the right
/// one. A release before it reads such a record as malformed (it could not
/// use the key anyway).
struct ItemAccess: Sendable {
    private static let version: UInt8 = 1
    var control: AccessControl
    /// The presence public key the secret is sealed to.
    var publicKey: [UInt8]?
    /// The item secret, sealed to `publicKey`, or as is.
    var secret: [UInt8]
    var applicationKDF: KDFParameters?
    /// A private key's public half (SubjectPublicKeyInfo DER), readable without the proof.
    var publicHalf: [UInt8]?
    /// The application password is the TPM's to check (a Secure Enclave key's authorization value).
    var tpmAuthorization = false

    private static let bits: [(AccessControl.Flag, UInt8)] = [(.userPresence, 1), (.passwordCurrentSet, 2), (.applicationPassword, 4)]
    private static let publicHalfBit: UInt8 = 8
    private static let tpmAuthorizationBit: UInt8 = 16

    /// Whether reading or using the item needs the application password (checked here, or by the TPM).
    var needsApplicationPassword: Bool { control.flags.contains(.applicationPassword) }

    var encoded: [UInt8] {
        var flags = ItemAccess.bits.reduce(0) { control.flags.contains($1.0) ? $0 | $1.1 : $0 }
        if publicHalf != nil { flags |= ItemAccess.publicHalfBit }
        if tpmAuthorization { flags |= ItemAccess.tpmAuthorizationBit }
        var out: [UInt8] = [ItemAccess.version, flags]
        if let publicKey { out += publicKey }
        out += secret
        if let applicationKDF { out += applicationKDF.encoded }
        if let publicHalf { out += publicHalf }
        return out
    }

    /// Decodes a record for an item of `protection`; errSecDecode when malformed.
    init(encoded b: [UInt8], protection: ProtectionClass) throws {
        let bad = KeychainError(.decode, "an item's access-control record is malformed")
        guard b.count >= 2, b[0] == ItemAccess.version, b[1] & ~31 == 0 else { throw bad }
        let flags = Set(ItemAccess.bits.filter { b[1] & $0.1 != 0 }.map(\.0))
        control = AccessControl(protection: protection, flags: flags)
        tpmAuthorization = b[1] & ItemAccess.tpmAuthorizationBit != 0
        // The bit means the application password is the TPM's: without the flag it means nothing.
        guard !tpmAuthorization || flags.contains(.applicationPassword) else { throw bad }
        var i = 2
        if control.needsPresence {
            guard b.count >= i + 32 + 80 else { throw bad }
            publicKey = Array(b[i..<i + 32]); i += 32
            secret = Array(b[i..<i + 80]); i += 80
        } else {
            guard b.count >= i + 32 else { throw bad }
            secret = Array(b[i..<i + 32]); i += 32
        }
        if flags.contains(.applicationPassword) && !tpmAuthorization {
            guard b.count >= i + 32, let kdf = KDFParameters(encoded: Array(b[i..<i + 32])) else { throw bad }
            applicationKDF = kdf
            i += 32
        }
        if b[1] & ItemAccess.publicHalfBit != 0 {
            guard i < b.count else { throw bad }
            publicHalf = Array(b[i...])
        } else if i != b.count {
            throw bad
        }
    }

    /// A fresh record for a new secret: a random item secret, sealed to
    /// `publicKey` when the control needs presence. Returns it with the secret.
    /// With `tpmAuthorization` the application password is left to the TPM (no Argon2id parameters).
    static func make(_ control: AccessControl, publicKey: [UInt8]?, publicHalf: [UInt8]? = nil,
                     tpmAuthorization: Bool = false) throws -> (ItemAccess, SecureBytes) {
        let itemSecret = try SecureBytes(copying: Sodium.random(32))
        let byTPM = tpmAuthorization && control.flags.contains(.applicationPassword)
        var access = ItemAccess(control: control, publicKey: control.needsPresence ? publicKey : nil,
                                secret: control.needsPresence ? try SealedBox.seal(itemSecret, to: publicKey ?? []) : itemSecret.bytes,
                                applicationKDF: control.flags.contains(.applicationPassword) && !byTPM ? KDFParameters(cost: .interactive) : nil,
                                publicHalf: publicHalf)
        access.tpmAuthorization = byTPM
        return (access, itemSecret)
    }

    private init(control: AccessControl, publicKey: [UInt8]?, secret: [UInt8], applicationKDF: KDFParameters?, publicHalf: [UInt8]?) {
        self.control = control
        self.publicKey = publicKey
        self.secret = secret
        self.applicationKDF = applicationKDF
        self.publicHalf = publicHalf
    }

    /// The key that seals the item's data: from the item secret, bound to the
    /// row (class, reference, protection class) and mixed with the Argon2id
    /// of the application password. It does not depend on the class key
    /// (the item secret is only reachable through the attribute record,
    /// sealed under it), so a rotation re-seals the attributes and keeps the data.
    static func dataKey(itemSecret: SecureBytes, _ row: Sealing.RowIdentity, applicationKey: SecureBytes?) throws -> SecureBytes {
        var context = KeyDerivation.Context("locket.access.data.v1")
        context.append(row.itemClass.rawValue)
        context.append(row.ref)
        context.append(row.accessible.rawValue)
        // Straight from guarded memory, and wiped after: the context holds the application key.
        if let applicationKey { applicationKey.withUnsafeBytes { context.append($0) } } else { context.append([UInt8]()) }
        defer { context.wipe() }
        return try KeyDerivation.derive(itemSecret, context)
    }
}
