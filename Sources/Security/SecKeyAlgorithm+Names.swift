// Apple's C names of the key algorithms, for code that spells them so.

/// The same as `SecKeyAlgorithm.rsaSignatureRaw`.
public let kSecKeyAlgorithmRSASignatureRaw: SecKeyAlgorithm = .rsaSignatureRaw
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPKCS1v15Raw`.
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15Raw: SecKeyAlgorithm = .rsaSignatureDigestPKCS1v15Raw
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA1`.
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA1: SecKeyAlgorithm = .rsaSignatureDigestPKCS1v15SHA1
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA224`.
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA224: SecKeyAlgorithm = .rsaSignatureDigestPKCS1v15SHA224
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA256`.
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA256: SecKeyAlgorithm = .rsaSignatureDigestPKCS1v15SHA256
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA384`.
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA384: SecKeyAlgorithm = .rsaSignatureDigestPKCS1v15SHA384
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPKCS1v15SHA512`.
public let kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA512: SecKeyAlgorithm = .rsaSignatureDigestPKCS1v15SHA512
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA1`.
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA1: SecKeyAlgorithm = .rsaSignatureMessagePKCS1v15SHA1
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA224`.
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA224: SecKeyAlgorithm = .rsaSignatureMessagePKCS1v15SHA224
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA256`.
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA256: SecKeyAlgorithm = .rsaSignatureMessagePKCS1v15SHA256
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA384`.
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA384: SecKeyAlgorithm = .rsaSignatureMessagePKCS1v15SHA384
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA512`.
public let kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA512: SecKeyAlgorithm = .rsaSignatureMessagePKCS1v15SHA512
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPSSSHA1`.
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA1: SecKeyAlgorithm = .rsaSignatureDigestPSSSHA1
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPSSSHA224`.
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA224: SecKeyAlgorithm = .rsaSignatureDigestPSSSHA224
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPSSSHA256`.
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA256: SecKeyAlgorithm = .rsaSignatureDigestPSSSHA256
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPSSSHA384`.
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA384: SecKeyAlgorithm = .rsaSignatureDigestPSSSHA384
/// The same as `SecKeyAlgorithm.rsaSignatureDigestPSSSHA512`.
public let kSecKeyAlgorithmRSASignatureDigestPSSSHA512: SecKeyAlgorithm = .rsaSignatureDigestPSSSHA512
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePSSSHA1`.
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA1: SecKeyAlgorithm = .rsaSignatureMessagePSSSHA1
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePSSSHA224`.
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA224: SecKeyAlgorithm = .rsaSignatureMessagePSSSHA224
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePSSSHA256`.
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA256: SecKeyAlgorithm = .rsaSignatureMessagePSSSHA256
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePSSSHA384`.
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA384: SecKeyAlgorithm = .rsaSignatureMessagePSSSHA384
/// The same as `SecKeyAlgorithm.rsaSignatureMessagePSSSHA512`.
public let kSecKeyAlgorithmRSASignatureMessagePSSSHA512: SecKeyAlgorithm = .rsaSignatureMessagePSSSHA512
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestX962`.
public let kSecKeyAlgorithmECDSASignatureDigestX962: SecKeyAlgorithm = .ecdsaSignatureDigestX962
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestX962SHA1`.
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA1: SecKeyAlgorithm = .ecdsaSignatureDigestX962SHA1
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestX962SHA224`.
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA224: SecKeyAlgorithm = .ecdsaSignatureDigestX962SHA224
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestX962SHA256`.
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA256: SecKeyAlgorithm = .ecdsaSignatureDigestX962SHA256
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestX962SHA384`.
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA384: SecKeyAlgorithm = .ecdsaSignatureDigestX962SHA384
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestX962SHA512`.
public let kSecKeyAlgorithmECDSASignatureDigestX962SHA512: SecKeyAlgorithm = .ecdsaSignatureDigestX962SHA512
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageX962SHA1`.
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA1: SecKeyAlgorithm = .ecdsaSignatureMessageX962SHA1
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageX962SHA224`.
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA224: SecKeyAlgorithm = .ecdsaSignatureMessageX962SHA224
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageX962SHA256`.
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA256: SecKeyAlgorithm = .ecdsaSignatureMessageX962SHA256
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageX962SHA384`.
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA384: SecKeyAlgorithm = .ecdsaSignatureMessageX962SHA384
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageX962SHA512`.
public let kSecKeyAlgorithmECDSASignatureMessageX962SHA512: SecKeyAlgorithm = .ecdsaSignatureMessageX962SHA512
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestRFC4754`.
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754: SecKeyAlgorithm = .ecdsaSignatureDigestRFC4754
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA1`.
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA1: SecKeyAlgorithm = .ecdsaSignatureDigestRFC4754SHA1
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA224`.
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA224: SecKeyAlgorithm = .ecdsaSignatureDigestRFC4754SHA224
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA256`.
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA256: SecKeyAlgorithm = .ecdsaSignatureDigestRFC4754SHA256
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA384`.
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA384: SecKeyAlgorithm = .ecdsaSignatureDigestRFC4754SHA384
/// The same as `SecKeyAlgorithm.ecdsaSignatureDigestRFC4754SHA512`.
public let kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA512: SecKeyAlgorithm = .ecdsaSignatureDigestRFC4754SHA512
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA1`.
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA1: SecKeyAlgorithm = .ecdsaSignatureMessageRFC4754SHA1
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA224`.
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA224: SecKeyAlgorithm = .ecdsaSignatureMessageRFC4754SHA224
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA256`.
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA256: SecKeyAlgorithm = .ecdsaSignatureMessageRFC4754SHA256
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA384`.
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA384: SecKeyAlgorithm = .ecdsaSignatureMessageRFC4754SHA384
/// The same as `SecKeyAlgorithm.ecdsaSignatureMessageRFC4754SHA512`.
public let kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA512: SecKeyAlgorithm = .ecdsaSignatureMessageRFC4754SHA512
/// The same as `SecKeyAlgorithm.ecdsaSignatureRFC4754`.
public let kSecKeyAlgorithmECDSASignatureRFC4754: SecKeyAlgorithm = .ecdsaSignatureRFC4754
/// The same as `SecKeyAlgorithm.rsaEncryptionRaw`.
public let kSecKeyAlgorithmRSAEncryptionRaw: SecKeyAlgorithm = .rsaEncryptionRaw
/// The same as `SecKeyAlgorithm.rsaEncryptionPKCS1`.
public let kSecKeyAlgorithmRSAEncryptionPKCS1: SecKeyAlgorithm = .rsaEncryptionPKCS1
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA1`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA1: SecKeyAlgorithm = .rsaEncryptionOAEPSHA1
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA224`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA224: SecKeyAlgorithm = .rsaEncryptionOAEPSHA224
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA256`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA256: SecKeyAlgorithm = .rsaEncryptionOAEPSHA256
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA384`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA384: SecKeyAlgorithm = .rsaEncryptionOAEPSHA384
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA512`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA512: SecKeyAlgorithm = .rsaEncryptionOAEPSHA512
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA1AESGCM`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA1AESGCM: SecKeyAlgorithm = .rsaEncryptionOAEPSHA1AESGCM
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA224AESGCM`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA224AESGCM: SecKeyAlgorithm = .rsaEncryptionOAEPSHA224AESGCM
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA256AESGCM`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA256AESGCM: SecKeyAlgorithm = .rsaEncryptionOAEPSHA256AESGCM
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA384AESGCM`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA384AESGCM: SecKeyAlgorithm = .rsaEncryptionOAEPSHA384AESGCM
/// The same as `SecKeyAlgorithm.rsaEncryptionOAEPSHA512AESGCM`.
public let kSecKeyAlgorithmRSAEncryptionOAEPSHA512AESGCM: SecKeyAlgorithm = .rsaEncryptionOAEPSHA512AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionStandardX963SHA1AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA1AESGCM: SecKeyAlgorithm = .eciesEncryptionStandardX963SHA1AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionStandardX963SHA224AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA224AESGCM: SecKeyAlgorithm = .eciesEncryptionStandardX963SHA224AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionStandardX963SHA256AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA256AESGCM: SecKeyAlgorithm = .eciesEncryptionStandardX963SHA256AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionStandardX963SHA384AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA384AESGCM: SecKeyAlgorithm = .eciesEncryptionStandardX963SHA384AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionStandardX963SHA512AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionStandardX963SHA512AESGCM: SecKeyAlgorithm = .eciesEncryptionStandardX963SHA512AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionCofactorX963SHA1AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA1AESGCM: SecKeyAlgorithm = .eciesEncryptionCofactorX963SHA1AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionCofactorX963SHA224AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA224AESGCM: SecKeyAlgorithm = .eciesEncryptionCofactorX963SHA224AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionCofactorX963SHA256AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA256AESGCM: SecKeyAlgorithm = .eciesEncryptionCofactorX963SHA256AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionCofactorX963SHA384AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA384AESGCM: SecKeyAlgorithm = .eciesEncryptionCofactorX963SHA384AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionCofactorX963SHA512AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionCofactorX963SHA512AESGCM: SecKeyAlgorithm = .eciesEncryptionCofactorX963SHA512AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA224AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA224AESGCM: SecKeyAlgorithm = .eciesEncryptionStandardVariableIVX963SHA224AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA256AESGCM: SecKeyAlgorithm = .eciesEncryptionStandardVariableIVX963SHA256AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA384AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA384AESGCM: SecKeyAlgorithm = .eciesEncryptionStandardVariableIVX963SHA384AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA512AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA512AESGCM: SecKeyAlgorithm = .eciesEncryptionStandardVariableIVX963SHA512AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA224AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA224AESGCM: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA224AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA256AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA384AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA384AESGCM: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA384AESGCM
/// The same as `SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA512AESGCM`.
public let kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA512AESGCM: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA512AESGCM
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeStandard`.
public let kSecKeyAlgorithmECDHKeyExchangeStandard: SecKeyAlgorithm = .ecdhKeyExchangeStandard
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA1`.
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA1: SecKeyAlgorithm = .ecdhKeyExchangeStandardX963SHA1
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA224`.
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA224: SecKeyAlgorithm = .ecdhKeyExchangeStandardX963SHA224
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA256`.
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA256: SecKeyAlgorithm = .ecdhKeyExchangeStandardX963SHA256
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA384`.
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA384: SecKeyAlgorithm = .ecdhKeyExchangeStandardX963SHA384
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA512`.
public let kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA512: SecKeyAlgorithm = .ecdhKeyExchangeStandardX963SHA512
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeCofactor`.
public let kSecKeyAlgorithmECDHKeyExchangeCofactor: SecKeyAlgorithm = .ecdhKeyExchangeCofactor
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA1`.
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA1: SecKeyAlgorithm = .ecdhKeyExchangeCofactorX963SHA1
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA224`.
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA224: SecKeyAlgorithm = .ecdhKeyExchangeCofactorX963SHA224
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA256`.
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA256: SecKeyAlgorithm = .ecdhKeyExchangeCofactorX963SHA256
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA384`.
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA384: SecKeyAlgorithm = .ecdhKeyExchangeCofactorX963SHA384
/// The same as `SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA512`.
public let kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA512: SecKeyAlgorithm = .ecdhKeyExchangeCofactorX963SHA512
