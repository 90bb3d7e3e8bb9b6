import LocketCore
import LocketSupport

/// kSecKeyKeyExchangeParameterRequestedSize: the bytes a KDF key exchange gives (required with a KDF).
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterRequestedSize: CFString = "requestedSize"
/// kSecKeyKeyExchangeParameterSharedInfo: the KDF's shared information (Data).
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterSharedInfo: CFString = "sharedInfo"

/// ECDH between `privateKey` and `publicKey` (SPEC §13): the shared secret
/// (kSecKeyAlgorithmECDHKeyExchangeStandard or ...Cofactor: Z's x
/// coordinate; the NIST curves' cofactor is 1, so both are the same), or
/// with ...X963SHAn that secret through the ANSI X9.63 KDF, `parameters`
/// giving kSecKeyKeyExchangeParameterRequestedSize and optionally
/// kSecKeyKeyExchangeParameterSharedInfo. A Secure Enclave key does the ECDH
/// in the TPM.
public func SecKeyCopyKeyExchangeResult(_ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey,
                                        _ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    withError(error) {
        let (_, digest) = try KeyExchangeAlgorithm.parse(algorithm)
        guard privateKey.keyClass == .private, privateKey.keyType == .ec else {
            throw KeychainError(.param, "key exchange needs an EC private key")
        }
        let peer = try publicKey.publicKey()
        let secret = try privateKey.withPrivateKey("key exchange") { try $0.sharedSecret(with: peer) }
        guard let digest else { return secret.withUnsafeBytes { Data($0) } as NSData }
        let dictionary = parameters as NSDictionary
        guard let sizeValue = dictionary["requestedSize"], let size = Value.integer(sizeValue) else {
            throw KeychainError(.param, "\(algorithm.rawValue) needs kSecKeyKeyExchangeParameterRequestedSize")
        }
        let sharedInfo = try dictionary["sharedInfo"].map { value -> [UInt8] in
            guard let bytes = Value.bytes(value) else { throw Value.wrongType("kSecKeyKeyExchangeParameterSharedInfo", "Data") }
            return bytes
        } ?? []
        let derived = try KeyExchange.x963(secret, digest: digest, sharedInfo: sharedInfo, length: size)
        return derived.withUnsafeBytes { Data($0) } as NSData
    }
}

/// Apple's ECDH algorithm names: `algid:keyexchange:ECDH[C][:KDFX963:SHAn]`.
enum KeyExchangeAlgorithm {
    /// Whether the name is cofactor ECDH, and the KDF's digest (nil: the raw secret).
    static func parse(_ algorithm: SecKeyAlgorithm) throws -> (cofactor: Bool, digest: String?) {
        let parts = (algorithm.rawValue as String).split(separator: ":").map(String.init)
        guard parts.count == 3 || (parts.count == 5 && parts[3] == "KDFX963" && KeyExchange.digests.contains(parts[4])),
              parts[0] == "algid", parts[1] == "keyexchange", parts[2] == "ECDH" || parts[2] == "ECDHC" else {
            throw KeychainError(.param, "the algorithm \(algorithm.rawValue) is not a key exchange algorithm")
        }
        return (parts[2] == "ECDHC", parts.count == 5 ? parts[4] : nil)
    }
}
