import Glibc
import LocketSupport

/// Reads a backup (BackupFormat.md) one record at a time, verifying each
/// chunk before any record from it is returned.
///
/// The contract an importer relies on: every record `next()` returns comes
/// from chunks that authenticated, in order, under this backup's header; the
/// backup is complete and untouched only once `next()` has returned nil (the
/// FINAL chunk verified and nothing after it). Any failure throws, and every
/// later call throws the same error, so an importer that adds records inside
/// one transaction and commits only after nil keeps nothing from a damaged,
/// truncated or reordered backup.
public final class BackupReader {
    /// How the file key is protected: what `open` needs.
    public let protection: BackupProtection
    /// Records returned so far.
    public private(set) var count = 0

    private let input: BackupInput
    private let header: BackupHeader
    private var stream: SecretStream?
    private let plain: SecureBytes
    private var plainCount = 0
    private var position = 0
    private var cipher: [UInt8]
    private var chunks = 0
    private var sawFinal = false
    private var ended = false
    private var failure: KeychainError?

    /// Reads the header from `fd` (not the key: call `open` next).
    public convenience init(fd: Int32) throws {
        try self.init(input: BackupInput(fd: fd))
    }

    /// Reads the header from `fd`, whose first bytes were already read (`import -` looked at them).
    public convenience init(fd: Int32, prefix: [UInt8]) throws {
        try self.init(input: BackupInput(fd: fd, prefix: prefix))
    }

    /// Reads a backup held in memory.
    public convenience init(bytes: [UInt8]) throws {
        try self.init(input: BackupInput(bytes: bytes))
    }

    private init(input: BackupInput) throws {
        self.input = input
        header = try BackupHeader.read(from: input)
        protection = header.publicProtection
        plain = try SecureBytes(count: header.chunkSize)
        cipher = [UInt8](repeating: 0, count: header.chunkSize + SecretStream.overhead)
    }

    /// Opens a passphrase backup; errSecAuthFailed when the passphrase is wrong.
    public func open(passphrase: SecureBytes) throws {
        try start(header.fileKey(passphrase: passphrase))
    }

    /// Opens a backup sealed to recipients with one X25519 secret key;
    /// errSecAuthFailed ("for other recipients") when it was not sealed to it.
    public func open(secretKey: SecureBytes) throws {
        try start(header.fileKey(secretKey: secretKey))
    }

    /// Starts reading with the file key `open` got from the header.
    /// Internal: a test that reads thousands of copies of one header (each
    /// with a byte of its chunks flipped) derives their key once.
    func start(_ fileKey: SecureBytes) throws {
        stream = try SecretStream.pull(key: BackupHeader.streamKey(fileKey), header: header.streamHeader)
    }

    /// The next record, or nil once the backup has ended properly. Throws
    /// errSecDecode when it is truncated, altered, reordered or malformed.
    public func next() throws -> BackupRecord? {
        if let failure { throw failure }
        guard stream != nil else { throw KeychainError(.param, "the backup must be opened with its passphrase or key before reading") }
        do {
            while position == plainCount {
                if sawFinal {
                    ended = true
                    return nil
                }
                try pullChunk()
            }
            var lengthBytes = [UInt8](repeating: 0, count: 4)
            try lengthBytes.withUnsafeMutableBytes { try readExact($0) }
            let length = lengthBytes.reduce(0) { $0 << 8 | Int($1) }
            guard length > 0, length <= BackupRecordCoding.maximumRecordLength else {
                throw KeychainError(.decode, "record \(count + 1) of the backup is malformed: a length of \(length) bytes")
            }
            let record: BackupRecord
            if plainCount - position >= length {
                record = try plain.withUnsafeBytes { p in
                    try BackupRecordCoding.decode(UnsafeRawBufferPointer(rebasing: p[position..<(position + length)]), number: count + 1)
                }
                position += length
            } else {
                // The record spans chunks: gather it in guarded memory of its own.
                let whole = try SecureBytes(count: length)
                try whole.withUnsafeMutableBytes { try readExact($0) }
                record = try whole.withUnsafeBytes { try BackupRecordCoding.decode($0, number: count + 1) }
            }
            count += 1
            return record
        } catch let error as KeychainError {
            failure = error
            throw error
        }
    }

    /// Calls `body` with every record, then checks that the backup ended
    /// properly. An importer runs this inside its transaction.
    public func forEach(_ body: (BackupRecord) throws -> Void) throws {
        while let record = try next() { try body(record) }
    }

    /// Whether the FINAL chunk was verified and every record read.
    public var isComplete: Bool { ended }

    /// Fills `out` from the decrypted stream, pulling chunks as needed.
    private func readExact(_ out: UnsafeMutableRawBufferPointer) throws {
        var offset = 0
        while offset < out.count {
            if position == plainCount {
                guard !sawFinal else {
                    throw KeychainError(.decode, "record \(count + 1) of the backup is malformed: it is cut short by the end of the backup")
                }
                try pullChunk()
                continue
            }
            let n = min(plainCount - position, out.count - offset)
            plain.withUnsafeBytes { p in (out.baseAddress! + offset).copyMemory(from: p.baseAddress! + position, byteCount: n) }
            position += n
            offset += n
        }
    }

    /// Reads, verifies and decrypts the next chunk.
    private func pullChunk() throws {
        guard let stream else { return }
        let number = chunks + 1
        let lengthBytes = try input.read(4)
        guard lengthBytes.count == 4 else {
            throw KeychainError(.decode, chunks == 0
                ? "the backup is truncated: it ends before its first chunk"
                : "the backup is truncated: it ends after chunk \(chunks), before its final chunk")
        }
        let length = lengthBytes.reduce(0) { $0 << 8 | Int($1) }
        guard length >= SecretStream.overhead, length <= header.chunkSize + SecretStream.overhead else {
            throw KeychainError(.decode, "the backup was altered: chunk \(number) has an impossible length")
        }
        let got = try cipher.withUnsafeMutableBytes { try input.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<length])) }
        guard got == length else { throw KeychainError(.decode, "the backup is truncated: it ends inside chunk \(number)") }
        let additional = chunks == 0 ? header.bytes : []
        let result = cipher.withUnsafeBytes { c in
            plain.withUnsafeMutableBytes { p in
                stream.pull(UnsafeRawBufferPointer(rebasing: c[0..<length]), additional: additional, into: p)
            }
        }
        guard let (plaintextCount, tag) = result else {
            throw KeychainError(.decode, chunks == 0
                ? "the backup was altered: its header or first chunk does not authenticate"
                : "the backup was altered: chunk \(number) does not authenticate (changed, reordered, duplicated or from another backup)")
        }
        chunks += 1
        plainCount = plaintextCount
        position = 0
        if tag == SecretStream.tagFinal {
            sawFinal = true
            guard try input.read(1).isEmpty else { throw KeychainError(.decode, "the backup was altered: bytes follow its final chunk") }
        } else {
            // A writer fills every chunk but the last; anything else is not locket's.
            guard tag == SecretStream.tagMessage, plaintextCount == header.chunkSize else {
                throw KeychainError(.decode, "the backup is malformed: chunk \(number) is not a full chunk")
            }
        }
    }
}

/// Buffered reads from a file descriptor, or from bytes in memory.
final class BackupInput {
    private let fd: Int32
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var eof = false

    init(fd: Int32) {
        self.fd = fd
        buffer = [UInt8](repeating: 0, count: 1 << 17)
    }

    convenience init(fd: Int32, prefix: [UInt8]) {
        self.init(fd: fd)
        buffer.replaceSubrange(0..<prefix.count, with: prefix)
        end = prefix.count
    }

    init(bytes: [UInt8]) {
        fd = -1
        buffer = bytes
        end = bytes.count
        eof = true
    }

    /// Up to `n` bytes; fewer only at the end of the input.
    func read(_ n: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        let got = try out.withUnsafeMutableBytes { try read(into: $0) }
        out.removeLast(n - got)
        return out
    }

    /// Fills `out` as far as the input goes; returns how many bytes it got.
    func read(into out: UnsafeMutableRawBufferPointer) throws -> Int {
        var offset = 0
        while offset < out.count {
            if start == end {
                if eof { break }
                try refill()
                continue
            }
            let n = min(end - start, out.count - offset)
            buffer.withUnsafeBytes { (out.baseAddress! + offset).copyMemory(from: $0.baseAddress! + start, byteCount: n) }
            start += n
            offset += n
        }
        return offset
    }

    private func refill() throws {
        start = 0
        end = 0
        let n = try buffer.withUnsafeMutableBytes { raw in
            try valueOrErrno("read") { Glibc.read(fd, raw.baseAddress, raw.count) }.get { KeychainError(.io, "cannot read the backup: \($0)") }
        }
        if n == 0 { eof = true }
        end = n
    }
}

extension BackupReader {
    /// The bytes every backup starts with, for telling a backup from other files without reading it.
    public static var magic: [UInt8] { BackupHeader.magic }
}
