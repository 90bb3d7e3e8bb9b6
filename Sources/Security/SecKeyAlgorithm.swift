import LocketCore

// Apple's key algorithms (SecKeyAlgorithm), with Apple's names and string
// values. Those SPEC §13 implements map to the engine's KeyAlgorithm; the
// rest are known by name and refused (errSecParam, and
// SecKeyIsAlgorithmSupported says false).

/// A signature, encryption or key-exchange algorithm, named by its string.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, @unchecked Sendable {
    public let rawValue: CFString
    public init(rawValue: CFString) { self.rawValue = rawValue }
    public init(_ rawValue: CFString) { self.rawValue = rawValue }

    /// The engine's algorithm, nil for one locket does not implement.
    var locket: KeyAlgorithm? { SecKeyAlgorithm.implemented[rawValue as String] }

    /// kSecKeyAlgorithmRSASignatureRaw: `algid:sign:RSA:raw` (not implemented here).
    public static let rsaSignatureRaw = SecKeyAlgorithm(rawValue: "algid:sign:RSA:raw")
    /// kSecKeyAlgorithmRSASignatureDigestPKCS1v15Raw: `algid:sign:RSA:digest-PKCS1v15` (not implemented here).
    public static let rsaSignatureDigestPKCS1v15Raw = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15")
    /// kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA1: `algid:sign:RSA:digest-PKCS1v15:SHA1` (not implemented here).
    public static let rsaSignatureDigestPKCS1v15SHA1 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA1")
    /// kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA224: `algid:sign:RSA:digest-PKCS1v15:SHA224` (not implemented here).
    public static let rsaSignatureDigestPKCS1v15SHA224 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA224")
    /// kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA256: `algid:sign:RSA:digest-PKCS1v15:SHA256` (not implemented here).
    public static let rsaSignatureDigestPKCS1v15SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA256")
    /// kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA384: `algid:sign:RSA:digest-PKCS1v15:SHA384` (not implemented here).
    public static let rsaSignatureDigestPKCS1v15SHA384 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA384")
    /// kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA512: `algid:sign:RSA:digest-PKCS1v15:SHA512` (not implemented here).
    public static let rsaSignatureDigestPKCS1v15SHA512 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PKCS1v15:SHA512")
    /// kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA1: `algid:sign:RSA:message-PKCS1v15:SHA1` (not implemented here).
    public static let rsaSignatureMessagePKCS1v15SHA1 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA1")
    /// kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA224: `algid:sign:RSA:message-PKCS1v15:SHA224` (not implemented here).
    public static let rsaSignatureMessagePKCS1v15SHA224 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA224")
    /// kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA256: `algid:sign:RSA:message-PKCS1v15:SHA256` (implemented).
    public static let rsaSignatureMessagePKCS1v15SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA256")
    /// kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA384: `algid:sign:RSA:message-PKCS1v15:SHA384` (implemented).
    public static let rsaSignatureMessagePKCS1v15SHA384 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA384")
    /// kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA512: `algid:sign:RSA:message-PKCS1v15:SHA512` (implemented).
    public static let rsaSignatureMessagePKCS1v15SHA512 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA512")
    /// kSecKeyAlgorithmRSASignatureDigestPSSSHA1: `algid:sign:RSA:digest-PSS:SHA1:SHA1:20` (not implemented here).
    public static let rsaSignatureDigestPSSSHA1 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA1:SHA1:20")
    /// kSecKeyAlgorithmRSASignatureDigestPSSSHA224: `algid:sign:RSA:digest-PSS:SHA224:SHA224:24` (not implemented here).
    public static let rsaSignatureDigestPSSSHA224 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA224:SHA224:24")
    /// kSecKeyAlgorithmRSASignatureDigestPSSSHA256: `algid:sign:RSA:digest-PSS:SHA256:SHA256:32` (not implemented here).
    public static let rsaSignatureDigestPSSSHA256 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA256:SHA256:32")
    /// kSecKeyAlgorithmRSASignatureDigestPSSSHA384: `algid:sign:RSA:digest-PSS:SHA384:SHA384:48` (not implemented here).
    public static let rsaSignatureDigestPSSSHA384 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA384:SHA384:48")
    /// kSecKeyAlgorithmRSASignatureDigestPSSSHA512: `algid:sign:RSA:digest-PSS:SHA512:SHA512:64` (not implemented here).
    public static let rsaSignatureDigestPSSSHA512 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:digest-PSS:SHA512:SHA512:64")
    /// kSecKeyAlgorithmRSASignatureMessagePSSSHA1: `algid:sign:RSA:message-PSS:SHA1:SHA1:20` (not implemented here).
    public static let rsaSignatureMessagePSSSHA1 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA1:SHA1:20")
    /// kSecKeyAlgorithmRSASignatureMessagePSSSHA224: `algid:sign:RSA:message-PSS:SHA224:SHA224:24` (not implemented here).
    public static let rsaSignatureMessagePSSSHA224 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA224:SHA224:24")
    /// kSecKeyAlgorithmRSASignatureMessagePSSSHA256: `algid:sign:RSA:message-PSS:SHA256:SHA256:32` (implemented).
    public static let rsaSignatureMessagePSSSHA256 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA256:SHA256:32")
    /// kSecKeyAlgorithmRSASignatureMessagePSSSHA384: `algid:sign:RSA:message-PSS:SHA384:SHA384:48` (implemented).
    public static let rsaSignatureMessagePSSSHA384 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA384:SHA384:48")
    /// kSecKeyAlgorithmRSASignatureMessagePSSSHA512: `algid:sign:RSA:message-PSS:SHA512:SHA512:64` (implemented).
    public static let rsaSignatureMessagePSSSHA512 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA512:SHA512:64")
    /// kSecKeyAlgorithmECDSASignatureDigestX962: `algid:sign:ECDSA:digest-X962` (not implemented here).
    public static let ecdsaSignatureDigestX962 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-X962")
    /// kSecKeyAlgorithmECDSASignatureDigestX962SHA1: `algid:sign:ECDSA:digest-X962:SHA1` (not implemented here).
    public static let ecdsaSignatureDigestX962SHA1 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-X962:SHA1")
    /// kSecKeyAlgorithmECDSASignatureDigestX962SHA224: `algid:sign:ECDSA:digest-X962:SHA224` (not implemented here).
    public static let ecdsaSignatureDigestX962SHA224 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-X962:SHA224")
    /// kSecKeyAlgorithmECDSASignatureDigestX962SHA256: `algid:sign:ECDSA:digest-X962:SHA256` (implemented).
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-X962:SHA256")
    /// kSecKeyAlgorithmECDSASignatureDigestX962SHA384: `algid:sign:ECDSA:digest-X962:SHA384` (implemented).
    public static let ecdsaSignatureDigestX962SHA384 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-X962:SHA384")
    /// kSecKeyAlgorithmECDSASignatureDigestX962SHA512: `algid:sign:ECDSA:digest-X962:SHA512` (implemented).
    public static let ecdsaSignatureDigestX962SHA512 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-X962:SHA512")
    /// kSecKeyAlgorithmECDSASignatureMessageX962SHA1: `algid:sign:ECDSA:message-X962:SHA1` (not implemented here).
    public static let ecdsaSignatureMessageX962SHA1 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA1")
    /// kSecKeyAlgorithmECDSASignatureMessageX962SHA224: `algid:sign:ECDSA:message-X962:SHA224` (not implemented here).
    public static let ecdsaSignatureMessageX962SHA224 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA224")
    /// kSecKeyAlgorithmECDSASignatureMessageX962SHA256: `algid:sign:ECDSA:message-X962:SHA256` (implemented).
    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA256")
    /// kSecKeyAlgorithmECDSASignatureMessageX962SHA384: `algid:sign:ECDSA:message-X962:SHA384` (implemented).
    public static let ecdsaSignatureMessageX962SHA384 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA384")
    /// kSecKeyAlgorithmECDSASignatureMessageX962SHA512: `algid:sign:ECDSA:message-X962:SHA512` (implemented).
    public static let ecdsaSignatureMessageX962SHA512 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA512")
    /// kSecKeyAlgorithmECDSASignatureDigestRFC4754: `algid:sign:ECDSA:digest-RFC4754` (not implemented here).
    public static let ecdsaSignatureDigestRFC4754 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-RFC4754")
    /// kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA1: `algid:sign:ECDSA:digest-RFC4754:SHA1` (not implemented here).
    public static let ecdsaSignatureDigestRFC4754SHA1 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-RFC4754:SHA1")
    /// kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA224: `algid:sign:ECDSA:digest-RFC4754:SHA224` (not implemented here).
    public static let ecdsaSignatureDigestRFC4754SHA224 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-RFC4754:SHA224")
    /// kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA256: `algid:sign:ECDSA:digest-RFC4754:SHA256` (not implemented here).
    public static let ecdsaSignatureDigestRFC4754SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-RFC4754:SHA256")
    /// kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA384: `algid:sign:ECDSA:digest-RFC4754:SHA384` (not implemented here).
    public static let ecdsaSignatureDigestRFC4754SHA384 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-RFC4754:SHA384")
    /// kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA512: `algid:sign:ECDSA:digest-RFC4754:SHA512` (not implemented here).
    public static let ecdsaSignatureDigestRFC4754SHA512 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-RFC4754:SHA512")
    /// kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA1: `algid:sign:ECDSA:message-RFC4754:SHA1` (not implemented here).
    public static let ecdsaSignatureMessageRFC4754SHA1 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-RFC4754:SHA1")
    /// kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA224: `algid:sign:ECDSA:message-RFC4754:SHA224` (not implemented here).
    public static let ecdsaSignatureMessageRFC4754SHA224 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-RFC4754:SHA224")
    /// kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA256: `algid:sign:ECDSA:message-RFC4754:SHA256` (not implemented here).
    public static let ecdsaSignatureMessageRFC4754SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-RFC4754:SHA256")
    /// kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA384: `algid:sign:ECDSA:message-RFC4754:SHA384` (not implemented here).
    public static let ecdsaSignatureMessageRFC4754SHA384 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-RFC4754:SHA384")
    /// kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA512: `algid:sign:ECDSA:message-RFC4754:SHA512` (not implemented here).
    public static let ecdsaSignatureMessageRFC4754SHA512 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-RFC4754:SHA512")
    /// kSecKeyAlgorithmECDSASignatureRFC4754: `algid:sign:ECDSA:RFC4754` (not implemented here).
    public static let ecdsaSignatureRFC4754 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:RFC4754")
    /// kSecKeyAlgorithmRSAEncryptionRaw: `algid:encrypt:RSA:raw` (implemented).
    public static let rsaEncryptionRaw = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:raw")
    /// kSecKeyAlgorithmRSAEncryptionPKCS1: `algid:encrypt:RSA:PKCS1` (not implemented here).
    public static let rsaEncryptionPKCS1 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:PKCS1")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA1: `algid:encrypt:RSA:OAEP:SHA1` (implemented).
    public static let rsaEncryptionOAEPSHA1 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA1")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA224: `algid:encrypt:RSA:OAEP:SHA224` (not implemented here).
    public static let rsaEncryptionOAEPSHA224 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA224")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA256: `algid:encrypt:RSA:OAEP:SHA256` (implemented).
    public static let rsaEncryptionOAEPSHA256 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA256")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA384: `algid:encrypt:RSA:OAEP:SHA384` (implemented).
    public static let rsaEncryptionOAEPSHA384 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA384")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA512: `algid:encrypt:RSA:OAEP:SHA512` (implemented).
    public static let rsaEncryptionOAEPSHA512 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA512")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA1AESGCM: `algid:encrypt:RSA:OAEP:SHA1:AESGCM` (not implemented here).
    public static let rsaEncryptionOAEPSHA1AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA1:AESGCM")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA224AESGCM: `algid:encrypt:RSA:OAEP:SHA224:AESGCM` (not implemented here).
    public static let rsaEncryptionOAEPSHA224AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA224:AESGCM")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA256AESGCM: `algid:encrypt:RSA:OAEP:SHA256:AESGCM` (not implemented here).
    public static let rsaEncryptionOAEPSHA256AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA256:AESGCM")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA384AESGCM: `algid:encrypt:RSA:OAEP:SHA384:AESGCM` (not implemented here).
    public static let rsaEncryptionOAEPSHA384AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA384:AESGCM")
    /// kSecKeyAlgorithmRSAEncryptionOAEPSHA512AESGCM: `algid:encrypt:RSA:OAEP:SHA512:AESGCM` (not implemented here).
    public static let rsaEncryptionOAEPSHA512AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA512:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionStandardX963SHA1AESGCM: `algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM` (not implemented here).
    public static let eciesEncryptionStandardX963SHA1AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionStandardX963SHA224AESGCM: `algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM` (not implemented here).
    public static let eciesEncryptionStandardX963SHA224AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionStandardX963SHA256AESGCM: `algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM` (implemented).
    public static let eciesEncryptionStandardX963SHA256AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionStandardX963SHA384AESGCM: `algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM` (not implemented here).
    public static let eciesEncryptionStandardX963SHA384AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionStandardX963SHA512AESGCM: `algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM` (not implemented here).
    public static let eciesEncryptionStandardX963SHA512AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionCofactorX963SHA1AESGCM: `algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM` (not implemented here).
    public static let eciesEncryptionCofactorX963SHA1AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionCofactorX963SHA224AESGCM: `algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM` (not implemented here).
    public static let eciesEncryptionCofactorX963SHA224AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionCofactorX963SHA256AESGCM: `algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM` (implemented).
    public static let eciesEncryptionCofactorX963SHA256AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionCofactorX963SHA384AESGCM: `algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM` (not implemented here).
    public static let eciesEncryptionCofactorX963SHA384AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionCofactorX963SHA512AESGCM: `algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM` (not implemented here).
    public static let eciesEncryptionCofactorX963SHA512AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM")
    /// kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA224AESGCM: `algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV` (not implemented here).
    public static let eciesEncryptionStandardVariableIVX963SHA224AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV")
    /// kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA256AESGCM: `algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV` (implemented).
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV")
    /// kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA384AESGCM: `algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV` (not implemented here).
    public static let eciesEncryptionStandardVariableIVX963SHA384AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV")
    /// kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA512AESGCM: `algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV` (not implemented here).
    public static let eciesEncryptionStandardVariableIVX963SHA512AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV")
    /// kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA224AESGCM: `algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV` (not implemented here).
    public static let eciesEncryptionCofactorVariableIVX963SHA224AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV")
    /// kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM: `algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV` (implemented).
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
    /// kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA384AESGCM: `algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV` (not implemented here).
    public static let eciesEncryptionCofactorVariableIVX963SHA384AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV")
    /// kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA512AESGCM: `algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV` (not implemented here).
    public static let eciesEncryptionCofactorVariableIVX963SHA512AESGCM = SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV")
    /// kSecKeyAlgorithmECDHKeyExchangeStandard: `algid:keyexchange:ECDH` (not implemented here).
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDH")
    /// kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA1: `algid:keyexchange:ECDH:KDFX963:SHA1` (not implemented here).
    public static let ecdhKeyExchangeStandardX963SHA1 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDH:KDFX963:SHA1")
    /// kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA224: `algid:keyexchange:ECDH:KDFX963:SHA224` (not implemented here).
    public static let ecdhKeyExchangeStandardX963SHA224 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDH:KDFX963:SHA224")
    /// kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA256: `algid:keyexchange:ECDH:KDFX963:SHA256` (not implemented here).
    public static let ecdhKeyExchangeStandardX963SHA256 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDH:KDFX963:SHA256")
    /// kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA384: `algid:keyexchange:ECDH:KDFX963:SHA384` (not implemented here).
    public static let ecdhKeyExchangeStandardX963SHA384 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDH:KDFX963:SHA384")
    /// kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA512: `algid:keyexchange:ECDH:KDFX963:SHA512` (not implemented here).
    public static let ecdhKeyExchangeStandardX963SHA512 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDH:KDFX963:SHA512")
    /// kSecKeyAlgorithmECDHKeyExchangeCofactor: `algid:keyexchange:ECDHC` (not implemented here).
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDHC")
    /// kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA1: `algid:keyexchange:ECDHC:KDFX963:SHA1` (not implemented here).
    public static let ecdhKeyExchangeCofactorX963SHA1 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDHC:KDFX963:SHA1")
    /// kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA224: `algid:keyexchange:ECDHC:KDFX963:SHA224` (not implemented here).
    public static let ecdhKeyExchangeCofactorX963SHA224 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDHC:KDFX963:SHA224")
    /// kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA256: `algid:keyexchange:ECDHC:KDFX963:SHA256` (not implemented here).
    public static let ecdhKeyExchangeCofactorX963SHA256 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDHC:KDFX963:SHA256")
    /// kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA384: `algid:keyexchange:ECDHC:KDFX963:SHA384` (not implemented here).
    public static let ecdhKeyExchangeCofactorX963SHA384 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDHC:KDFX963:SHA384")
    /// kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA512: `algid:keyexchange:ECDHC:KDFX963:SHA512` (not implemented here).
    public static let ecdhKeyExchangeCofactorX963SHA512 = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDHC:KDFX963:SHA512")

    private static let implemented: [String: KeyAlgorithm] = [
        "algid:sign:RSA:message-PKCS1v15:SHA256": .rsaSignatureMessagePKCS1v15SHA256,
        "algid:sign:RSA:message-PKCS1v15:SHA384": .rsaSignatureMessagePKCS1v15SHA384,
        "algid:sign:RSA:message-PKCS1v15:SHA512": .rsaSignatureMessagePKCS1v15SHA512,
        "algid:sign:RSA:message-PSS:SHA256:SHA256:32": .rsaSignatureMessagePSSSHA256,
        "algid:sign:RSA:message-PSS:SHA384:SHA384:48": .rsaSignatureMessagePSSSHA384,
        "algid:sign:RSA:message-PSS:SHA512:SHA512:64": .rsaSignatureMessagePSSSHA512,
        "algid:sign:ECDSA:digest-X962:SHA256": .ecdsaDigestX962SHA256,
        "algid:sign:ECDSA:digest-X962:SHA384": .ecdsaDigestX962SHA384,
        "algid:sign:ECDSA:digest-X962:SHA512": .ecdsaDigestX962SHA512,
        "algid:sign:ECDSA:message-X962:SHA256": .ecdsaMessageX962SHA256,
        "algid:sign:ECDSA:message-X962:SHA384": .ecdsaMessageX962SHA384,
        "algid:sign:ECDSA:message-X962:SHA512": .ecdsaMessageX962SHA512,
        "algid:encrypt:RSA:OAEP:SHA1": .rsaEncryptionOAEPSHA1,
        "algid:encrypt:RSA:OAEP:SHA256": .rsaEncryptionOAEPSHA256,
        "algid:encrypt:RSA:OAEP:SHA384": .rsaEncryptionOAEPSHA384,
        "algid:encrypt:RSA:OAEP:SHA512": .rsaEncryptionOAEPSHA512,
        "algid:encrypt:RSA:raw": .rsaEncryptionRaw,
        "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV": .eciesCofactorVariableIVX963SHA256AESGCM,
        "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV": .eciesStandardVariableIVX963SHA256AESGCM,
        "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM": .eciesStandardX963SHA256AESGCM,
        "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM": .eciesCofactorX963SHA256AESGCM,
    ]
}
