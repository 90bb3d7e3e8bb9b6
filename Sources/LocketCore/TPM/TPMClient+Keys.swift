import LocketSupport
import LocketWire

// Secure Enclave keys in the TPM: made there (never imported, never
// exported), used there. As with Apple's Secure Enclave, only the
// private-key step runs in the TPM: the message's hash, ECIES's KDF and
// AES-GCM stay in software.

extension TPMClient {
    /// What the TPM is (`locket status`).
    public func probe() throws -> TPMInfo {
        try request(FrameWriter(tpm: .probe), "reading what the TPM is") { reader in
            guard reader.kind == TPMWire.Kind.info.rawValue else { throw unexpected(reader) }
            var words: [UInt32] = []
            for _ in 0..<11 { words.append(try reader.u32()) }
            let p256 = try reader.u8() == 1
            return TPMInfo(family: TPMInfo.text([words[0]]), revision: words[1], manufacturer: TPMInfo.text([words[4]]),
                           vendor: TPMInfo.text(Array(words[5...8])), firmware: (words[9], words[10]), hasP256: p256)
        }
    }

    /// The TPM's dictionary-attack counters.
    public func lockoutStatus() throws -> TPMLockoutStatus {
        try request(FrameWriter(tpm: .lockout), "reading the lockout counters") { reader in
            guard reader.kind == TPMWire.Kind.lockoutStatus.rawValue else { throw unexpected(reader) }
            return TPMLockoutStatus(counter: try reader.u32(), maxTries: try reader.u32(), interval: try reader.u32(),
                                    recovery: try reader.u32(), inLockout: try reader.u8() == 1)
        }
    }

    /// A new P-256 key made inside the TPM under its storage key. With an
    /// authorization value the TPM demands it for every use and counts wrong
    /// ones toward its lockout; without one the key is exempt from lockout.
    /// Its key file carries no description or policy: tpm2-openssl 1.1
    /// (Debian's) reads only type, emptyAuth, parent and the two parts.
    public func createKey(authorization: TPMAuthorization? = nil) throws -> TPMKey {
        var writer = FrameWriter(tpm: .createKey, capacity: 64)
        Self.append(authorization, to: &writer)
        defer { writer.wipe() }
        let (publicArea, privateArea) = try request(writer, "making a key", authorized: authorization != nil) { reader in try Self.object(&reader, unexpected) }
        return try TPMKey(TSS2KeyFile(kind: .loadable, emptyAuth: authorization == nil, publicArea: publicArea, privateArea: privateArea))
    }

    /// An ECDSA P-256 signature (X9.62 DER, as Apple's) of a SHA-256 `digest`.
    public func sign(digest: [UInt8], with key: TPMKey, authorization: TPMAuthorization? = nil) throws -> [UInt8] {
        guard digest.count == 32 else { throw KeychainError(.param, "a Secure Enclave key signs a SHA-256 digest: 32 bytes, not \(digest.count)") }
        try Self.check(authorization, for: key)
        var writer = FrameWriter(tpm: .sign, capacity: 128 + key.file.publicArea.count + key.file.privateArea.count)
        Self.append(key.file, to: &writer)
        Self.append(authorization, to: &writer)
        writer.field(digest)
        defer { writer.wipe() }
        let signature = try request(writer, "signing", authorized: authorization != nil) { reader in
            guard reader.kind == TPMWire.Kind.signature.rawValue else { throw unexpected(reader) }
            let r = try reader.field(limit: 32), s = try reader.field(limit: 32)
            return Self.ecdsaSignature(r: r, s: s)
        }
        // A key without an authorization value signs outside the HMAC
        // session (nothing secret passes): checking the signature here
        // catches a digest or a signature changed on the bus, and a faulty TPM.
        guard (try? key.publicKey.verify(signature: signature, for: digest, algorithm: .ecdsaDigestX962SHA256)) == true else {
            throw KeychainError(.io, "the TPM's signature does not verify with the key's public key (\(location.tcti)): the TPM or its connection is faulty")
        }
        return signature
    }

    /// Signs `data` with `algorithm`: `ecdsa-message-x962-sha256` (the
    /// message, hashed here) or `ecdsa-digest-x962-sha256`; errSecParam for
    /// any other, as Apple's Secure Enclave refuses them.
    public func sign(_ data: [UInt8], algorithm: KeyAlgorithm, with key: TPMKey, authorization: TPMAuthorization? = nil) throws -> [UInt8] {
        switch algorithm {
        case .ecdsaMessageX962SHA256: return try sign(digest: Digest.sha256(data), with: key, authorization: authorization)
        case .ecdsaDigestX962SHA256: return try sign(digest: data, with: key, authorization: authorization)
        default: throw KeychainError(.param, "a Secure Enclave key signs with ecdsa-message-x962-sha256 or ecdsa-digest-x962-sha256, not \(algorithm.rawValue)")
        }
    }

    /// The ECDH shared secret (the x coordinate, 32 bytes, as SecKeyCopyKeyExchangeResult's
    /// kSecKeyAlgorithmECDHKeyExchangeStandard) with `peer`, a P-256 public key.
    public func sharedSecret(with peer: AsymmetricKey, key: TPMKey, authorization: TPMAuthorization? = nil) throws -> SecureBytes {
        guard peer.keyType == .ec, peer.curve == .p256 else { throw KeychainError(.param, "a Secure Enclave key agrees with a P-256 public key only") }
        return try sharedSecret(point: peer.publicKeyExternalRepresentation, key: key, authorization: authorization)
    }

    /// ECIES decryption (`ecies-cofactor-variable-iv-x963-sha256-aesgcm`,
    /// Apple's SecKeyCreateDecryptedData): the ECDH in the TPM, the rest here.
    public func decrypt(_ ciphertext: [UInt8], with key: TPMKey, authorization: TPMAuthorization? = nil) throws -> SecureBytes {
        try ciphertext.withUnsafeBytes { input in
            try ECIES.decrypt(input, curve: .p256) { ephemeral, _ in
                try sharedSecret(point: ephemeral, key: key, authorization: authorization)
            }
        }
    }

    /// TPM2_ECDH_ZGen with an uncompressed P-256 point (checked on the curve first).
    func sharedSecret(point: [UInt8], key: TPMKey, authorization: TPMAuthorization?) throws -> SecureBytes {
        guard point.count == 65, point[0] == 4 else { throw KeychainError(.param, "the peer's key is not an uncompressed P-256 point") }
        // libcrypto refuses a point off the curve before the TPM sees it.
        _ = try AsymmetricKey(publicKeyExternalRepresentation: point, keyType: .ec)
        guard key.canAgree else { throw KeychainError(.param, "this TPM key is a signing key only: it does no key agreement") }
        try Self.check(authorization, for: key)
        var writer = FrameWriter(tpm: .ecdh, capacity: 192 + key.file.publicArea.count + key.file.privateArea.count)
        Self.append(key.file, to: &writer)
        Self.append(authorization, to: &writer)
        writer.field(point[1..<33])
        writer.field(point[33..<65])
        defer { writer.wipe() }
        return try request(writer, "agreeing a key", authorized: authorization != nil) { reader in
            guard reader.kind == TPMWire.Kind.secret.rawValue else { throw unexpected(reader) }
            let secret = try reader.withField(limit: 32) { try SecureBytes(copying: $0) }
            guard secret.count == 32 else { throw KeychainError(.io, "locket-tpm answered a shared secret that is not 32 bytes") }
            return secret
        }
    }

    // MARK: frames

    /// An object's TPM2B_PUBLIC and TPM2B_PRIVATE, as the TPM made them.
    static func object(_ reader: inout FrameReader, _ unexpected: (FrameReader) -> KeychainError) throws -> ([UInt8], [UInt8]) {
        guard reader.kind == TPMWire.Kind.object.rawValue else { throw unexpected(reader) }
        return (try reader.field(limit: TSS2KeyFile.maximumPart), try reader.field(limit: TSS2KeyFile.maximumPart))
    }

    static func append(_ file: TSS2KeyFile, to writer: inout FrameWriter) {
        writer.field(file.publicArea)
        writer.field(file.privateArea)
    }

    static func append(_ authorization: TPMAuthorization?, to writer: inout FrameWriter) {
        guard let authorization else { return writer.u8(0) }
        writer.u8(1)
        authorization.value.withUnsafeBytes { writer.field($0) }
    }

    /// A key with an authorization value needs one, and one without must get none
    /// (the TPM would count a guess that can't be right).
    static func check(_ authorization: TPMAuthorization?, for key: TPMKey) throws {
        if key.needsAuthorization && authorization == nil {
            throw KeychainError(.interactionNotAllowed, "this Secure Enclave key has an application password: give it")
        }
        if !key.needsAuthorization && authorization != nil {
            throw KeychainError(.param, "this Secure Enclave key has no application password")
        }
    }

    /// ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }, from the TPM's unsigned big-endian r and s.
    static func ecdsaSignature(r: [UInt8], s: [UInt8]) -> [UInt8] {
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return DER.header(0x02, value.count) + value
        }
        let body = integer(r) + integer(s)
        return DER.header(DER.sequence, body.count) + body
    }
}
