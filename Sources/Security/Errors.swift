// The result codes of Security's functions, with Apple's names and values
// (SPEC §8's table and the codes Apple code commonly tests for), and the
// words SecCopyErrorMessageString gives them: the engine's for the codes it
// reports, locket's own for the rest.
import LocketCore

/// No error: MacTypes' `noErr`, which most keychain code compares statuses
/// with (`status == noErr`). An OSStatus, as Swift imports it on Apple's platforms.
public let noErr: OSStatus = 0
/// No error.
public let errSecSuccess: OSStatus = 0
/// The function or operation is not implemented.
public let errSecUnimplemented: OSStatus = -4
/// The disk is full.
public let errSecDiskFull: OSStatus = -34
/// Input/output error.
public let errSecIO: OSStatus = -36
/// The file is already open with write permission.
public let errSecOpWr: OSStatus = -49
/// Invalid parameter.
public let errSecParam: OSStatus = -50
/// Write permission error.
public let errSecWrPerm: OSStatus = -61
/// Failed to allocate memory.
public let errSecAllocate: OSStatus = -108
/// Cancelled.
public let errSecUserCanceled: OSStatus = -128
/// Bad parameter or invalid state for the operation.
public let errSecBadReq: OSStatus = -909
/// An internal component failed.
public let errSecInternalComponent: OSStatus = -2070
/// An unknown Core Foundation error.
public let errSecCoreFoundationUnknown: OSStatus = -4960
/// The access group is not in the caller's entitlements.
public let errSecMissingEntitlement: OSStatus = -34018
/// The API is restricted.
public let errSecRestrictedAPI: OSStatus = -34020
/// The operation is not available for this keychain.
public let errSecNotAvailable: OSStatus = -25291
/// The keychain is read only.
public let errSecReadOnly: OSStatus = -25292
/// The password is not correct.
public let errSecAuthFailed: OSStatus = -25293
/// The keychain does not exist.
public let errSecNoSuchKeychain: OSStatus = -25294
/// The file is not a valid keychain.
public let errSecInvalidKeychain: OSStatus = -25295
/// The keychain already exists.
public let errSecDuplicateKeychain: OSStatus = -25296
/// The callback is already registered.
public let errSecDuplicateCallback: OSStatus = -25297
/// The callback is not valid.
public let errSecInvalidCallback: OSStatus = -25298
/// The item already exists.
public let errSecDuplicateItem: OSStatus = -25299
/// The item could not be found.
public let errSecItemNotFound: OSStatus = -25300
/// The buffer is too small.
public let errSecBufferTooSmall: OSStatus = -25301
/// The data is too large.
public let errSecDataTooLarge: OSStatus = -25302
/// The attribute does not exist for this item class.
public let errSecNoSuchAttr: OSStatus = -25303
/// The item reference is not valid.
public let errSecInvalidItemRef: OSStatus = -25304
/// The search reference is not valid.
public let errSecInvalidSearchRef: OSStatus = -25305
/// The item class does not exist.
public let errSecNoSuchClass: OSStatus = -25306
/// There is no default keychain.
public let errSecNoDefaultKeychain: OSStatus = -25307
/// The keychain is locked for this item's protection class.
public let errSecInteractionNotAllowed: OSStatus = -25308
/// The attribute is read-only.
public let errSecReadOnlyAttr: OSStatus = -25309
/// The version is not supported.
public let errSecWrongSecVersion: OSStatus = -25310
/// The key size is not allowed.
public let errSecKeySizeNotAllowed: OSStatus = -25311
/// No storage module is available.
public let errSecNoStorageModule: OSStatus = -25312
/// No certificate module is available.
public let errSecNoCertificateModule: OSStatus = -25313
/// No policy module is available.
public let errSecNoPolicyModule: OSStatus = -25314
/// User interaction is required.
public let errSecInteractionRequired: OSStatus = -25315
/// The contents of this item can't be retrieved.
public let errSecDataNotAvailable: OSStatus = -25316
/// The contents of this item can't be modified.
public let errSecDataNotModifiable: OSStatus = -25317
/// The certificate chain could not be built.
public let errSecCreateChainFailed: OSStatus = -25318
/// The access control list is not simple.
public let errSecACLNotSimple: OSStatus = -25240
/// The policy was not found.
public let errSecPolicyNotFound: OSStatus = -25241
/// The trust setting is not valid.
public let errSecInvalidTrustSetting: OSStatus = -25242
/// The item has no access control.
public let errSecNoAccessForItem: OSStatus = -25243
/// The owner can't be changed.
public let errSecInvalidOwnerEdit: OSStatus = -25244
/// No trust results are available.
public let errSecTrustNotAvailable: OSStatus = -25245
/// The import or export format is not supported.
public let errSecUnsupportedFormat: OSStatus = -25256
/// The format of the data to import is unknown.
public let errSecUnknownFormat: OSStatus = -25257
/// The key is sensitive and can't be exported.
public let errSecKeyIsSensitive: OSStatus = -25258
/// The data holds more than one private key.
public let errSecMultiplePrivKeys: OSStatus = -25259
/// A passphrase is required to import or export.
public let errSecPassphraseRequired: OSStatus = -25260
/// The password reference is not valid.
public let errSecInvalidPasswordRef: OSStatus = -25261
/// The trust settings are not valid.
public let errSecInvalidTrustSettings: OSStatus = -25262
/// There are no trust settings.
public let errSecNoTrustSettings: OSStatus = -25263
/// The PKCS#12 file could not be verified (wrong password?).
public let errSecPkcs12VerifyFailure: OSStatus = -25264
/// The certificate was not signed by its issuer.
public let errSecNotSigner: OSStatus = -26267
/// A sealed value could not be opened.
public let errSecDecode: OSStatus = -26275
/// A conversion failed.
public let errSecConversionError: OSStatus = -67594
/// The data is not valid.
public let errSecInvalidData: OSStatus = -67673
/// A value is not valid.
public let errSecInvalidValue: OSStatus = -67694
/// The record is not valid.
public let errSecInvalidRecord: OSStatus = -67701
/// The key is not valid.
public let errSecInvalidKeyRef: OSStatus = -67712
/// The key size is not supported.
public let errSecUnsupportedKeySize: OSStatus = -67735
/// The algorithm is not valid for this key.
public let errSecInvalidAlgorithm: OSStatus = -67747
/// The signature does not verify.
public let errSecVerifyFailed: OSStatus = -67808
/// The certificate is not trusted.
public let errSecNotTrusted: OSStatus = -67843
/// A required value is missing.
public let errSecMissingValue: OSStatus = -67871

/// The message of each code above that the engine does not word itself.
let errorMessages: [OSStatus: String] = [
    0: "no error",
    -4: "the function or operation is not implemented",
    -34: "the disk is full",
    -49: "the file is already open with write permission",
    -61: "write permission error",
    -909: "bad parameter or invalid state for the operation",
    -2070: "an internal component failed",
    -4960: "an unknown Core Foundation error",
    -34020: "the API is restricted",
    -25292: "the keychain is read only",
    -25297: "the callback is already registered",
    -25298: "the callback is not valid",
    -25301: "the buffer is too small",
    -25304: "the item reference is not valid",
    -25305: "the search reference is not valid",
    -25307: "there is no default keychain",
    -25310: "the version is not supported",
    -25311: "the key size is not allowed",
    -25312: "no storage module is available",
    -25313: "no certificate module is available",
    -25314: "no policy module is available",
    -25315: "user interaction is required",
    -25317: "the contents of this item can't be modified",
    -25318: "the certificate chain could not be built",
    -25240: "the access control list is not simple",
    -25241: "the policy was not found",
    -25242: "the trust setting is not valid",
    -25243: "the item has no access control",
    -25244: "the owner can't be changed",
    -25245: "no trust results are available",
    -25256: "the import or export format is not supported",
    -25257: "the format of the data to import is unknown",
    -25258: "the key is sensitive and can't be exported",
    -25259: "the data holds more than one private key",
    -25260: "a passphrase is required to import or export",
    -25261: "the password reference is not valid",
    -25262: "the trust settings are not valid",
    -25263: "there are no trust settings",
    -25264: "the PKCS#12 file could not be verified (wrong password?)",
    -26267: "the certificate was not signed by its issuer",
    -67594: "a conversion failed",
    -67673: "the data is not valid",
    -67694: "a value is not valid",
    -67701: "the record is not valid",
    -67712: "the key is not valid",
    -67735: "the key size is not supported",
    -67747: "the algorithm is not valid for this key",
    -67843: "the certificate is not trusted",
    -67871: "a required value is missing",
]

/// A sentence saying what `status` means ("the item could not be found"),
/// or nil for a code this module does not know. `reserved` must be nil.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    if let code = KeychainError.Code(rawValue: status) { return code.summary as NSString }
    return errorMessages[status].map { $0 as NSString }
}
