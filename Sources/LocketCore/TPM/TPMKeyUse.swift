import LocketSupport

/// A Secure Enclave key opened for use (SPEC §21): its key file, the TPM
/// client that loads it, and its authorization value (the application
/// password) when it has one. Only the private-key step runs in the TPM,
/// as with Apple's Secure Enclave: ECDSA P-256 with SHA-256, ECDH, and the
/// ECDH inside ECIES; anything else is errSecParam, as Apple's refuses it.
///
/// The TPM's client is asked for at the first private-key step: verifying
/// and encrypting need only the public key, and no TPM.
public struct TPMKeyUse: PrivateKeyOperations {
    public let key: TPMKey
    private let tpm: () throws -> TPMClient
    let authorization: TPMAuthorization?

    init(key: TPMKey, client tpm: @escaping () throws -> TPMClient, authorization: TPMAuthorization?) {
        self.key = key
        self.tpm = tpm
        self.authorization = authorization
    }

    init(key: TPMKey, client: TPMClient, authorization: TPMAuthorization?) {
        self.init(key: key, client: { client }, authorization: authorization)
    }

    private var client: TPMClient { get throws { try tpm() } }

    public var publicKey: AsymmetricKey { key.publicKey }
    public var keyType: KeyType { .ec }

    public func sign(_ data: [UInt8], algorithm: KeyAlgorithm) throws -> [UInt8] {
        try client.sign(data, algorithm: algorithm, with: key, authorization: authorization)
    }

    /// Apple's four ECIES variants on P-256 (the cofactor is 1: one ECDH for all).
    public func decrypt(_ ciphertext: [UInt8], algorithm: KeyAlgorithm) throws -> SecureBytes {
        guard let ecies = algorithm.ecies else {
            throw KeychainError(.param, "a Secure Enclave key decrypts with the ECIES algorithms (ecies-cofactor-variable-iv-x963-sha256-aesgcm), not \(algorithm.rawValue)")
        }
        let variant = ECIES.Variant(variableIV: ecies.variableIV, cofactor: ecies.cofactor)
        return try ciphertext.withUnsafeBytes { input in
            try ECIES.decrypt(input, curve: .p256, variant: variant) { point, _ in
                try client.sharedSecret(point: point, key: key, authorization: authorization)
            }
        }
    }

    public func sharedSecret(with peer: AsymmetricKey) throws -> SecureBytes {
        try client.sharedSecret(with: peer, key: key, authorization: authorization)
    }
}
