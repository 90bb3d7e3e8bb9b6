import CSodium
import Glibc
import LocketSupport

/// Writes a backup (BackupFormat.md) to a file descriptor, one record at a
/// time: records fill a guarded chunk buffer that is encrypted and written
/// whenever it is full, so memory stays flat for any number of items. Nothing
/// is readable until `finish()` has written the FINAL chunk; a backup whose
/// writer stopped early is refused by every reader as truncated.
public final class BackupWriter {
    /// The plaintext size of every chunk but the last.
    public static let defaultChunkSize = 65_536

    private let fd: Int32
    private let stream: SecretStream
    private let chunkSize: Int
    private let plain: SecureBytes
    private var filled = 0
    private var output: [UInt8]
    /// The header, bound into the first chunk as its additional data.
    private var firstAdditional: [UInt8]?
    private var head: [UInt8] = []
    private var finished = false
    /// Records written so far.
    public private(set) var count = 0

    /// A backup whose file key is wrapped under `passphrase` (Argon2id at `cost`, with a fresh salt).
    public convenience init(fd: Int32, passphrase: SecureBytes, cost: KDFCost = .moderate,
                            chunkSize: Int = BackupWriter.defaultChunkSize) throws {
        let parameters = KDFParameters(cost: cost)
        guard parameters.isValid, parameters.memLimit <= BackupHeader.maximumMemLimit else {
            throw KeychainError(.param, "the Argon2id limits are out of range for a backup")
        }
        let fileKey = try SecureBytes(copying: Sodium.random(BackupHeader.fileKeyBytes))
        let kek = try PasswordHash.deriveKEK(password: passphrase, parameters: parameters)
        let wrapped = SecretBox.seal(fileKey, key: kek)
        try self.init(fd: fd, fileKey: fileKey, chunkSize: chunkSize) { .passphrase(parameters, wrappedKey: wrapped) }
    }

    /// A backup whose file key is sealed (`crypto_box_seal`) to each X25519
    /// public key; any one of the matching secret keys opens it. The same key
    /// given twice is sealed to once.
    public convenience init(fd: Int32, recipients: [[UInt8]], chunkSize: Int = BackupWriter.defaultChunkSize) throws {
        try Sodium.ready()
        var unique: [[UInt8]] = []
        for key in recipients where !unique.contains(key) { unique.append(key) }
        guard !unique.isEmpty else { throw KeychainError(.param, "a backup needs at least one recipient") }
        guard unique.count <= BackupHeader.maximumRecipients else {
            throw KeychainError(.param, "a backup can have at most \(BackupHeader.maximumRecipients) recipients")
        }
        let fileKey = try SecureBytes(copying: Sodium.random(BackupHeader.fileKeyBytes))
        var entries: [(id: [UInt8], sealedKey: [UInt8])] = []
        for key in unique {
            guard key.count == BackupRecipients.keyBytes else {
                throw KeychainError(.param, "an X25519 public key is \(BackupRecipients.keyBytes) bytes, not \(key.count)")
            }
            let sealed: [UInt8]
            do {
                sealed = try SealedBox.seal(fileKey, to: key)
            } catch let error as KeychainError where error.code == .param {
                // libsodium refuses keys of small order (all-zero shared secret).
                throw KeychainError(.param, "a recipient is not a valid X25519 public key")
            }
            entries.append((BackupHeader.recipientID(key), sealed))
        }
        try self.init(fd: fd, fileKey: fileKey, chunkSize: chunkSize) { .recipients(entries) }
    }

    private init(fd: Int32, fileKey: SecureBytes, chunkSize: Int, protection: () -> BackupHeader.Protection) throws {
        guard chunkSize >= BackupHeader.minimumChunkSize, chunkSize <= BackupHeader.maximumChunkSize else {
            throw KeychainError(.param, "a backup's chunk size must be from \(ByteSize.text(BackupHeader.minimumChunkSize)) to \(ByteSize.text(BackupHeader.maximumChunkSize))")
        }
        self.fd = fd
        self.chunkSize = chunkSize
        let streamKey = try BackupHeader.streamKey(fileKey)
        let (stream, streamHeader) = try SecretStream.push(key: streamKey)
        self.stream = stream
        plain = try SecureBytes(count: chunkSize)
        output = [UInt8](repeating: 0, count: 4 + chunkSize + SecretStream.overhead)
        let header = BackupHeader(chunkSize: chunkSize, protection: protection(), streamHeader: streamHeader)
        firstAdditional = header.bytes
        head.reserveCapacity(1024)
        try header.bytes.withUnsafeBytes { try write($0) }
    }

    /// Appends one record. errSecParam when the record can't be in a backup
    /// (an attribute its class does not have, a value over the limits).
    public func append(_ record: BackupRecord) throws {
        precondition(!finished, "append after finish")
        try BackupRecordCoding.validate(record)
        head.removeAll(keepingCapacity: true)
        let freeForm = BackupRecordCoding.encodeFreeForm(record)
        BackupRecordCoding.encodeHead(record, freeForm: freeForm, into: &head)
        try head.withUnsafeBytes { try put($0) }
        try record.data.withUnsafeBytes { try put($0) }
        if let extra = record.extra {
            var tail: [UInt8] = [1]
            BigEndian.append(UInt32(extra.count), to: &tail)
            try tail.withUnsafeBytes { try put($0) }
            try extra.withUnsafeBytes { try put($0) }
        } else {
            var none: UInt8 = 0
            try withUnsafeBytes(of: &none) { try put($0) }
        }
        if var freeForm {
            defer { wipe(&freeForm) }
            try freeForm.withUnsafeBytes { try put($0) }
        }
        count += 1
    }

    /// Writes the FINAL chunk. Until this returns, the file is not a complete backup.
    public func finish() throws {
        precondition(!finished, "finish called twice")
        finished = true
        try flush(tag: SecretStream.tagFinal)
    }

    /// Copies bytes into the chunk buffer, writing a chunk each time it fills
    /// with more to come: every chunk before the last is exactly `chunkSize`.
    private func put(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            if filled == chunkSize { try flush(tag: SecretStream.tagMessage) }
            let n = min(chunkSize - filled, bytes.count - offset)
            plain.withUnsafeMutableBytes { p in
                (p.baseAddress! + filled).copyMemory(from: bytes.baseAddress! + offset, byteCount: n)
            }
            filled += n
            offset += n
        }
    }

    private func flush(tag: UInt8) throws {
        let length = filled + SecretStream.overhead
        let additional = firstAdditional ?? []
        firstAdditional = nil
        output.withUnsafeMutableBytes { out in
            BigEndian.store(UInt32(length), into: out, at: 0)
            plain.withUnsafeBytes { p in
                stream.push(UnsafeRawBufferPointer(rebasing: p[0..<filled]), additional: additional, tag: tag,
                            into: UnsafeMutableRawBufferPointer(rebasing: out[4...]))
            }
        }
        plain.withUnsafeMutableBytes { wipe(UnsafeMutableRawBufferPointer(rebasing: $0[0..<filled])) }
        filled = 0
        try output.withUnsafeBytes { try write(UnsafeRawBufferPointer(rebasing: $0[0..<(4 + length)])) }
    }

    private func write(_ bytes: UnsafeRawBufferPointer) throws {
        try writeAll(fd, bytes).get { KeychainError(.io, "cannot write the backup: \($0)") }
    }
}
