import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// `unlock --password-file PATH` and `unlock --credential NAME`: the
/// keychain's password from a file, read as every secret file is read: a
/// regular file (a FIFO is refused at once, never waited on; no symbolic
/// link followed), the caller's own or root's, and private: nobody but its
/// owner and the caller may read or write it. Private allows one thing the
/// mode alone can't show: a POSIX ACL entry that lets the caller read a file
/// of root's, which is how systemd gives a `User=` service its credentials
/// when it can't hand the file over (systemd.exec(5), "Credentials").
///
/// The file holds the password and at most one newline after it (as
/// `echo`, `systemd-ask-password` and editors leave it); a second line is
/// refused rather than dropped.
enum PasswordFile {
    /// The longest password file read (the prompt's limit plus a line end).
    static let maximumSize = Prompt.maximumPasswordLength + 2

    /// The password in `path`.
    static func read(_ path: String) throws -> SecureBytes {
        let shown = Printable.clip(path, max: 256)
        // The mode is judged below with the file's ACL, which the mode alone can't show.
        let file = try PrivateFile(path, rule: PrivateFile.Rule(kind: S_IFREG, rootMayOwn: true, ownerOnly: 0)) { failure in
            switch failure {
            case .symbolicLink: KeychainError(.param, "\(shown) is a symbolic link; locket reads a password only from the file itself")
            case .missing: KeychainError(.io, "cannot read the password file \(shown): \(Errno(ENOENT))")
            case .unreadable(let errno): KeychainError(.io, "cannot read the password file \(shown): \(errno)")
            case .refused(.kind(let found)):
                KeychainError(.param, "\(shown) is not a regular file\(found == S_IFIFO ? " (a FIFO)" : found == S_IFDIR ? " (a directory)" : ""); locket reads a password only from a regular file")
            case .refused(.owner(let uid)): KeychainError(.param, "\(shown) belongs to another user (uid \(uid)); a password file must be yours or root's")
            // Not judged by this rule: by the mode and the ACL below.
            case .refused(.mode): KeychainError(.param, "\(shown) holds a password but others can read or write it")
            }
        }
        let fd = file.descriptor, st = file.status
        if let others = otherAccess(fd, st) {
            throw KeychainError(.param, "\(shown) holds a password but \(others) can read or write it",
                                hint: "chmod 600 it (and change the password if others could read it)")
        }
        guard st.st_size <= maximumSize else {
            throw KeychainError(.dataTooLarge, "\(shown) is larger than a password (\(ByteSize.text(Prompt.maximumPasswordLength)))")
        }
        let all = try file.closeAfter { file in try Prompt.readAll(file.descriptor, what: shown, contents: "the password file \(shown)", limit: maximumSize) }
        return try all.withUnsafeBytes { raw in
            var end = raw.count
            if end > 0 && raw[end - 1] == 0x0a { end -= 1 }
            if end > 0 && raw[end - 1] == 0x0d { end -= 1 }
            guard !raw[..<end].contains(0x0a) else {
                throw KeychainError(.param, "\(shown) holds more than one line; a password file holds the password alone")
            }
            guard end > 0 else { throw KeychainError(.param, "\(shown) is empty; it should hold the keychain's password") }
            guard end <= Prompt.maximumPasswordLength else {
                throw KeychainError(.dataTooLarge, "the password is longer than \(ByteSize.text(Prompt.maximumPasswordLength))")
            }
            return try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: raw[..<end]))
        }
    }

    /// `$CREDENTIALS_DIRECTORY/NAME`: where systemd puts the credentials of
    /// `LoadCredential=` and `LoadCredentialEncrypted=` (decrypted) for the unit.
    static func credentialPath(_ name: String, environment: Environment) throws -> String {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else {
            throw UsageError(message: "--credential takes a credential's name (a file name in $CREDENTIALS_DIRECTORY), not a path", command: "unlock")
        }
        guard let directory = try environment["CREDENTIALS_DIRECTORY"], directory.hasPrefix("/") else {
            throw KeychainError(.param, "CREDENTIALS_DIRECTORY is not set to an absolute path",
                                hint: "--credential works in a systemd unit with LoadCredential= or LoadCredentialEncrypted=; elsewhere use --password-file")
        }
        return directory + "/" + name
    }

    /// Who besides the owner (and the caller) may read or write the open
    /// file, in words; nil when nobody. Without an ACL that is the mode's
    /// group and other bits; with one, its named users other than the
    /// caller, its groups (through the mask) and others.
    private static func otherAccess(_ fd: Int32, _ st: stat) -> String? {
        guard let acl = accessACL(fd) else {
            if st.st_mode & 0o070 != 0 { return "its group" }
            return st.st_mode & 0o007 != 0 ? "other users" : nil
        }
        let mask = acl.first { $0.tag == 0x10 }?.permissions ?? 0o7
        for entry in acl {
            let readWrite = entry.permissions & 0o6
            switch entry.tag {
            case 0x02 where entry.id != geteuid() && readWrite & mask != 0: return "the user \(entry.id) (by an ACL)"
            case 0x04 where readWrite & mask != 0: return "its group"
            case 0x08 where readWrite & mask != 0: return "the group \(entry.id) (by an ACL)"
            case 0x20 where readWrite != 0: return "other users"
            default: continue
            }
        }
        return nil
    }

    /// The file's access ACL (`system.posix_acl_access`, version 2: a
    /// little-endian header and (tag, permissions, id) entries); nil when it
    /// has none beyond its mode.
    private static func accessACL(_ fd: Int32) -> [(tag: UInt16, permissions: UInt16, id: UInt32)]? {
        var buffer = [UInt8](repeating: 0, count: 4 + 8 * 64)
        let got = buffer.withUnsafeMutableBytes { raw in valueOrErrno("fgetxattr") { locket_access_acl(fd, raw.baseAddress, raw.count) } }
        // Too many entries to read is too many to trust: treat as open to others.
        if got.error?.code == ERANGE { return [(tag: 0x20, permissions: 0o7, id: 0)] }
        guard case .success(let n) = got, n >= 4, (n - 4) % 8 == 0, littleEndian32(buffer, at: 0) == 2 else { return nil }
        return stride(from: 4, to: n, by: 8).map { at in
            (tag: UInt16(buffer[at]) | UInt16(buffer[at + 1]) << 8,
             permissions: UInt16(buffer[at + 2]) | UInt16(buffer[at + 3]) << 8,
             id: littleEndian32(buffer, at: at + 4))
        }
    }

    private static func littleEndian32(_ bytes: [UInt8], at i: Int) -> UInt32 {
        UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24
    }
}
