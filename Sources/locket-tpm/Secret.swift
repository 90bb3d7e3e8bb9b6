import CLocketTPM

/// Bytes that must not outlive the request: a buffer of its own, never
/// grown, wiped before it is freed.
final class Secret {
    let bytes: UnsafeMutableRawBufferPointer
    private(set) var count: Int

    init(capacity: Int) {
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 16)
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
        count = 0
    }

    /// A copy of `source`, which must fit.
    convenience init(copying source: UnsafeRawBufferPointer, capacity: Int) {
        self.init(capacity: capacity)
        precondition(source.count <= capacity)
        if let base = source.baseAddress { bytes.baseAddress!.copyMemory(from: base, byteCount: source.count) }
        count = source.count
    }

    /// Sets how many bytes of the buffer are in use (after C filled it).
    func setCount(_ value: Int) {
        precondition(value <= bytes.count)
        count = value
    }

    var pointer: UnsafePointer<UInt8> { UnsafePointer(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)) }

    /// The value as the C layer takes it (size 0: no authorization value).
    var auth: locket_tpm_auth { locket_tpm_auth(bytes: pointer, size: count) }

    deinit {
        locket_tpm_wipe(bytes.baseAddress, bytes.count)
        bytes.deallocate()
    }
}

extension Array where Element == UInt8 {
    /// Zeroes the array in place.
    mutating func wipe() {
        withUnsafeMutableBytes { locket_tpm_wipe($0.baseAddress, $0.count) }
    }
}
