import CCrypto
import LocketSupport

// What OpenSSH and an SSH agent see of a key: the public key blob
// (RFC 4253 6.6, RFC 5656 3.1, RFC 8709), the `authorized_keys` line, the
// SHA256 fingerprint, and agent signatures (RFC 8332 for rsa-sha2-256/512,
// RFC 5656 3.1.2 for ECDSA's (r, s) mpint pair, RFC 8709 for Ed25519).

extension AsymmetricKey {
    /// The SSH key type name: `ssh-ed25519`, `ecdsa-sha2-nistp256/384/521`,
    /// `ssh-rsa`; errSecParam for X25519, which SSH has no keys of.
    public func sshKeyType() throws -> String {
        switch keyType {
        case .ed25519: return "ssh-ed25519"
        case .ec: return "ecdsa-sha2-\(curve!.sshName)"
        case .rsa: return "ssh-rsa"
        case .x25519: throw KeychainError(.param, "x25519 keys can't be used with SSH (ed25519, ecdsa and rsa keys can)")
        }
    }

    /// The public key in SSH wire encoding, as `ssh-add -L` and agents send it.
    public func sshPublicKeyBlob() throws -> [UInt8] {
        let name = try sshKeyType()
        switch keyType {
        case .rsa:
            let (e, n) = try withPublicEVP { evp in (try evp.secretNumber("e").bytes, try evp.secretNumber("n").bytes) }
            return SSHWriter.encode { w in
                w.string(name)
                w.mpint(e)
                w.mpint(n)
            }
        case .ec:
            return SSHWriter.encode { w in
                w.string(name)
                w.string(curve!.sshName)
                w.string(publicKeyExternalRepresentation)
            }
        default:
            return SSHWriter.encode { w in
                w.string(name)
                w.string(publicKeyExternalRepresentation)
            }
        }
    }

    /// The `authorized_keys` line: type, base64 blob, and the comment if any.
    public func openSSHPublicKey(comment: String? = nil) throws -> String {
        let line = "\(try sshKeyType()) \(Base64.encode(try sshPublicKeyBlob()))"
        guard let comment, !comment.isEmpty else { return line }
        return line + " " + comment
    }

    /// `SHA256:` and the unpadded base64 SHA-256 of the blob, as `ssh-keygen -lf` prints it.
    public func openSSHFingerprint() throws -> String {
        "SHA256:" + Base64.encode(Digest.sha256(try sshPublicKeyBlob()), padding: false)
    }

    /// A public key from its SSH wire encoding (an agent request, an `authorized_keys` line's blob).
    public init(sshPublicKeyBlob blob: [UInt8]) throws {
        let key: AsymmetricKey = try blob.withUnsafeBytes { raw in
            var r = SSHReader(raw)
            let key = try SSHKeyCodec.readPublic(&r)
            guard r.isAtEnd else { throw KeychainError(.decode, "trailing bytes after the SSH public key") }
            return key
        }
        self = key
    }

    /// A public key from an `authorized_keys`-style line (`TYPE BASE64 [COMMENT]`), and its comment.
    public static func parseOpenSSHPublicKey(_ line: String) throws -> (key: AsymmetricKey, comment: String?) {
        let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard fields.count >= 2, let blob = try Base64.decode(String(fields[1])) else { throw KeychainError(.decode, "not an OpenSSH public key line") }
        let key = try AsymmetricKey(sshPublicKeyBlob: blob)
        guard try key.sshKeyType() == fields[0] else { throw KeychainError(.decode, "the OpenSSH public key's type does not match its blob") }
        let comment = fields.count > 2 ? String(fields[2]).trimmingTrailingNewlines() : nil
        return (key, comment)
    }

    /// The SSH agent flag asking for an rsa-sha2-256 signature (draft-miller-ssh-agent 4.5.1).
    public static let sshAgentRSASHA256: UInt32 = 2
    /// The SSH agent flag asking for an rsa-sha2-512 signature.
    public static let sshAgentRSASHA512: UInt32 = 4


    /// True when `signature` (SSH wire encoding) is this key's agent signature of `data`.
    public func verifySSHSignature(_ signature: [UInt8], for data: [UInt8]) throws -> Bool {
        let (name, blob): (String, [UInt8]) = try signature.withUnsafeBytes { raw in
            var r = SSHReader(raw)
            let name = try r.text()
            let blob = Array(try r.string())
            guard r.isAtEnd else { throw KeychainError(.decode, "trailing bytes after the SSH signature") }
            return (name, blob)
        }
        switch (keyType, name) {
        case (.ed25519, "ssh-ed25519"):
            return try verify(signature: blob, for: data, algorithm: .ed25519)
        case (.rsa, "rsa-sha2-256"):
            return try verify(signature: blob, for: data, algorithm: .rsaSignatureMessagePKCS1v15SHA256)
        case (.rsa, "rsa-sha2-512"):
            return try verify(signature: blob, for: data, algorithm: .rsaSignatureMessagePKCS1v15SHA512)
        case (.ec, "ecdsa-sha2-\(curve!.sshName)"):
            let der = try SSHKeyCodec.ecdsaDER(blob)
            let algorithm: KeyAlgorithm = switch curve! {
            case .p256: .ecdsaMessageX962SHA256
            case .p384: .ecdsaMessageX962SHA384
            case .p521: .ecdsaMessageX962SHA512
            }
            return try verify(signature: der, for: data, algorithm: algorithm)
        default:
            return false
        }
    }
}

/// Key components in and out of SSH encoding.
enum SSHKeyCodec {
    /// Reads a public key blob.
    static func readPublic(_ r: inout SSHReader) throws -> AsymmetricKey {
        let type = try r.text()
        switch type {
        case "ssh-ed25519":
            let pk = Array(try r.string())
            return try AsymmetricKey(publicKeyExternalRepresentation: pk, keyType: .ed25519)
        case "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521":
            let curve = try r.text()
            guard "ecdsa-sha2-" + curve == type else { throw KeychainError(.decode, "the ECDSA key's curve does not match its type") }
            let q = Array(try r.string())
            return try AsymmetricKey(publicKeyExternalRepresentation: q, keyType: .ec)
        case "ssh-rsa":
            let e = try r.mpint(), n = try r.mpint()
            let evp = try KeyParameters.build { bld, numbers in
                let bn = try KeyParameters.secureNumber(n)
                numbers.append(bn)
                let be = try KeyParameters.secureNumber(e)
                numbers.append(be)
                try KeyParameters.push(OSSL_PARAM_BLD_push_BN(bld, OpenSSL.cString("n"), bn))
                try KeyParameters.push(OSSL_PARAM_BLD_push_BN(bld, OpenSSL.cString("e"), be))
            } make: { try EVPKey(name: "RSA", selection: locket_evp_pkey_public(), params: $0) }
            return try AsymmetricKey(evp: evp, isPrivate: false)
        default:
            throw KeychainError(.param, "SSH key type '\(type)' is not supported (ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa)")
        }
    }

    /// (r, s) of an X9.62 DER ECDSA signature, big-endian.
    static func ecdsaComponents(_ der: [UInt8]) throws -> ([UInt8], [UInt8]) {
        try der.withUnsafeBytes { raw in
            var p: UnsafePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let sig = try OpenSSL.check(d2i_ECDSA_SIG(nil, &p, raw.count), .decode, "invalid ECDSA signature")
            defer { ECDSA_SIG_free(sig) }
            func bytes(_ bn: OpaquePointer?) -> [UInt8] {
                var out = [UInt8](repeating: 0, count: Int((BN_num_bits(bn) + 7) / 8))
                _ = BN_bn2bin(bn, &out)
                return out
            }
            return (bytes(ECDSA_SIG_get0_r(sig)), bytes(ECDSA_SIG_get0_s(sig)))
        }
    }

    /// The X9.62 DER of an SSH ECDSA signature blob (mpint r, mpint s).
    static func ecdsaDER(_ blob: [UInt8]) throws -> [UInt8] {
        try blob.withUnsafeBytes { raw in
            var reader = SSHReader(raw)
            let r = try reader.mpint(), s = try reader.mpint()
            guard reader.isAtEnd else { throw KeychainError(.decode, "trailing bytes after the ECDSA signature") }
            let sig = try OpenSSL.check(ECDSA_SIG_new(), .io, "out of memory")
            defer { ECDSA_SIG_free(sig) }
            let br = BN_bin2bn(r.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(r.count), nil)
            let bs = BN_bin2bn(s.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(s.count), nil)
            guard ECDSA_SIG_set0(sig, br, bs) == 1 else {
                BN_free(br); BN_free(bs)
                throw OpenSSL.failure(.decode, "invalid ECDSA signature")
            }
            return try OpenSSL.der("the ECDSA signature", .decode) { i2d_ECDSA_SIG(sig, $0) }
        }
    }
}

extension String {
    /// The string without trailing CR and LF.
    func trimmingTrailingNewlines() -> String {
        var s = Substring(self)
        while let last = s.last, last.isNewline { s = s.dropLast() }
        return String(s)
    }
}

/// The agent's signature for any private key, in memory or in a TPM (a
/// Secure Enclave key signs ECDSA P-256 with SHA-256, as ssh asks of it).
extension PrivateKeyOperations {
    /// The signature an SSH agent returns for `data`, in SSH wire encoding
    /// (string algorithm name, string signature blob): Ed25519; ECDSA with
    /// the curve's hash and (r, s) as two mpints; RSA PKCS #1 v1.5 with
    /// SHA-256 or SHA-512 as `flags` asks. An RSA request without either flag
    /// (SHA-1 `ssh-rsa`) is refused with errSecParam.
    public func sshSignature(for data: [UInt8], flags: UInt32 = 0) throws -> [UInt8] {
        switch keyType {
        case .ed25519:
            let sig = try sign(data, algorithm: .ed25519)
            return SSHWriter.encode { w in
                w.string("ssh-ed25519")
                w.string(sig)
            }
        case .ec:
            let curve = publicKey.curve!
            let algorithm: KeyAlgorithm = switch curve {
            case .p256: .ecdsaMessageX962SHA256
            case .p384: .ecdsaMessageX962SHA384
            case .p521: .ecdsaMessageX962SHA512
            }
            let der = try sign(data, algorithm: algorithm)
            let (r, s) = try SSHKeyCodec.ecdsaComponents(der)
            let inner = SSHWriter.encode { w in
                w.mpint(r)
                w.mpint(s)
            }
            return SSHWriter.encode { w in
                w.string("ecdsa-sha2-\(curve.sshName)")
                w.string(inner)
            }
        case .rsa:
            let (name, algorithm): (String, KeyAlgorithm)
            if flags & AsymmetricKey.sshAgentRSASHA512 != 0 {
                (name, algorithm) = ("rsa-sha2-512", .rsaSignatureMessagePKCS1v15SHA512)
            } else if flags & AsymmetricKey.sshAgentRSASHA256 != 0 {
                (name, algorithm) = ("rsa-sha2-256", .rsaSignatureMessagePKCS1v15SHA256)
            } else {
                throw KeychainError(.param, "ssh-rsa signatures (SHA-1) are not made; the client must ask for rsa-sha2-256 or rsa-sha2-512")
            }
            let sig = try sign(data, algorithm: algorithm)
            return SSHWriter.encode { w in
                w.string(name)
                w.string(sig)
            }
        case .x25519:
            _ = try publicKey.sshKeyType()
            return []
        }
    }
}
