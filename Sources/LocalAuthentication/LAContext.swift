// The part of Apple's LocalAuthentication that keychain code passes to the
// Security module (kSecUseAuthenticationContext): an LAContext carrying an
// application password credential, whether the keychain may ask the user,
// and why it asks; and whether this machine can prove presence at all
// (canEvaluatePolicy). There is no biometry here: the keychain's own proofs are
// the keychain password at the terminal (user presence) and the application
// password (docs/SECURITY-MODULE.md).
import Foundation

/// The kinds of credential an `LAContext` can carry.
public enum LACredentialType: Int, Sendable {
    /// An item's application password (kSecAccessControlApplicationPassword),
    /// given by the app (from its server, or asked for in its own way)
    /// instead of being asked for at the terminal.
    case applicationPassword = 0
}

/// An authentication context for keychain operations.
open class LAContext: NSObject, @unchecked Sendable {
    private let lock = NSLock()
    private var credentials: [LACredentialType: Data] = [:]
    private var _interactionNotAllowed = false
    private var _localizedReason = ""
    private var invalidated = false

    public override init() { super.init() }

    /// Sets (or with nil, removes) a credential; true when it was set as asked.
    @discardableResult
    open func setCredential(_ credential: Data?, type: LACredentialType) -> Bool {
        lock.withLock { credentials[type] = credential }
        return true
    }

    /// Whether a credential of `type` is set.
    open func isCredentialSet(_ type: LACredentialType) -> Bool {
        lock.withLock { credentials[type] != nil }
    }

    /// True: operations given this context never ask the user; an item whose
    /// access control needs a proof fails with errSecInteractionNotAllowed.
    open var interactionNotAllowed: Bool {
        get { lock.withLock { _interactionNotAllowed } }
        set { lock.withLock { _interactionNotAllowed = newValue } }
    }

    /// Why the keychain password is asked for, shown above the prompt
    /// (kSecUseOperationPrompt wins when both are given).
    open var localizedReason: String {
        get { lock.withLock { _localizedReason } }
        set { lock.withLock { _localizedReason = newValue } }
    }

    /// Forgets every credential; the context asks nothing any more.
    open func invalidate() {
        lock.withLock {
            credentials.removeAll()
            _interactionNotAllowed = true
            invalidated = true
        }
    }

    /// Whether `policy` can be evaluated on this machine now, as Apple's
    /// answers it: `.deviceOwnerAuthentication` when the keychain password
    /// can be typed at the controlling terminal (a keychain with a password,
    /// a terminal, and a context that may ask); biometry, a watch or a
    /// companion never (`LAError.biometryNotAvailable`,
    /// `.companionNotAvailable`). When it can't, `error` (when given) is set
    /// to an error of `LAErrorDomain` with the reason.
    open func canEvaluatePolicy(_ policy: LAPolicy, error: UnsafeMutablePointer<NSError?>?) -> Bool {
        let failure: (LAError.Code, String)?
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics, .deviceOwnerAuthenticationWithBiometricsOrCompanion:
            failure = (.biometryNotAvailable, "there is no biometry here: presence is the keychain password (deviceOwnerAuthentication)")
        case .deviceOwnerAuthenticationWithCompanion, .deviceOwnerAuthenticationWithWristDetection:
            failure = (.companionNotAvailable, "there is no watch or companion device here")
        case .deviceOwnerAuthentication:
            if lock.withLock({ invalidated }) {
                failure = (.invalidContext, "the context was invalidated")
            } else if interactionNotAllowed {
                failure = (.notInteractive, "the context does not allow interaction")
            } else {
                failure = Presence.unavailable()
            }
        }
        guard let (code, reason) = failure else {
            error?.pointee = nil
            return true
        }
        error?.pointee = NSError(domain: LAErrorDomain, code: code.rawValue, userInfo: [NSLocalizedDescriptionKey: reason])
        return false
    }

    /// The application password credential, for the Security module.
    package var applicationPassword: Data? { lock.withLock { credentials[.applicationPassword] } }
}
