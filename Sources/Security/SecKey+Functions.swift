import LocketCore
import LocketSupport

/// What a key operation is (SecKeyIsAlgorithmSupported).
public enum SecKeyOperationType: CFIndex, Sendable {
    case sign = 0
    case verify = 1
    case encrypt = 2
    case decrypt = 3
    case keyExchange = 4
}

/// The public key of `key` (itself for a public key); nil when it can't be
/// had (a stored key whose access control was not satisfied).
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? {
    if key.keyClass == .public { return key }
    return try? SecKey(key.publicKey())
}

/// The key in Apple's external representation: PKCS#1 DER for RSA,
/// 04||X||Y (public) or 04||X||Y||K (private) for EC, the raw 32 bytes for
/// Ed25519 and X25519. A private key made non-extractable (in the TPM with
/// kSecAttrTokenIDSecureEnclave, or `--non-extractable`) never leaves:
/// errSecDataNotAvailable.
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    withError(error) {
        if key.keyClass == .public { return Data(try key.publicKey().publicKeyExternalRepresentation) as NSData }
        guard key.isExtractable else {
            throw KeychainError(.dataNotAvailable, "the key was made non-extractable: it can be used but never leaves the keychain")
        }
        let secret: SecureBytes
        switch key.backing {
        case .memory(let held, _): secret = try held.privateKeyExternalRepresentation()
        case .stored(let stored): secret = try stored.use { try $0.keys.exportableKey(stored.query()).key.privateKeyExternalRepresentation() }
        case .tpm: throw KeychainError(.dataNotAvailable, "a Secure Enclave key never leaves the TPM")
        }
        return secret.withUnsafeBytes { Data($0) } as NSData
    }
}

/// A key in memory from Apple's external representation: kSecAttrKeyType
/// and kSecAttrKeyClass say what it is (kSecAttrKeySizeInBits, when given,
/// must agree). A public key may also be given as SubjectPublicKeyInfo DER.
public func SecKeyCreateWithData(_ keyData: CFData, _ attributes: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    withError(error) {
        let data = keyData as Data
        guard let typeValue = attributes["type"] else { throw KeychainError(.param, "kSecAttrKeyType is required") }
        let type = try AttributeCoding.keyType(typeValue)
        guard let classValue = attributes["kcls"], let classText = Value.string(classValue) ?? Value.integer(classValue).map(String.init) else {
            throw KeychainError(.param, "kSecAttrKeyClass is required")
        }
        let key: AsymmetricKey
        switch classText {
        case "0":
            do {
                key = try AsymmetricKey(publicKeyExternalRepresentation: Array(data), keyType: type)
            } catch let failure as KeychainError where failure.code == .decode {
                guard let spki = try? AsymmetricKey(subjectPublicKeyInfo: Array(data)), spki.keyType == type else { throw failure }
                key = spki
            }
        // A private key goes from the caller's Data straight into guarded memory.
        case "1": key = try AsymmetricKey(privateKeyExternalRepresentation: try SecureBytes(copying: data), keyType: type)
        default: throw KeychainError(.param, "kSecAttrKeyClass must be kSecAttrKeyClassPublic or kSecAttrKeyClassPrivate")
        }
        if let sizeValue = attributes["bsiz"], let size = Value.integer(sizeValue), size != key.sizeInBits {
            throw KeychainError(.param, "the key is of \(key.sizeInBits) bits, not \(size)")
        }
        return SecKey(key)
    }
}

/// Signs `dataToSign` (the message, or for the ...Digest... algorithms its
/// digest) with a private key. ECDSA signatures are X9.62 DER, as Apple's.
public func SecKeyCreateSignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData,
                                  _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    withError(error) {
        let locket = try implemented(algorithm, key, .sign)
        let message = Array(dataToSign as Data)
        return Data(try key.withPrivateKey("signing") { try $0.sign(message, algorithm: locket) }) as NSData
    }
}

/// Whether `signature` is `key`'s signature of `signedData`; false with
/// `error` errSecVerifyFailed when it is not.
public func SecKeyVerifySignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData,
                                  _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> Bool {
    withError(error) {
        let locket = try implemented(algorithm, key, .verify)
        guard try key.publicKey().verify(signature: Array(signature as Data), for: Array(signedData as Data), algorithm: locket) else {
            throw KeychainError(.verifyFailed)
        }
        return true
    } ?? false
}

/// Encrypts `plaintext` to `key` (a private key encrypts to its public
/// half): RSA-OAEP, or Apple's ECIES, which `locket key decrypt` opens.
public func SecKeyCreateEncryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData,
                                      _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    withError(error) {
        let locket = try implemented(algorithm, key, .encrypt)
        return Data(try key.publicKey().encrypt(Array(plaintext as Data), algorithm: locket)) as NSData
    }
}

/// Decrypts `ciphertext` with a private key.
public func SecKeyCreateDecryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData,
                                      _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    withError(error) {
        let locket = try implemented(algorithm, key, .decrypt)
        let input = Array(ciphertext as Data)
        let plaintext = try key.withPrivateKey("decrypting") { try $0.decrypt(input, algorithm: locket) }
        return plaintext.withUnsafeBytes { Data($0) } as NSData
    }
}

/// Whether `key` can do `operation` with `algorithm` here.
public func SecKeyIsAlgorithmSupported(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) -> Bool {
    if operation == .keyExchange {
        return (try? KeyExchangeAlgorithm.parse(algorithm)) != nil && key.keyClass == .private && key.keyType == .ec
    }
    // A Secure Enclave key signs with SHA-256 and decrypts with Apple's ECIES only, as Apple's.
    if key.isHeldByTPM, let locket = algorithm.locket, ![.ecdsaMessageX962SHA256, .ecdsaDigestX962SHA256].contains(locket) && !locket.rawValue.hasPrefix("ecies-") {
        return false
    }
    return (try? implemented(algorithm, key, operation)) != nil
}

/// The size of the key's block in bytes: an RSA key's modulus, an EC key's
/// coordinate, 32 for Ed25519 and X25519.
public func SecKeyGetBlockSize(_ key: SecKey) -> Int { (key.sizeInBits + 7) / 8 }

/// The engine's algorithm for `algorithm`, checked against the key's type
/// and class; errSecParam (as Apple's "algorithm not supported") otherwise.
private func implemented(_ algorithm: SecKeyAlgorithm, _ key: SecKey, _ operation: SecKeyOperationType) throws -> KeyAlgorithm {
    guard let locket = algorithm.locket else {
        throw KeychainError(.param, "the algorithm \(algorithm.rawValue) is not supported here")
    }
    let wanted: KeyAlgorithm.Operation = operation == .sign || operation == .verify ? .sign : .encrypt
    guard operation != .keyExchange, locket.operation == wanted, locket.keyType == key.keyType else {
        throw KeychainError(.param, "the algorithm \(algorithm.rawValue) can't be used for this key and operation")
    }
    if (operation == .sign || operation == .decrypt) && key.keyClass != .private {
        throw KeychainError(.param, "the algorithm \(algorithm.rawValue) needs a private key for this operation")
    }
    return locket
}
