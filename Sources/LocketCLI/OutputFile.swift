import Glibc
import LocketCore
import LocketSupport

/// Output files that hold secrets (`inject -o`): created with mode 600,
/// written whole under a temporary name in the same directory, then put in
/// place in one step, so no reader ever sees half a file or a file that
/// others could read.
enum OutputFile {
    /// Whether anything (a file, a symlink, a directory) is at `path`.
    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Writes `bytes` to `path`. Without `replace`, an existing `path` is
    /// refused, also one that appears while writing (the final step is
    /// link(2), which never replaces); with it, rename(2) replaces it (a
    /// symlink at `path` is replaced, not followed).
    static func write(_ path: String, _ bytes: UnsafeRawBufferPointer, replace: Bool) throws {
        try stream(path, replace: replace) { fd in
            try writeAll(fd, bytes).get { KeychainError(.io, "cannot write \(path): \($0)") }
        }
    }

    /// Like `write`, for output made a piece at a time (`export`): `body`
    /// writes to the temporary file's descriptor; `path` appears only once
    /// `body` has returned, and never when it throws.
    static func stream(_ path: String, replace: Bool, _ body: (Int32) throws -> Void) throws {
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let base = path.split(separator: "/").last.map(String.init) ?? path
        let random = try PasswordGenerator.generate(length: 12, charset: .alnum).bytes
        let temporary = "\(directory)/.\(base).locket-\(String(decoding: random, as: UTF8.self))"
        let fd = try valueOrErrno("open") { open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            .get { KeychainError(.io, "cannot create a file in \(directory): \($0)") }
        var done = false
        defer { if !done { unlink(temporary) } }
        do {
            defer { close(fd) }
            // The umask may have taken bits away, never added any; say exactly 600.
            try nothingOrErrno("fchmod") { fchmod(fd, 0o600) }.get { KeychainError(.io, "cannot set the mode of \(temporary): \($0)") }
            try body(fd)
            try nothingOrErrno("fsync") { fsync(fd) }.get { KeychainError(.io, "cannot write \(path): \($0)") }
        }
        if replace {
            try nothingOrErrno("rename") { rename(temporary, path) }.get { KeychainError(.io, "cannot replace \(path): \($0)") }
        } else {
            if let failure = nothingOrErrno("link", { link(temporary, path) }).error {
                if failure.code == EEXIST {
                    throw KeychainError(.param, "\(path) exists; locket does not replace it", hint: "add -f/--force to replace it")
                }
                throw KeychainError(.io, "cannot create \(path): \(failure)")
            }
            unlink(temporary)
        }
        done = true
        // The new directory entry survives a crash only once the directory is synced.
        let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 { _ = fsync(dirfd); close(dirfd) }
    }

}
