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
        // Links are followed (a file may be installed as one): the directory
        // judged below is the one the file really is in. Anyone who can
        // rewrite the file can widen the access it grants: nobody else may write it.
        let file = try PrivateFile(path, followingLinks: true, rule: PrivateFile.Rule(kind: S_IFREG, rootMayOwn: true, ownerOnly: 0o022)) {
            switch $0 {
            case .missing: fail("cannot read the \(noun): \(Errno(ENOENT))")
            case .symbolicLink: fail("cannot read the \(noun): \(Errno(ELOOP))")
            case .unreadable(let failure): fail("cannot read the \(noun): \(failure)")
            case .refused(.kind(let kind)): fail("not a regular file\(kind == 0 ? "" : " (\(PrivateFile.kindName(kind)))")")
            case .refused(.owner(let uid)): fail("owned by another user (uid \(uid)); locket reads \(holds) only from your own or root's files")
            case .refused(.mode(let mode)): fail("writable by other users (mode \(String(mode & 0o777, radix: 8))); run chmod 644 on it")
            }
        }
        let st = file.status
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
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        let read = try bytes.withUnsafeMutableBytes { try file.read(into: $0).get { fail("cannot read the \(noun): \($0)") } }
        guard read == bytes.count else { throw fail("the file shrank while locket was reading it") }
        return bytes
    }
}
