// Core Foundation's names, as Apple's keychain code spells them, over the
// Foundation types they are toll-free bridged to on Apple's platforms. With
// these, `query as CFDictionary`, `kSecClass as String`, `var item:
// CFTypeRef?` with `&item`, `item as? Data`, `as! [[String: Any]]` and
// `kCFBooleanTrue` compile here unchanged (docs/SECURITY-MODULE.md).
@_exported import Foundation

/// Any Core Foundation object (`AnyObject`: every result of the keychain is a class instance).
public typealias CFTypeRef = AnyObject
/// An immutable string.
public typealias CFString = NSString
/// A mutable string.
public typealias CFMutableString = NSMutableString
/// An immutable dictionary: the queries and results of the SecItem functions.
public typealias CFDictionary = NSDictionary
/// A mutable dictionary.
public typealias CFMutableDictionary = NSMutableDictionary
/// An immutable array (kSecMatchLimitAll results, SecPKCS12Import's items).
public typealias CFArray = NSArray
/// A mutable array.
public typealias CFMutableArray = NSMutableArray
/// Immutable bytes (secrets, keys, signatures, certificates).
public typealias CFData = NSData
/// Mutable bytes.
public typealias CFMutableData = NSMutableData
/// A number (ports, key sizes, match limits).
public typealias CFNumber = NSNumber
/// A boolean: `kCFBooleanTrue` and `kCFBooleanFalse`.
public typealias CFBoolean = NSNumber
/// A point in time (creation and modification dates).
public typealias CFDate = NSDate
/// An error: the out-parameter of the SecKey functions (`Unmanaged<CFError>`),
/// in the domain `NSOSStatusErrorDomain` with the OSStatus as its code.
public typealias CFError = NSError
/// A signed index or count.
public typealias CFIndex = Int
/// Option flags (SecAccessControlCreateFlags).
public typealias CFOptionFlags = UInt
/// A type's identifier (`CFGetTypeID`, `SecKeyGetTypeID`).
public typealias CFTypeID = UInt
/// A result code: `errSecSuccess` (0) or one of the `errSec` codes.
public typealias OSStatus = Int32

/// An allocator. There is only the default one; every function that takes
/// an allocator accepts nil or `kCFAllocatorDefault`.
public final class CFAllocator: @unchecked Sendable {
    init() {}
}

/// The default allocator (nil, as Apple's constant is used: "the default").
public let kCFAllocatorDefault: CFAllocator! = nil

/// The boolean true, as `kSecReturnData: kCFBooleanTrue` passes it.
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)
/// The boolean false.
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)

/// The type identifier of `cf`: one of `SecKeyGetTypeID()`,
/// `SecCertificateGetTypeID()`, `SecIdentityGetTypeID()`,
/// `SecAccessControlGetTypeID()`, `CFStringGetTypeID()`, ... (0 for nil or
/// an object of no type listed here).
public func CFGetTypeID(_ cf: CFTypeRef?) -> CFTypeID {
    switch cf {
    case is SecKey: SecKeyGetTypeID()
    case is SecCertificate: SecCertificateGetTypeID()
    case is SecIdentity: SecIdentityGetTypeID()
    case is SecAccessControl: SecAccessControlGetTypeID()
    case is NSString: CFStringGetTypeID()
    case is NSData: CFDataGetTypeID()
    case is NSDictionary: CFDictionaryGetTypeID()
    case is NSArray: CFArrayGetTypeID()
    case let number as NSNumber: number === kCFBooleanTrue || number === kCFBooleanFalse ? CFBooleanGetTypeID() : CFNumberGetTypeID()
    case is NSDate: CFDateGetTypeID()
    case is NSError: CFErrorGetTypeID()
    default: 0
    }
}

/// An error's code (an OSStatus, for the keychain's).
public func CFErrorGetCode(_ err: CFError) -> CFIndex { err.code }

/// An error's domain (`NSOSStatusErrorDomain` for the keychain's).
public func CFErrorGetDomain(_ err: CFError) -> CFString { err.domain as NSString }

/// An error's description.
public func CFErrorCopyDescription(_ err: CFError) -> CFString { err.localizedDescription as NSString }

/// An error's user info (for the keychain's, `NSLocalizedDescriptionKey`
/// with the engine's message), so that `NSError(domain:code:userInfo:)`
/// can be built back from a CFError as Apple code does.
public func CFErrorCopyUserInfo(_ err: CFError) -> CFDictionary { err.userInfo as NSDictionary }

/// The type identifier of strings.
public func CFStringGetTypeID() -> CFTypeID { 7 }
/// The type identifier of data.
public func CFDataGetTypeID() -> CFTypeID { 20 }
/// The type identifier of dictionaries.
public func CFDictionaryGetTypeID() -> CFTypeID { 18 }
/// The type identifier of arrays.
public func CFArrayGetTypeID() -> CFTypeID { 19 }
/// The type identifier of numbers.
public func CFNumberGetTypeID() -> CFTypeID { 22 }
/// The type identifier of booleans.
public func CFBooleanGetTypeID() -> CFTypeID { 21 }
/// The type identifier of dates.
public func CFDateGetTypeID() -> CFTypeID { 42 }
/// The type identifier of errors.
public func CFErrorGetTypeID() -> CFTypeID { 29 }

/// Apple's `NSError()` (NSObject's initializer, which Apple code uses for a
/// placeholder error): an error of the empty domain with code 0.
/// swift-corelibs-foundation's NSError has no such initializer, and an
/// extension can't add one, so where Security is imported this function
/// answers the call; `NSError(domain:code:userInfo:)`, `is NSError` and the
/// type itself are Foundation's as ever.
public func NSError() -> Foundation.NSError { Foundation.NSError(domain: "", code: 0, userInfo: nil) }
