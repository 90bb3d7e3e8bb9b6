// Apple's LocalAuthentication policies and errors, with Apple's names and
// values, for the keychain code that asks which proofs this machine can give
// (`LAContext.canEvaluatePolicy`). Here presence is the keychain password
// typed at the controlling terminal; there is no biometry, watch or
// companion (docs/SECURITY-MODULE.md).
import Foundation

/// What an authentication must prove.
public enum LAPolicy: Int, Sendable {
    /// Biometry only: never available here.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// The device owner by any means; here the keychain password at the terminal.
    case deviceOwnerAuthentication = 2
    /// A paired companion device (formerly a watch): never available here.
    case deviceOwnerAuthenticationWithCompanion = 3
    /// Biometry or a companion device: never available here.
    case deviceOwnerAuthenticationWithBiometricsOrCompanion = 4
    /// A worn watch: never available here.
    case deviceOwnerAuthenticationWithWristDetection = 5

    /// The former name of `deviceOwnerAuthenticationWithCompanion`.
    public static var deviceOwnerAuthenticationWithWatch: LAPolicy { .deviceOwnerAuthenticationWithCompanion }
    /// The former name of `deviceOwnerAuthenticationWithBiometricsOrCompanion`.
    public static var deviceOwnerAuthenticationWithBiometricsOrWatch: LAPolicy { .deviceOwnerAuthenticationWithBiometricsOrCompanion }
}

/// The domain of LocalAuthentication's errors.
public let LAErrorDomain = "com.apple.LocalAuthentication"

/// A LocalAuthentication error, as Apple's Swift overlay has it: a `Code`,
/// and the codes as static members, so `catch LAError.biometryNotAvailable`
/// and `LAError(.userCancel)` read as on Apple's platforms. Without
/// Objective-C bridging, an `NSError` of this domain does not cast to
/// `LAError` (`as?`): read `LAError.Code(rawValue: error.code)` instead.
public struct LAError: _BridgedStoredNSError, Hashable, @unchecked Sendable {
    public let _nsError: NSError
    public init(_nsError error: NSError) { _nsError = error }
    public static var errorDomain: String { LAErrorDomain }
    public static var _nsErrorDomain: String { LAErrorDomain }

    /// The codes, with Apple's values.
    public enum Code: Int, _ErrorCodeProtocol, Sendable {
        public typealias _ErrorType = LAError
        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        case biometryNotAvailable = -6
        case biometryNotEnrolled = -7
        case biometryLockout = -8
        case appCancel = -9
        case invalidContext = -10
        case companionNotAvailable = -11
        case biometryNotPaired = -12
        case biometryDisconnected = -13
        case invalidDimensions = -14
        case notInteractive = -1004

        /// The former names.
        public static var touchIDNotAvailable: Code { .biometryNotAvailable }
        public static var touchIDNotEnrolled: Code { .biometryNotEnrolled }
        public static var touchIDLockout: Code { .biometryLockout }
        public static var watchNotAvailable: Code { .companionNotAvailable }
    }

    public static var authenticationFailed: Code { .authenticationFailed }
    public static var userCancel: Code { .userCancel }
    public static var userFallback: Code { .userFallback }
    public static var systemCancel: Code { .systemCancel }
    public static var passcodeNotSet: Code { .passcodeNotSet }
    public static var biometryNotAvailable: Code { .biometryNotAvailable }
    public static var biometryNotEnrolled: Code { .biometryNotEnrolled }
    public static var biometryLockout: Code { .biometryLockout }
    public static var appCancel: Code { .appCancel }
    public static var invalidContext: Code { .invalidContext }
    public static var companionNotAvailable: Code { .companionNotAvailable }
    public static var biometryNotPaired: Code { .biometryNotPaired }
    public static var biometryDisconnected: Code { .biometryDisconnected }
    public static var invalidDimensions: Code { .invalidDimensions }
    public static var notInteractive: Code { .notInteractive }
    public static var touchIDNotAvailable: Code { .biometryNotAvailable }
    public static var touchIDNotEnrolled: Code { .biometryNotEnrolled }
    public static var touchIDLockout: Code { .biometryLockout }
    public static var watchNotAvailable: Code { .companionNotAvailable }
}
