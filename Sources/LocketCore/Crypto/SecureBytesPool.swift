/// Many small secrets held at once in a few large guarded buffers.
///
/// Each SecureBytes of its own is at least one guarded mapping with guard
/// pages around it; the kernel's map count (vm.max_map_count, 65,530 by
/// default) ends that at some 20,000 live secrets, which a migrated vault of
/// 100,000 logins passes. The pool copies each secret into 1 MiB chunks and
/// hands out a fresh SecureBytes per secret only when it is used.
public final class SecureBytesPool {
    private static let chunkSize = 1 << 20
    private var chunks: [SecureBytes] = []
    private var used = 0
    private var spans: [(chunk: Int, offset: Int, count: Int)] = []

    public init() {}

    /// How many secrets the pool holds.
    public var count: Int { spans.count }

    /// Copies `secret` into the pool; its index is the count before the call.
    public func append(_ secret: SecureBytes) throws {
        if secret.count > Self.chunkSize {
            chunks.append(try secret.withUnsafeBytes { try SecureBytes(copying: $0) })
            spans.append((chunks.count - 1, 0, secret.count))
            used = Self.chunkSize
            return
        }
        if chunks.isEmpty || used + secret.count > Self.chunkSize {
            chunks.append(try SecureBytes(count: Self.chunkSize))
            used = 0
        }
        let offset = used
        chunks[chunks.count - 1].withUnsafeMutableBytes { chunk in
            secret.withUnsafeBytes { source in
                if let from = source.baseAddress { (chunk.baseAddress! + offset).copyMemory(from: from, byteCount: source.count) }
            }
        }
        spans.append((chunks.count - 1, offset, secret.count))
        used += secret.count
    }

    /// A copy of the secret at `index`, in guarded memory of its own.
    public subscript(index: Int) -> SecureBytes { get throws {
        let span = spans[index]
        return try chunks[span.chunk].withUnsafeBytes { chunk in
            try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: chunk[span.offset..<span.offset + span.count]))
        }
    } }
}
