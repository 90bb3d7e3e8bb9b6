/// The one error type of the engine: an OSStatus from Apple's Security
/// framework, plus context that never contains a secret.
public struct KeychainError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The failures locket reports, each with the OSStatus Apple uses for it.
    public enum Code: Int32, Sendable, CaseIterable {
        /// The item could not be found (errSecItemNotFound).
        case itemNotFound = -25300
        /// An item with the same primary key already exists (errSecDuplicateItem).
        case duplicateItem = -25299
        /// The keys for the item's protection class are not available now (errSecInteractionNotAllowed).
        case interactionNotAllowed = -25308
        /// Wrong password (errSecAuthFailed).
        case authFailed = -25293
        /// An attribute that the item class does not have (errSecNoSuchAttr).
        case noSuchAttr = -25303
        /// An unknown item class (errSecNoSuchClass).
        case noSuchClass = -25306
        /// No keychain at the given path (errSecNoSuchKeychain).
        case noSuchKeychain = -25294
        /// A keychain already exists at the given path (errSecDuplicateKeychain).
        case duplicateKeychain = -25296
        /// The keychain file is not a keychain (errSecInvalidKeychain).
        case invalidKeychain = -25295
        /// The operation needs something the keychain does not have (errSecNotAvailable).
        case notAvailable = -25291
        /// The caller's entitlements do not allow the access group (errSecMissingEntitlement).
        case missingEntitlement = -34018
        /// A sealed value or key failed to open: tampering or corruption (errSecDecode).
        case decode = -26275
        /// A secret or attribute value larger than locket accepts (errSecDataTooLarge).
        case dataTooLarge = -25302
        /// An invalid parameter (errSecParam).
        case param = -50
        /// The user cancelled (errSecUserCanceled).
        case userCanceled = -128
        /// A file or database operation failed (errSecIO).
        case io = -36
        /// The item's value can't be retrieved: a key added non-extractable (errSecDataNotAvailable).
        case dataNotAvailable = -25316
        /// The attribute is derived from the item's value and can't be changed (errSecReadOnlyAttr).
        case readOnlyAttr = -25309
        /// A signature that does not verify (errSecVerifyFailed), as SecKeyVerifySignature reports it.
        case verifyFailed = -67808
        /// Memory could not be allocated: guarded memory for keys and secrets past the process's limits (errSecAllocate).
        case allocate = -108

        /// Apple's constant name, as `security(1)` prints it.
        public var name: String {
            switch self {
            case .itemNotFound: "errSecItemNotFound"
            case .duplicateItem: "errSecDuplicateItem"
            case .interactionNotAllowed: "errSecInteractionNotAllowed"
            case .authFailed: "errSecAuthFailed"
            case .noSuchAttr: "errSecNoSuchAttr"
            case .noSuchClass: "errSecNoSuchClass"
            case .noSuchKeychain: "errSecNoSuchKeychain"
            case .duplicateKeychain: "errSecDuplicateKeychain"
            case .invalidKeychain: "errSecInvalidKeychain"
            case .notAvailable: "errSecNotAvailable"
            case .missingEntitlement: "errSecMissingEntitlement"
            case .decode: "errSecDecode"
            case .dataTooLarge: "errSecDataTooLarge"
            case .param: "errSecParam"
            case .userCanceled: "errSecUserCanceled"
            case .io: "errSecIO"
            case .dataNotAvailable: "errSecDataNotAvailable"
            case .readOnlyAttr: "errSecReadOnlyAttr"
            case .verifyFailed: "errSecVerifyFailed"
            case .allocate: "errSecAllocate"
            }
        }

        /// The generic message, used when no more specific one is given.
        public var summary: String {
            switch self {
            case .itemNotFound: "the item could not be found"
            case .duplicateItem: "the item already exists"
            case .interactionNotAllowed: "the keychain is locked for this item's protection class"
            case .authFailed: "the password is not correct"
            case .noSuchAttr: "the attribute does not exist for this item class"
            case .noSuchClass: "the item class does not exist"
            case .noSuchKeychain: "the keychain does not exist"
            case .duplicateKeychain: "the keychain already exists"
            case .invalidKeychain: "the file is not a valid keychain"
            case .notAvailable: "the operation is not available for this keychain"
            case .missingEntitlement: "the access group is not in the caller's entitlements"
            case .decode: "a sealed value could not be opened"
            case .dataTooLarge: "the data is too large"
            case .param: "invalid parameter"
            case .userCanceled: "cancelled"
            case .io: "input/output error"
            case .dataNotAvailable: "the contents of this item can't be retrieved"
            case .readOnlyAttr: "the attribute is read-only"
            case .verifyFailed: "the signature does not verify"
            case .allocate: "failed to allocate memory"
            }
        }
    }

    /// Why, where a caller may act on it. The engine sets a reason and never
    /// words advice; the command line turns reasons into hints.
    public enum Reason: Sendable, Equatable {
        /// No keychain at the path (errSecNoSuchKeychain): one can be created there.
        case noKeychain(path: String)
        /// Items of this class need an unlock (nil: the blind-index key
        /// itself, when the keychain is locked and the device secret is missing).
        case locked(ProtectionClass?)
        /// The session was unlocked by an app for these groups only; an owner
        /// unlock opens every group.
        case scopedTo([String])
        /// A ThisDeviceOnly item bound to another device: it never opens here.
        case boundToOtherDevice
        /// An empty password was given where a password is made (init, passwd).
        case emptyPassword
        /// A protection class name locket doesn't know.
        case unknownProtectionClass
        /// The session is damaged; forgetting it (lock --all) and unlocking again repairs it.
        case sessionDamaged
        /// The kernel keyring refused the session; the directory backend is the way round.
        case keyringRefused(directory: String)
        /// A key file encrypted with a legacy algorithm libcrypto no longer
        /// reads; converting it (PKCS#12 or PKCS#8) makes it readable.
        case legacyEncryption(pkcs12: Bool)
        /// The keychain file is of a newer format than this release knows
        /// (SPEC §7); it was left as it is.
        case newerFormat(Int64)
        /// A writing command found a format-1 keychain whose blind-index key
        /// is not available (locked on another device, or before its first
        /// unlock here): the upgrade to format 2 needs it, so nothing was written.
        case upgradeNeedsUnlock
        /// The keychain is an older copy than this device has seen (SPEC §7
        /// "Rollback"); accepting it is a deliberate act.
        case rolledBack
        /// Another process replaced the keychain's keys (a rotation) while this
        /// one ran; nothing was changed, and running again uses the new keys.
        case keysReplaced
        /// A ThisDeviceOnly protection class asked of a remote keychain (SPEC §17).
        case thisDeviceOnlyRemote
        /// This machine has no device in the remote keychain (`keychain enroll`).
        case notEnrolled
        /// This device holds no key for the access group (`keychain approve` on an admin device).
        case notApproved(group: String)
        /// The server named is a read-only standby, not the primary (docs/REMOTE.md "Replication and failover").
        case remoteStandby
        /// A remote keychain's server shows an older history than this device
        /// saw, or another one (a failover that lost writes, a restore of the
        /// database): `keychain recover` says what was lost and re-pins the device.
        case remoteRolledBack
        /// A device this device saw revoked is approved in the membership the
        /// server shows (the revocation was lost): it must be revoked again.
        case revocationLost(device: Int64)
        /// This device's record of what it verified of a remote keychain does
        /// not read: `keychain recover` starts it again from the server's history.
        case remoteTrustDamaged
        /// An item with access control needs a proof first (SPEC §14): the
        /// caller asks for it and tries again.
        case proofNeeded(AccessRequest)
        /// A password-current-set item after a password change: permanently unreadable; delete it.
        case accessInvalidated
        /// A file `secret-service enable` would write is already there and is
        /// another program's (SPEC §20): kept unless the caller insists.
        case notLocketsFile(path: String)
        /// No TPM to hold a Secure Enclave key (SPEC §21): none found, none
        /// answering, or its helper `locket-tpm` not installed.
        case noTPM
        /// The TPM is in dictionary-attack lockout after wrong application
        /// passwords; it forgets one failure every `seconds`.
        case tpmLockout(seconds: Int)
    }

    /// What went wrong.
    public let code: Code
    /// A more specific message than the code's summary; never contains a secret.
    public let detail: String?
    /// A suggestion for the user, printed as `locket: hint: ...`; set by the
    /// command line only (the engine gives a `reason`).
    public let hint: String?
    /// The typed reason, for the errors a caller may act on.
    public let reason: Reason?

    public init(_ code: Code, _ detail: String? = nil, hint: String? = nil, reason: Reason? = nil) {
        self.code = code
        self.detail = detail
        self.hint = hint
        self.reason = reason
    }

    /// The OSStatus value.
    public var status: Int32 { code.rawValue }

    /// The message with its status named: `the item could not be found (errSecItemNotFound -25300)`.
    public var description: String { "\(message) (\(code.name) \(code.rawValue))" }

    /// The message without the status.
    public var message: String { detail ?? code.summary }

    /// The same error with another message (context added by a caller), code and reason kept.
    public func with(detail: String) -> KeychainError {
        KeychainError(code, detail, hint: hint, reason: reason)
    }

    /// The same error with a hint (the command line words it).
    public func with(hint: String?) -> KeychainError {
        KeychainError(code, detail, hint: hint, reason: reason)
    }
}
