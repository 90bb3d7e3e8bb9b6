import CCrypto
import CSodium

// OpenSSH's private key format, "openssh-key-v1" (openssh-portable's
// PROTOCOL.key), which libcrypto does not read: a header naming the cipher
// and KDF, the public keys, then the private keys (agent encoding, with
// comments, two equal check integers first and 1, 2, 3... padding last),
// encrypted with a key and IV from bcrypt_pbkdf when there is a passphrase.
// Read: ciphers none, aes128/192/256-ctr, -cbc and aes128/256-gcm@openssh.com.
// Written: none, or aes256-ctr with bcrypt_pbkdf at 16 rounds, as ssh-keygen.

enum OpenSSHKeyFile {
    static let magic = Array("openssh-key-v1\0".utf8)
    static let pemLabel = "OPENSSH PRIVATE KEY"
    /// ssh-keygen's default rounds and salt length.
    static let defaultRounds = 16
    static let saltLength = 16

    /// A cipher of the format: its libcrypto name, key, IV, block and tag lengths.
    struct Cipher {
        let name: String
        let evpName: String?
        let keyLength: Int
        let ivLength: Int
        let blockSize: Int
        let tagLength: Int

        static let all: [Cipher] = [
            Cipher(name: "none", evpName: nil, keyLength: 0, ivLength: 0, blockSize: 8, tagLength: 0),
            Cipher(name: "aes128-ctr", evpName: "AES-128-CTR", keyLength: 16, ivLength: 16, blockSize: 16, tagLength: 0),
            Cipher(name: "aes192-ctr", evpName: "AES-192-CTR", keyLength: 24, ivLength: 16, blockSize: 16, tagLength: 0),
            Cipher(name: "aes256-ctr", evpName: "AES-256-CTR", keyLength: 32, ivLength: 16, blockSize: 16, tagLength: 0),
            Cipher(name: "aes128-cbc", evpName: "AES-128-CBC", keyLength: 16, ivLength: 16, blockSize: 16, tagLength: 0),
            Cipher(name: "aes192-cbc", evpName: "AES-192-CBC", keyLength: 24, ivLength: 16, blockSize: 16, tagLength: 0),
            Cipher(name: "aes256-cbc", evpName: "AES-256-CBC", keyLength: 32, ivLength: 16, blockSize: 16, tagLength: 0),
            Cipher(name: "aes128-gcm@openssh.com", evpName: "AES-128-GCM", keyLength: 16, ivLength: 12, blockSize: 16, tagLength: 16),
            Cipher(name: "aes256-gcm@openssh.com", evpName: "AES-256-GCM", keyLength: 32, ivLength: 12, blockSize: 16, tagLength: 16),
        ]
    }

    /// A key read from the file and its comment.
    struct Entry {
        let key: AsymmetricKey
        let comment: String
    }

    /// True when the binary starts as the format does (inside the PEM armour).
    static func hasMagic(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= magic.count && zip(bytes.prefix(magic.count), magic).allSatisfy { $0 == $1 }
    }

    /// Reads the binary format; `passphrase` is asked only when the keys are encrypted.
    static func read(_ bytes: UnsafeRawBufferPointer, passphrase: () throws -> SecureBytes) throws -> [Entry] {
        guard hasMagic(bytes) else { throw KeychainError(.decode, "not an OpenSSH private key") }
        var r = SSHReader(UnsafeRawBufferPointer(rebasing: bytes[magic.count...]))
        let cipherName = try r.text()
        let kdfName = try r.text()
        let kdfOptions = try r.string()
        let count = try r.uint32()
        guard count >= 1, count <= 64 else { throw KeychainError(.decode, "an OpenSSH key file with \(count) keys") }
        var publicBlobs: [[UInt8]] = []
        for _ in 0..<count { publicBlobs.append(Array(try r.string())) }
        let encrypted = try r.string()
        guard let cipher = Cipher.all.first(where: { $0.name == cipherName }) else {
            throw KeychainError(.param, "OpenSSH keys encrypted with \(cipherName) are not supported; re-encrypt with ssh-keygen -p -Z aes256-ctr")
        }
        let tag = try r.bytes(cipher.tagLength)
        guard r.isAtEnd else { throw KeychainError(.decode, "trailing bytes after the OpenSSH private key") }
        guard encrypted.count % cipher.blockSize == 0, !encrypted.isEmpty else { throw KeychainError(.decode, "the OpenSSH private key section is truncated") }

        let plain: SecureBytes
        if cipher.evpName == nil {
            guard kdfName == "none" else { throw KeychainError(.decode, "an unencrypted OpenSSH key with KDF \(kdfName)") }
            plain = try SecureBytes(copying: encrypted)
        } else {
            guard kdfName == "bcrypt" else { throw KeychainError(.param, "OpenSSH key KDF '\(kdfName)' is not supported (bcrypt)") }
            var options = SSHReader(kdfOptions)
            let salt = try options.string()
            let rounds = try options.uint32()
            guard options.isAtEnd, rounds >= 1 else { throw KeychainError(.decode, "invalid bcrypt options in the OpenSSH key") }
            try PasswordWork.check(bcryptRounds: rounds)
            let pass = try passphrase()
            guard pass.count > 0 else { throw KeychainError(.authFailed, "the OpenSSH key is encrypted and the passphrase is empty") }
            let keyAndIV = try pass.withUnsafeBytes { try BcryptPBKDF.derive(password: $0, salt: salt, rounds: Int(rounds), length: cipher.keyLength + cipher.ivLength) }
            plain = try crypt(cipher, keyAndIV, encrypted, tag: tag, encrypt: false)
        }
        return try plain.withUnsafeBytes { section in
            var p = SSHReader(section)
            let check1 = try p.uint32(), check2 = try p.uint32()
            guard check1 == check2 else {
                throw cipher.evpName == nil ? KeychainError(.decode, "the OpenSSH private key is corrupt") : KeychainError(.authFailed, "the passphrase is not correct for this OpenSSH key")
            }
            var entries: [Entry] = []
            for blob in publicBlobs {
                let key = try readPrivate(&p)
                let comment = (try? p.text()) ?? ""
                guard try key.sshPublicKeyBlob() == blob else { throw KeychainError(.decode, "an OpenSSH private key does not match its public key") }
                entries.append(Entry(key: key, comment: comment))
            }
            var pad: UInt8 = 1
            while !p.isAtEnd {
                guard try p.byte() == pad else { throw KeychainError(.decode, "invalid padding in the OpenSSH private key") }
                pad &+= 1
            }
            return entries
        }
    }

    /// One private key in agent encoding.
    private static func readPrivate(_ r: inout SSHReader) throws -> AsymmetricKey {
        let type = try r.text()
        let evp: EVPKey
        switch type {
        case "ssh-ed25519":
            let pk = try r.string(), sk = try r.string()
            guard pk.count == 32, sk.count == 64 else { throw KeychainError(.decode, "invalid ssh-ed25519 private key") }
            evp = EVPKey(taking: try OpenSSL.check(EVP_PKEY_new_raw_private_key_ex(nil, "ED25519", nil, sk.baseAddress!.assumingMemoryBound(to: UInt8.self), 32), .decode, "invalid ssh-ed25519 private key"))
            guard try evp.publicExternalRepresentation() == Array(pk), Array(sk[32...]) == Array(pk) else {
                throw KeychainError(.decode, "the ssh-ed25519 private key does not match its public key")
            }
        case "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521":
            let curveName = try r.text()
            guard let curve = EllipticCurve.allCases.first(where: { $0.sshName == curveName }), "ecdsa-sha2-" + curveName == type else {
                throw KeychainError(.decode, "the ECDSA key's curve does not match its type")
            }
            let q = try r.string(), d = try r.mpint()
            evp = try KeyParameters.ecKeyPair(curve: curve, point: q, scalar: d)
            try evp.checkPair()
        case "ssh-rsa":
            let n = try r.mpint(), e = try r.mpint(), d = try r.mpint(), iqmp = try r.mpint(), p = try r.mpint(), q = try r.mpint()
            evp = try rsa(n: n, e: e, d: d, iqmp: iqmp, p: p, q: q)
            try evp.checkPair()
        default:
            throw KeychainError(.param, "OpenSSH key type '\(type)' is not supported (ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa)")
        }
        return try AsymmetricKey(evp: evp, isPrivate: true)
    }

    /// An RSA key from OpenSSH's components; the CRT exponents, which the
    /// format leaves out, are d mod (p-1) and d mod (q-1).
    private static func rsa(n: UnsafeRawBufferPointer, e: UnsafeRawBufferPointer, d: UnsafeRawBufferPointer,
                            iqmp: UnsafeRawBufferPointer, p: UnsafeRawBufferPointer, q: UnsafeRawBufferPointer) throws -> EVPKey {
        try KeyParameters.build { bld, keep in
            var numbers: [OpaquePointer] = []
            for value in [n, e, d, p, q, iqmp] {
                numbers.append(try KeyParameters.secureNumber(value))
                keep.append(numbers.last!)
            }
            let ctx = try OpenSSL.check(BN_CTX_secure_new(), .io, "out of memory")
            defer { BN_CTX_free(ctx) }
            for _ in 0..<4 { keep.append(try OpenSSL.check(BN_secure_new(), .io, "out of memory")) }
            let (dp, dq, p1, q1) = (keep[6], keep[7], keep[8], keep[9])
            guard BN_copy(p1, numbers[3]) != nil, BN_sub_word(p1, 1) == 1, BN_copy(q1, numbers[4]) != nil, BN_sub_word(q1, 1) == 1,
                  BN_div(nil, dp, numbers[2], p1, ctx) == 1, BN_div(nil, dq, numbers[2], q1, ctx) == 1 else {
                throw OpenSSL.failure(.decode, "invalid ssh-rsa private key")
            }
            let fields: [(StaticString, OpaquePointer)] = [("n", numbers[0]), ("e", numbers[1]), ("d", numbers[2]), ("rsa-factor1", numbers[3]), ("rsa-factor2", numbers[4]),
                                                           ("rsa-exponent1", dp), ("rsa-exponent2", dq), ("rsa-coefficient1", numbers[5])]
            for (name, bn) in fields {
                try KeyParameters.push(OSSL_PARAM_BLD_push_BN(bld, OpenSSL.cString(name), bn))
            }
        } make: { try EVPKey(name: "RSA", selection: locket_evp_pkey_keypair(), params: $0) }
    }

    /// Writes `key` in the format, encrypted when `passphrase` is given, with
    /// `rounds` of bcrypt_pbkdf (fewer only in tests: the unoptimized test
    /// build spends seconds on 16); the result is PEM text in guarded memory.
    static func write(_ key: AsymmetricKey, comment: String, passphrase: SecureBytes?, rounds: Int = defaultRounds) throws -> SecureBytes {
        let pkcs8 = try key.requirePrivate("an OpenSSH private key")
        let evp = try pkcs8.withUnsafeBytes { try EVPKey(pkcs8: $0) }
        let publicBlob = try key.sshPublicKeyBlob()
        let type = try key.sshKeyType()
        let cipher = Cipher.all.first { $0.name == (passphrase == nil ? "none" : "aes256-ctr") }!
        // The private fields, read out of libcrypto into guarded memory.
        var secrets: [SecureBytes] = []
        switch key.keyType {
        case .ed25519: secrets = [try evp.rawPrivateKey()]
        case .ec: secrets = [try evp.secretNumber("priv")]
        case .rsa:
            secrets = try ["n", "e", "d", "rsa-coefficient1", "rsa-factor1", "rsa-factor2"].map { try evp.secretNumber($0) }
        case .x25519: _ = try key.sshKeyType()
        }
        let check = UInt32.random(in: .min ... .max)
        let section = try SSHWriter.encodeSecret { w in
            w.uint32(check)
            w.uint32(check)
            w.string(type)
            switch key.keyType {
            case .ed25519:
                let pk = key.publicKeyExternalRepresentation
                w.string(pk)
                w.uint32(64)
                secrets[0].withUnsafeBytes { w.raw($0) }
                w.raw(pk)
            case .ec:
                w.string(key.curve!.sshName)
                w.string(key.publicKeyExternalRepresentation)
                secrets[0].withUnsafeBytes { w.mpint($0) }
            default:
                for s in secrets { s.withUnsafeBytes { w.mpint($0) } }
            }
            w.string(comment)
            var pad: UInt8 = 1
            while w.count % cipher.blockSize != 0 { w.byte(pad); pad += 1 }
        }
        var kdfOptions: [UInt8] = []
        let body: SecureBytes
        if let passphrase {
            guard passphrase.count > 0 else { throw KeychainError(.param, "an empty passphrase does not encrypt") }
            let salt = Sodium.random(saltLength)
            kdfOptions = SSHWriter.encode { w in
                w.string(salt)
                w.uint32(UInt32(rounds))
            }
            let keyAndIV = try passphrase.withUnsafeBytes { pass in
                try salt.withUnsafeBytes { try BcryptPBKDF.derive(password: pass, salt: $0, rounds: rounds, length: cipher.keyLength + cipher.ivLength) }
            }
            body = try section.withUnsafeBytes { try crypt(cipher, keyAndIV, $0, tag: nil, encrypt: true) }
        } else {
            body = section
        }
        let binary = try SSHWriter.encodeSecret { w in
            w.raw(magic)
            w.string(cipher.name)
            w.string(passphrase == nil ? "none" : "bcrypt")
            w.string(kdfOptions)
            w.uint32(1)
            w.string(publicBlob)
            body.withUnsafeBytes { w.string($0) }
        }
        return try PEM.encodeSecret(label: pemLabel, binary)
    }

    /// AES in the format's modes (GCM: the tag follows the section, checked on decryption).
    private static func crypt(_ cipher: Cipher, _ keyAndIV: SecureBytes, _ input: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer?, encrypt: Bool) throws -> SecureBytes {
        let evpCipher = try OpenSSL.check(EVP_CIPHER_fetch(nil, cipher.evpName!, nil), .param, "cipher \(cipher.name) is unavailable")
        defer { EVP_CIPHER_free(evpCipher) }
        let ctx = try OpenSSL.check(EVP_CIPHER_CTX_new(), .io, "out of memory")
        defer { EVP_CIPHER_CTX_free(ctx) }
        let out = try SecureBytes(count: input.count + 16)
        var total: Int32 = 0
        let ok: Bool = try keyAndIV.withUnsafeBytes { k in
            let key = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
            try OpenSSL.check(EVP_CipherInit_ex(ctx, evpCipher, nil, key, key + cipher.keyLength, encrypt ? 1 : 0), .param, "cipher \(cipher.name) failed")
            // The section is padded to the block size by the format itself.
            _ = EVP_CIPHER_CTX_set_padding(ctx, 0)
            return out.withUnsafeMutableBytes { o in
                let p = o.baseAddress!.assumingMemoryBound(to: UInt8.self)
                var n: Int32 = 0
                guard EVP_CipherUpdate(ctx, p, &n, Signer.base(input), Int32(input.count)) == 1 else { return false }
                total = n
                if let tag, cipher.tagLength > 0, !encrypt {
                    var expected = Array(tag)
                    guard EVP_CIPHER_CTX_ctrl(ctx, locket_evp_ctrl_gcm_set_tag(), Int32(cipher.tagLength), &expected) == 1 else { return false }
                }
                var final: Int32 = 0
                guard EVP_CipherFinal_ex(ctx, p + Int(n), &final) == 1 else { return false }
                total += final
                return true
            }
        }
        guard ok else {
            ERR_clear_error()
            throw KeychainError(.authFailed, "the passphrase is not correct for this OpenSSH key")
        }
        return try out.prefix(Int(total))
    }
}
