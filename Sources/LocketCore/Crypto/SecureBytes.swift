import CSodium
import Synchronization

/// Bytes in libsodium guarded memory (`sodium_malloc`: guard pages, mlock'd,
/// excluded from core dumps) that are wiped when released. Keys, passwords
/// and opened secrets live here.
public final class SecureBytes: @unchecked Sendable {
    private let base: UnsafeMutableRawPointer?
    /// The number of bytes.
    public let count: Int
    /// For a view (`slice`): the buffer whose memory it is, kept alive by it
    /// and released (wiped) by it; nil when the memory is this buffer's own.
    private let owner: SecureBytes?

    /// Zeroed guarded memory of `count` bytes; errSecAllocate when the
    /// process may not have it (its address-space limit, or no memory left).
    public init(count: Int) throws {
        self.count = count
        owner = nil
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
            guard let p = sodium_malloc(count) else { throw KeychainError(.allocate, "\(count) bytes of guarded memory could not be allocated") }
            sodium_memzero(p, count)
            base = p
        }
    }

    /// No bytes: nothing to allocate, so it cannot fail.
    public init() {
        count = 0
        base = nil
        owner = nil
    }

    /// A copy of `bytes`.
    public convenience init<Bytes: Collection<UInt8>>(copying bytes: Bytes) throws {
        try self.init(count: bytes.count)
        if let base {
            var i = 0
            for b in bytes { base.storeBytes(of: b, toByteOffset: i, as: UInt8.self); i += 1 }
        }
    }

    /// A copy of a raw buffer.
    public convenience init(copying raw: UnsafeRawBufferPointer) throws {
        try self.init(count: raw.count)
        if let base, let src = raw.baseAddress { base.copyMemory(from: src, byteCount: raw.count) }
    }

    /// `range` of `owner`'s bytes, without a copy: the memory stays guarded
    /// and is wiped when neither is left.
    private init(viewing owner: SecureBytes, _ range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= owner.count, "secure slice out of bounds")
        count = range.count
        base = range.isEmpty ? nil : owner.base.map { $0 + range.lowerBound }
        self.owner = owner.owner ?? owner
    }

    /// The bytes in `range` as a buffer of their own that shares this one's
    /// memory: an opened record's secret without a second guarded copy.
    public func slice(_ range: Range<Int>) -> SecureBytes {
        SecureBytes(viewing: self, range)
    }

    deinit {
        guard owner == nil, let base else { return }
        if !GuardedArena.small.free(base, count: count) && !GuardedArena.medium.free(base, count: count) { sodium_free(base) }
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
    public func prefix(_ n: Int) throws -> SecureBytes {
        let out = try SecureBytes(count: n)
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
/// Regions are added a chunk at a time, so a lookup locks one page, not the
/// hundred a `find --all` or a dump may need.
final class GuardedArena: @unchecked Sendable {
    /// Keys (32 bytes) and other small secrets: 64 per page, up to 512.
    static let small = GuardedArena(slotSize: 64, slotsPerChunk: 64, maximumChunks: 8, offsetInFirstRegion: 0)
    /// Attribute records and short secrets: up to 64.
    static let medium = GuardedArena(slotSize: 1024, slotsPerChunk: 8, maximumChunks: 8, offsetInFirstRegion: 64 * 64)

    /// The first chunk of both arenas, from one `sodium_malloc`: a lookup
    /// takes slots of both, and each guarded region costs six system calls
    /// (mmap, three mprotect, madvise, mlock) and its own locked pages.
    private static let firstRegion: UInt? = {
        try? Sodium.ready()
        let size = 64 * 64 + 1024 * 8
        // Not zeroed here: each slot is, when first handed out.
        return sodium_malloc(size).map { UInt(bitPattern: $0) }
    }()

    let slotSize: Int
    private let slotsPerChunk: Int
    private let maximumChunks: Int
    private let offsetInFirstRegion: Int
    private let state: Mutex<State>

    /// Addresses are kept as numbers: the Mutex hands out only Sendable
    /// values, and the slots are plain memory. Free slots are a stack, so
    /// taking and returning one is O(1) (a dump does both four times per item).
    private struct State {
        var chunks: [UInt] = []
        var free: [UInt] = []
        /// The newest region's slots not handed out yet: from `fresh` to `freshEnd`.
        var fresh: UInt = 0
        var freshEnd: UInt = 0
    }

    private init(slotSize: Int, slotsPerChunk: Int, maximumChunks: Int, offsetInFirstRegion: Int) {
        self.slotSize = slotSize
        self.slotsPerChunk = slotsPerChunk
        self.maximumChunks = maximumChunks
        self.offsetInFirstRegion = offsetInFirstRegion
        state = Mutex(State())
    }

    /// A zeroed slot, or nil when the arena is full or no region could be made.
    func allocate() -> UnsafeMutableRawPointer? {
        let address: UInt? = state.withLock { state in
            // Wiped by `free` (the rest of a slot is never written).
            if let slot = state.free.popLast() { return slot }
            if state.fresh == state.freshEnd {
                guard state.chunks.count < maximumChunks else { return nil }
                let base: UInt
                if state.chunks.isEmpty, let first = GuardedArena.firstRegion {
                    base = first + UInt(offsetInFirstRegion)
                } else {
                    try? Sodium.ready()
                    guard let region = sodium_malloc(slotSize * slotsPerChunk) else { return nil }
                    base = UInt(bitPattern: region)
                }
                state.chunks.append(base)
                state.free.reserveCapacity(slotsPerChunk * maximumChunks)
                state.fresh = base
                state.freshEnd = base + UInt(slotSize * slotsPerChunk)
            }
            // sodium_malloc fills a region with a canary byte: each slot is
            // zeroed when first handed out, not the whole region at once (a
            // lookup uses a few of a region's slots).
            let slot = state.fresh
            state.fresh += UInt(slotSize)
            sodium_memzero(UnsafeMutableRawPointer(bitPattern: slot), slotSize)
            return slot
        }
        return address.flatMap { UnsafeMutableRawPointer(bitPattern: $0) }
    }

    /// Wipes the first `count` bytes of `pointer` and releases its slot, if it
    /// is one of the arena's; the rest of a slot is never written.
    func free(_ pointer: UnsafeMutableRawPointer, count: Int) -> Bool {
        let address = UInt(bitPattern: pointer)
        let size = UInt(slotSize * slotsPerChunk)
        let wipe = min(count, slotSize)
        return state.withLock { state in
            guard state.chunks.contains(where: { address >= $0 && address < $0 + size }) else { return false }
            // Wiped before the slot is handed back, so no other thread can be given it dirty.
            sodium_memzero(UnsafeMutableRawPointer(bitPattern: address), wipe)
            state.free.append(address)
            return true
        }
    }
}
