import CSodium
import LocketSupport

/// How a backup's file key is protected (BackupFormat.md, "Header").
public enum BackupProtection: Sendable, Equatable {
    /// Wrapped under a key derived from a passphrase with Argon2id.
    case passphrase(KDFParameters)
    /// Sealed to each of `count` X25519 public keys.
    case recipients(count: Int)
}

/// The authenticated prefix of a backup file: magic, version, chunk size,
/// how the file key is protected, and the secretstream header.
struct BackupHeader {
    static let magic: [UInt8] = Array("LOCKETBK".utf8)
    static let version: UInt16 = 1
    static let modePassphrase: UInt8 = 1
    static let modeRecipients: UInt8 = 2
    static let kdfArgon2id13: UInt8 = 1
    static let minimumChunkSize = 1024
    static let maximumChunkSize = 1 << 20
    static let maximumRecipients = 1024
    /// A header may ask for at most this much Argon2id memory: a hostile
    /// backup must not make `import` allocate the machine (libsodium's
    /// SENSITIVE level is 1 GiB).
    static let maximumMemLimit: UInt64 = 1 << 30
    static let recipientIDBytes = 4
    static var sealedKeyBytes: Int { SealedBox.sealBytes + fileKeyBytes }
    static let fileKeyBytes = 32
    static let wrappedKeyBytes = SecretBox.overhead + fileKeyBytes

    enum Protection {
        case passphrase(KDFParameters, wrappedKey: [UInt8])
        case recipients([(id: [UInt8], sealedKey: [UInt8])])
    }

    var chunkSize: Int
    var protection: Protection
    var streamHeader: [UInt8]
    /// Every byte of the header as written: the first chunk's additional data.
    var bytes: [UInt8]

    var publicProtection: BackupProtection {
        switch protection {
        case .passphrase(let parameters, _): .passphrase(parameters)
        case .recipients(let entries): .recipients(count: entries.count)
        }
    }

    /// Lays out a header (the writer's side).
    init(chunkSize: Int, protection: Protection, streamHeader: [UInt8]) {
        self.chunkSize = chunkSize
        self.protection = protection
        self.streamHeader = streamHeader
        var out = BackupHeader.magic
        out.append(UInt8(BackupHeader.version >> 8)); out.append(UInt8(truncatingIfNeeded: BackupHeader.version))
        BigEndian.append(UInt32(chunkSize), to: &out)
        switch protection {
        case .passphrase(let p, let wrapped):
            out.append(BackupHeader.modePassphrase)
            out.append(BackupHeader.kdfArgon2id13)
            BackupRecordCoding.put64(p.opsLimit, &out)
            BackupRecordCoding.put64(p.memLimit, &out)
            out += p.salt
            out += wrapped
        case .recipients(let entries):
            out.append(BackupHeader.modeRecipients)
            out.append(UInt8(entries.count >> 8)); out.append(UInt8(truncatingIfNeeded: entries.count))
            for entry in entries { out += entry.id + entry.sealedKey }
        }
        out += streamHeader
        bytes = out
    }

    /// Reads and checks a header (the reader's side). Bytes that are not a
    /// header are errSecDecode with a message saying what they are not.
    static func read(from input: BackupInput) throws -> BackupHeader {
        var bytes: [UInt8] = []
        func take(_ n: Int) throws -> [UInt8] {
            let got = try input.read(n)
            bytes += got
            guard got.count == n else {
                if bytes.count < magic.count, !bytes.isEmpty, !magic.starts(with: bytes) { throw notBackup() }
                throw KeychainError(.decode, bytes.isEmpty ? "the backup is empty" : "the backup is truncated: it ends inside its header")
            }
            return got
        }
        func notBackup() -> KeychainError { KeychainError(.decode, "this is not a locket backup (it does not start with LOCKETBK)") }
        func malformed(_ why: String) -> KeychainError { KeychainError(.decode, "the backup's header is malformed: \(why)") }

        guard try take(magic.count) == magic else { throw notBackup() }
        let version = UInt16(BigEndian.value(try take(2)))
        guard version != 0 else { throw malformed("format version 0") }
        guard version <= BackupHeader.version else {
            throw KeychainError(.decode, "the backup was made by a newer locket (backup format \(version); this locket reads format \(BackupHeader.version))")
        }
        let chunkSize = Int(BigEndian.value(try take(4)))
        guard chunkSize >= minimumChunkSize, chunkSize <= maximumChunkSize else { throw malformed("a chunk size of \(chunkSize) bytes") }
        let protection: Protection
        switch try take(1)[0] {
        case modePassphrase:
            guard try take(1)[0] == kdfArgon2id13 else { throw malformed("an unknown key-derivation function") }
            let parameters = KDFParameters(opsLimit: BigEndian.value(try take(8)), memLimit: BigEndian.value(try take(8)),
                                           salt: try take(Int(crypto_pwhash_SALTBYTES)))
            guard parameters.isValid, parameters.memLimit <= maximumMemLimit else { throw malformed("Argon2id limits out of range") }
            protection = .passphrase(parameters, wrappedKey: try take(wrappedKeyBytes))
        case modeRecipients:
            let count = Int(BigEndian.value(try take(2)))
            guard count >= 1, count <= maximumRecipients else { throw malformed("\(count) recipients") }
            var entries: [(id: [UInt8], sealedKey: [UInt8])] = []
            for _ in 0..<count { entries.append((try take(recipientIDBytes), try take(sealedKeyBytes))) }
            protection = .recipients(entries)
        case let mode:
            throw malformed("an unknown protection mode \(mode)")
        }
        let streamHeader = try take(SecretStream.headerBytes)
        var header = BackupHeader(chunkSize: chunkSize, protection: protection, streamHeader: streamHeader)
        header.bytes = bytes
        return header
    }

    /// The short id that lets a reader find its entry without trying them all.
    static func recipientID(_ publicKey: [UInt8]) -> [UInt8] {
        var message = Array("locket backup recipient".utf8) + publicKey
        var out = [UInt8](repeating: 0, count: recipientIDBytes)
        _ = crypto_generichash(&out, recipientIDBytes, &message, UInt64(message.count), nil, 0)
        return out
    }

    /// The key the secretstream runs under, derived from the file key.
    static func streamKey(_ fileKey: SecureBytes) throws -> SecureBytes {
        try KeyDerivation.derive(fileKey, KeyDerivation.Context("locket backup stream"))
    }

    /// Opens the file key with a passphrase; errSecAuthFailed when it does not open.
    func fileKey(passphrase: SecureBytes) throws -> SecureBytes {
        guard case .passphrase(let parameters, let wrapped) = protection else {
            throw KeychainError(.param, "this backup is sealed to recipients' keys, not protected by a passphrase")
        }
        let kek = try PasswordHash.deriveKEK(password: passphrase, parameters: parameters)
        do {
            return try SecretBox.open(wrapped, key: kek, what: "the backup's file key")
        } catch {
            throw KeychainError(.authFailed, "the passphrase is not correct for this backup (or its header was altered)")
        }
    }

    /// Opens the file key with an X25519 secret key: errSecAuthFailed when
    /// the backup was sealed to other keys, errSecDecode when this key's
    /// entry was altered.
    func fileKey(secretKey: SecureBytes) throws -> SecureBytes {
        guard case .recipients(let entries) = protection else {
            throw KeychainError(.param, "this backup is protected by a passphrase, not sealed to recipients' keys")
        }
        guard secretKey.count == crypto_box_secretkeybytes() else {
            throw KeychainError(.param, "an X25519 secret key is \(crypto_box_secretkeybytes()) bytes, not \(secretKey.count)")
        }
        let publicKey = try BackupRecipients.publicKey(secretKey: secretKey)
        let id = BackupHeader.recipientID(publicKey)
        func open(_ sealed: [UInt8]) throws -> SecureBytes? { try SealedBox.open(sealed, publicKey: publicKey, secretKey: secretKey) }
        let matching = entries.filter { $0.id == id }
        for entry in matching {
            if let fileKey = try open(entry.sealedKey) { return fileKey }
        }
        // An entry whose id was altered still opens: say "altered", not "for other recipients".
        for entry in entries where try entry.id != id && open(entry.sealedKey) != nil {
            throw KeychainError(.decode, "the backup's header was altered (a recipient entry does not match its key)")
        }
        if !matching.isEmpty { throw KeychainError(.decode, "the backup's header was altered (this key's entry does not open)") }
        throw KeychainError(.authFailed, "this backup is for other recipients: none of its \(entries.count) entries is for this key")
    }
}

/// X25519 keys as backups use them: raw 32-byte keys (`crypto_box`).
public enum BackupRecipients {
    /// The size of a public or secret key.
    public static let keyBytes = 32

    /// The public key of an X25519 secret key.
    public static func publicKey(secretKey: SecureBytes) throws -> [UInt8] {
        try Sodium.ready()
        guard secretKey.count == keyBytes else { throw KeychainError(.param, "an X25519 secret key is \(keyBytes) bytes, not \(secretKey.count)") }
        var out = [UInt8](repeating: 0, count: keyBytes)
        let rc = secretKey.withUnsafeBytes { crypto_scalarmult_base(&out, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        guard rc == 0 else { throw KeychainError(.param, "not a usable X25519 secret key") }
        return out
    }
}
