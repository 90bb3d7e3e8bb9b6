import CSodium
import Synchronization

/// Bytes in libsodium guarded memory (`sodium_malloc`: guard pages, mlock'd,
/// excluded from core dumps) that are wiped when released. Keys, passwords
/// and opened secrets live here.
public final class SecureBytes: @unchecked Sendable {
    private let base: UnsafeMutableRawPointer?
    /// The number of bytes.
    public let count: Int

    /// Zeroed guarded memory of `count` bytes.
    public init(count: Int) {
        self.count = count
        // sodium_malloc aborts until sodium_init has run.
        try? Sodium.ready()
        if count == 0 {
            base = nil
        } else if count <= GuardedArena.small.slotSize, let slot = GuardedArena.small.allocate() {
            base = slot
        } else if count <= GuardedArena.medium.slotSize, let slot = GuardedArena.medium.allocate() {
            // Opened attribute records: a dump opens one per item.
            base = slot
        } else {
            guard let p = sodium_malloc(count) else { fatalError("locket: out of guarded memory") }
            sodium_memzero(p, count)
            base = p
        }
    }

    /// A copy of `bytes`.
    public convenience init<Bytes: Collection<UInt8>>(copying bytes: Bytes) {
        self.init(count: bytes.count)
        if let base {
            var i = 0
            for b in bytes { base.storeBytes(of: b, toByteOffset: i, as: UInt8.self); i += 1 }
        }
    }

    /// A copy of a raw buffer.
    public convenience init(copying raw: UnsafeRawBufferPointer) {
        self.init(count: raw.count)
        if let base, let src = raw.baseAddress { base.copyMemory(from: src, byteCount: raw.count) }
    }

    deinit {
        guard let base else { return }
        if !GuardedArena.small.free(base) && !GuardedArena.medium.free(base) { sodium_free(base) }
    }

    /// Read access to the bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Write access to the bytes.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: base, count: count))
    }

    /// The first `n` bytes as a new buffer.
    public func prefix(_ n: Int) -> SecureBytes {
        let out = SecureBytes(count: n)
        if n > 0 { out.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: base!, byteCount: n) } }
        return out
    }

    /// A plain array copy, for values that are not secret once opened
    /// (attributes) or must leave as ordinary bytes (output). Wipe it after use.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Constant-time equality.
    public func constantTimeEquals(_ other: SecureBytes) -> Bool {
        withUnsafeBytes { a in other.withUnsafeBytes { b in Sodium.equal(a, b) } }
    }
}

/// Small secrets share guarded, locked regions of fixed slots: a
/// `sodium_malloc` per value costs half a dozen system calls (mmap, mprotect,
/// mlock, ...), a lookup handles a dozen keys and a dump two records per item.
final class GuardedArena: @unchecked Sendable {
    /// Keys (32 bytes) and other small secrets.
    static let small = GuardedArena(slotSize: 64, slotCount: 512)
    /// Attribute records and short secrets.
    static let medium = GuardedArena(slotSize: 1024, slotCount: 64)

    let slotSize: Int
    private let slotCount: Int
    private let region: UnsafeMutableRawPointer?
    private let used: Mutex<[Bool]>

    private init(slotSize: Int, slotCount: Int) {
        try? Sodium.ready()
        self.slotSize = slotSize
        self.slotCount = slotCount
        used = Mutex([Bool](repeating: false, count: slotCount))
        region = sodium_malloc(slotSize * slotCount)
        if let region { sodium_memzero(region, slotSize * slotCount) }
    }

    /// A zeroed slot, or nil when the arena is full or could not be made.
    func allocate() -> UnsafeMutableRawPointer? {
        guard let region else { return nil }
        let index: Int? = used.withLock { slots in
            guard let i = slots.firstIndex(of: false) else { return nil }
            slots[i] = true
            return i
        }
        return index.map { region + $0 * slotSize }
    }

    /// Wipes and releases `pointer` if it is one of the arena's slots.
    func free(_ pointer: UnsafeMutableRawPointer) -> Bool {
        guard let region, pointer >= region, pointer < region + slotSize * slotCount else { return false }
        let index = (pointer - region) / slotSize
        sodium_memzero(pointer, slotSize)
        used.withLock { $0[index] = false }
        return true
    }
}
