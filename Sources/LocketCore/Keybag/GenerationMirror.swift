import Glibc
import LocketSupport

/// The highest write generation this device has seen of one keychain file
/// (SPEC §7 "Rollback"): `$XDG_STATE_HOME/locket/ID-PATHDIGEST.generation`,
/// 0600, next to the device secret, authenticated with a key derived from the
/// device key, the keychain's id and its path.
///
/// Per file, not per keychain id: a copy kept beside the original (a backup
/// opened with `-k`) shares the id, and its writes must not make the original
/// look rolled back. What the mirror is for is a file put back at the same path.
///
/// Format: `LKG1`, the generation (8 bytes, big-endian), a 16-byte MAC of both.
///
/// Every failure here is ignored, by design: a mirror that is missing,
/// unreadable or fails its MAC counts as absent (a new device), and the next
/// look rewrites it. Refusing the keychain instead would buy nothing, because
/// whoever can edit the mirror can delete it; and a device key made anew (a
/// lost device secret) would otherwise lock out every keychain. Updates are
/// in place under flock(2), never lowering the value; no fsync, because a lost
/// update only weakens detection and never refuses a good keychain, and the
/// keychain's own commit reaches the disk first (synchronous=FULL). Only a
/// lowering (`set`, accepting a rollback) is synced: lost, it would refuse
/// the keychain again (issue 30's power-loss check).
package struct GenerationMirror {
    private static let magic: [UInt8] = Array("LKG1".utf8)
    private static let length = 4 + 8 + 16

    /// nil when there is no state directory to keep it in.
    let path: String?
    private let key: SecureBytes

    init(environment: Environment, keychainID: [UInt8], keychainPath: String, device: SecureBytes) throws {
        try self.init(environment: environment, keychainID: keychainID, place: GenerationMirror.absolute(keychainPath), key: device)
    }

    /// The mirror of the keychain at `place` (a path made absolute, a URL),
    /// authenticated with a key derived from `device` (the device key, or
    /// for a storage without device wraps a key derived from the blind-index key).
    package init(environment: Environment, keychainID: [UInt8], place file: String, key device: SecureBytes) throws {
        let name = Hex.encode(keychainID) + "-" + Hex.encode(KeyDerivation.digest(id: keychainID,
                                                                                 KeyDerivation.Context("locket.generation-mirror.path.v1").with(file)).prefix(8))
        path = (try? environment.stateDirectory()).map { $0 + "/locket/" + name + ".generation" }
        key = try KeyDerivation.derive(device, KeyDerivation.Context("locket.generation-mirror.v1").with(keychainID).with(file))
    }

    /// `path` made absolute against the working directory, without `.` and
    /// empty components (symbolic links are not resolved: that would cost a
    /// lookup per component on every command).
    static func absolute(_ path: String) -> String {
        // The common case (every NAME, an absolute -k): nothing to do, and no
        // String surgery on the read path.
        if isNormalAbsolute(path) { return path }
        var full = path
        if !path.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            if getcwd(&buffer, buffer.count) != nil {
                full = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } + "/" + path
            }
        }
        return "/" + full.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
    }

    /// Starts with `/` and has no empty or `.` component, in one pass over the bytes.
    private static func isNormalAbsolute(_ path: String) -> Bool {
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        var previous: UInt8 = 0, beforePrevious: UInt8 = 0
        var first = true
        for byte in path.utf8 {
            if first {
                guard byte == slash else { return false }
                first = false
            } else if byte == slash && (previous == slash || (previous == dot && beforePrevious == slash)) {
                return false
            }
            beforePrevious = previous
            previous = byte
        }
        return !first && !(previous == dot && beforePrevious == slash) && !(previous == slash && beforePrevious != 0)
    }

    private func record(_ generation: UInt64) -> [UInt8] {
        var out = GenerationMirror.magic
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: generation >> UInt64(shift))) }
        out += KeyDerivation.digest(key, KeyDerivation.Context("locket.generation-mirror.record.v1").with(out))
        return out
    }

    private func decode(_ bytes: [UInt8]) -> UInt64? {
        guard bytes.count == GenerationMirror.length, Array(bytes.prefix(4)) == GenerationMirror.magic else { return nil }
        let generation = bytes[4..<12].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let expected = record(generation)
        return expected.withUnsafeBytes { e in bytes.withUnsafeBytes { Sodium.equal(e, $0) } } ? generation : nil
    }

    /// The generation on record; nil when absent or not valid.
    func read() -> UInt64? {
        guard let path, let file = try? PrivateFile(path, rule: .unwritableFile) else { return nil }
        return read(file)
    }

    private func read(_ file: borrowing PrivateFile) -> UInt64? {
        var buffer = [UInt8](repeating: 0, count: GenerationMirror.length + 1)
        guard case .success(let n) = buffer.withUnsafeMutableBytes({ file.read(into: $0, at: 0) }), n == GenerationMirror.length else { return nil }
        return decode(Array(buffer.prefix(n)))
    }

    /// Raises the record to `generation` unless it is already higher, and
    /// returns the value on record afterwards (nil if it could not be kept).
    @discardableResult
    func raise(to generation: UInt64) -> UInt64? { update { current in max(current ?? 0, generation) } }

    /// Sets the record to `generation`, even lower: accepting a rollback.
    /// Synced, unlike a raise: a lowering lost to a power loss would refuse
    /// the keychain again after `restore` said it was accepted.
    @discardableResult
    func set(_ generation: UInt64) -> UInt64? { update(durable: true) { _ in generation } }

    private func update(durable: Bool = false, _ next: (UInt64?) -> UInt64) -> UInt64? {
        guard let path else { return nil }
        try? FileIO.makeDirectories(FileIO.directory(of: path))
        guard let file = try? PrivateFile(path, access: O_RDWR, creating: 0o600, rule: .unwritableFile) else { return nil }
        // Two writers finishing in either order must leave the higher value.
        guard case .success = nothingOrErrno("flock", { flock(file.descriptor, LOCK_EX) }) else { return nil }
        let current = read(file)
        let value = next(current)
        if value == current { return value }
        let bytes = record(value)
        guard case .success = bytes.withUnsafeBytes({ file.write($0, at: 0) }),
              case .success = nothingOrErrno("ftruncate", { ftruncate(file.descriptor, off_t(bytes.count)) }) else { return nil }
        if durable {
            guard case .success = nothingOrErrno("fsync", { fsync(file.descriptor) }) else { return nil }
            // A mirror made just now: its name too.
            if current == nil { try? FileIO.syncDirectory(FileIO.directory(of: path)) }
        }
        return value
    }
}
