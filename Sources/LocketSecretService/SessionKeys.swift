import LocketCore
import LocketSupport

/// The AES keys of the DH sessions, 16 bytes each, in one guarded region
/// (issue 44). A key of its own in guarded memory (`sodium_malloc`) costs
/// its pages and four memory mappings: ~16,900 sessions exhausted the
/// process's mappings and the provider aborted. Here `Limits.sessions`
/// keys take 64 KiB and one mapping, allocated with the first DH session.
/// A slot is wiped when its session ends. Used by the loop's thread only.
final class SessionKeys {
    static let keyLength = 16
    private let capacity: Int
    private var region: SecureBytes?
    private var free: [Int] = []
    private var fresh = 0

    init(capacity: Int) { self.capacity = capacity }

    /// A zeroed slot, or nil when every slot is taken or the region can't be had.
    func take() -> Int? {
        if region == nil { region = try? SecureBytes(count: capacity * SessionKeys.keyLength) }
        guard region != nil else { return nil }
        if let slot = free.popLast() { return slot }
        guard fresh < capacity else { return nil }
        fresh += 1
        return fresh - 1
    }

    /// Wipes `slot` and makes it free again.
    func give(_ slot: Int) {
        withKey(slot) { wipe($0) }
        free.append(slot)
    }

    /// The key bytes of `slot`.
    func withKey<R>(_ slot: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try region!.withUnsafeMutableBytes { all in
            try body(UnsafeMutableRawBufferPointer(rebasing: all[(slot * SessionKeys.keyLength)..<((slot + 1) * SessionKeys.keyLength)]))
        }
    }
}
