import Glibc
import LocketSupport

/// A file that decides what a caller may reach: an entitlements file (SPEC §6),
/// the credential socket's policy. Whoever can rewrite or replace such a file
/// can widen that access, so it must be the caller's own (or root's), writable
/// by nobody else, in a directory others cannot write (unless sticky, like
/// /tmp), and a regular file (a FIFO is refused at once, never waited on).
struct TrustedFile {
    /// What the file is, with its article, for messages: "an entitlements file".
    let what: String
    /// What such files hold, for the ownership refusal: "entitlements".
    let holds: String
    /// The largest file read; anything larger is not one.
    let maximumSize: Int

    /// The file's bytes. Every failure is errSecParam with a message that
    /// starts with the path as given.
    func read(_ path: String) throws -> [UInt8] {
        func fail(_ problem: String) -> KeychainError { KeychainError(.param, "\(path): \(problem)") }
        let noun = what.split(separator: " ", maxSplits: 1).last.map(String.init) ?? what
        // Non-blocking, so that a FIFO fails the regular-file check below instead of waiting for a writer.
        let fd = try valueOrErrno("open") { open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) }
            .get { fail("cannot read the \(noun): \($0)") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw fail("not a regular file\(st.st_mode & S_IFMT == 0 ? "" : " (\(FileIO.kind(st.st_mode)))")")
        }
        guard st.st_uid == geteuid() || st.st_uid == 0 else {
            throw fail("owned by another user (uid \(st.st_uid)); locket reads \(holds) only from your own or root's files")
        }
        // Anyone who can rewrite the file can widen the access it grants.
        guard st.st_mode & 0o022 == 0 else {
            throw fail("writable by other users (mode \(String(st.st_mode & 0o777, radix: 8))); run chmod 644 on it")
        }
        // ...and so can anyone who can replace it: judge the directory the file
        // really is in (the path may go through symbolic links).
        let resolved = try pointerOrErrno("realpath") { realpath(path, nil) }.get { fail("cannot resolve the path: \($0)") }
        let real = String(cString: resolved)
        free(resolved)
        var again = stat()
        guard stat(real, &again) == 0, again.st_dev == st.st_dev, again.st_ino == st.st_ino else {
            throw fail("the file was replaced while locket was reading it")
        }
        let directory = FileIO.directory(of: real)
        if let refusal = FileIO.access(ofDirectory: directory).refusal(directory, what: what) {
            throw fail("its directory \(refusal)")
        }
        guard st.st_size <= maximumSize else { throw fail("larger than \(ByteSize.text(maximumSize)); not \(what)") }
        // Regular files ignore O_NONBLOCK; clear it all the same, so a read never returns EAGAIN.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        let read = try bytes.withUnsafeMutableBytes { try readFully(fd, into: $0).get { fail("cannot read the \(noun): \($0)") } }
        guard read == bytes.count else { throw fail("the file shrank while locket was reading it") }
        return bytes
    }
}
