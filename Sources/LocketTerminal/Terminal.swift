import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// The controlling terminal, where a password is asked for when the one
/// asking (the command line, or a Swift program through the Security module)
/// may not use standard input: a no-echo read, and who the terminal session is.
public enum Terminal {
    /// The longest password read, in bytes.
    public static let maximumPasswordLength = 4096

    /// The controlling terminal (`/dev/tty`) opened for reading and writing,
    /// without making it the controlling terminal of anything; nil when the
    /// process has none (a CI job, a service).
    public static func openControlling() -> Int32? {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        return fd >= 0 ? fd : nil
    }

    /// Reads a password with echo off at `fd`, after writing `escapedPrompt`
    /// (already made printable by the caller) to `output`. Interrupted (^C,
    /// end of input): errSecUserCanceled.
    public static func readPassword(_ fd: Int32, output: Int32, escapedPrompt prompt: String) throws -> SecureBytes {
        let buffer = try SecureBytes(count: maximumPasswordLength)
        let n = buffer.withUnsafeMutableBytes {
            locket_read_password(fd, output, prompt, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count)
        }
        switch n {
        case -1: throw KeychainError(.userCanceled)
        case -2: throw KeychainError(.dataTooLarge, "the password is longer than \(ByteSize.text(maximumPasswordLength))")
        case ..<0: throw KeychainError(.io, "cannot read from the terminal")
        default: return try buffer.prefix(n)
        }
    }

    /// Writes `text` (already made printable) to `fd`, whole.
    public static func write(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { _ = writeAll(fd, UnsafeRawBufferPointer($0)) }
    }

    /// Who "this terminal session" is, for the presence reuse window: the
    /// terminal device, the session id and its leader's start time (a
    /// recycled session id or a terminal reopened by another login is another
    /// session), as sudo tells its tty tickets apart. nil when any is unknown.
    public static func session(_ terminal: Int32) -> String? {
        var st = stat()
        guard fstat(terminal, &st) == 0, st.st_mode & S_IFMT == S_IFCHR else { return nil }
        let sid = getsid(0)
        guard sid > 0, let started = processStartTime(sid) else { return nil }
        return "\(st.st_rdev):\(sid):\(started)"
    }
}
