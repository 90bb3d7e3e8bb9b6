import Glibc
import LocketCore
import LocketSupport

/// X25519 keys for recipient backups, as 64 hex digits.
enum BackupKeys {
    /// `--recipient KEY|FILE`: the public key itself, or a file holding it.
    static func publicKey(_ argument: String) throws -> [UInt8] {
        if let key = decode(argument) { return key }
        let fd = open(argument, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            throw KeychainError(.param, "--recipient \(Printable.clip(argument, max: 80)) is neither an X25519 public key (64 hex digits) nor a readable file")
        }
        defer { close(fd) }
        let text = try Prompt.readAll(fd, what: argument, limit: 4096)
        guard let key = text.withUnsafeBytes({ decode(String(decoding: $0, as: UTF8.self)) }) else {
            throw KeychainError(.param, "\(Printable.clip(argument, max: 256)) does not hold an X25519 public key (64 hex digits)")
        }
        return key
    }

    /// `--identity FILE`: the user's own X25519 secret key, 64 hex digits,
    /// in a file nobody else can read or write.
    static func secretKey(_ path: String) throws -> SecureBytes {
        let file = try PrivateFile(path, rule: .privateFile) { failure in
            switch failure {
            case .refused(.kind): KeychainError(.param, "\(Printable.clip(path, max: 256)) is not a regular file")
            case .refused: KeychainError(.param, "\(Printable.clip(path, max: 256)) holds a secret key but others can read it or it is not yours",
                                         hint: "chmod 600 it (and rotate the key if others could read it)")
            case .unreadable(let errno): KeychainError(.io, "cannot read \(Printable.clip(path, max: 256)): \(errno)")
            case .missing, .symbolicLink: KeychainError(.io, "cannot read \(Printable.clip(path, max: 256)): \(Errno(failure == .missing ? ENOENT : ELOOP))")
            }
        }
        let text = try file.closeAfter { file in try Prompt.readAll(file.descriptor, what: path, limit: 4096) }
        var hex = text.withUnsafeBytes { Array($0) }
        defer { wipe(&hex) }
        while let last = hex.last, last == 0x0a || last == 0x0d || last == 0x20 { hex.removeLast() }
        guard hex.count == 2 * BackupRecipients.keyBytes else {
            throw KeychainError(.param, "\(Printable.clip(path, max: 256)) does not hold an X25519 secret key (64 hex digits)")
        }
        let key = try SecureBytes(count: BackupRecipients.keyBytes)
        var ok = true
        key.withUnsafeMutableBytes { out in
            for i in 0..<out.count {
                guard let hi = hexDigit(hex[2 * i]), let lo = hexDigit(hex[2 * i + 1]) else { ok = false; return }
                out[i] = UInt8(hi << 4 | lo)
            }
        }
        guard ok else { throw KeychainError(.param, "\(Printable.clip(path, max: 256)) does not hold an X25519 secret key (64 hex digits)") }
        return key
    }

    private static func decode(_ text: String) -> [UInt8]? {
        let trimmed = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }).first.map(String.init) ?? ""
        guard trimmed.utf8.count == 2 * BackupRecipients.keyBytes, let key = Hex.decode(trimmed) else { return nil }
        return key
    }
}
