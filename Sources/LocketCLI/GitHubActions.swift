import Glibc
import LocketCore
import LocketSupport

/// What `exec` does for a GitHub Actions runner (GITHUB_ACTIONS=true):
/// registers the injected secrets with the runner's log masker, and, with
/// `--github-env`, hands variables to later steps through `$GITHUB_ENV`.
/// Formats as actions/runner reads them (ActionCommand.cs, FileCommandManager.cs).
enum GitHubActions {
    /// A value that is not UTF-8 is not `true`.
    static func isRunner(_ environment: Environment) -> Bool { (try? environment["GITHUB_ACTIONS"]) == "true" }

    /// `::add-mask::LINE` for each line of each value: the runner masks its
    /// output line by line, so a multi-line secret is registered a line at a
    /// time. Lines are split at CR and LF, as the runner splits; blank lines
    /// are skipped (the runner refuses an empty mask); each line once. Data
    /// is escaped as workflow commands require: `%` as `%25`, CR as `%0D`, LF as `%0A`.
    static func maskCommands(_ values: [SecureBytes]) throws -> SecureBytes {
        var lines: [SecureBytes] = []
        for value in values {
            try value.withUnsafeBytes { raw in
                var start = 0
                for end in 0...raw.count where end == raw.count || raw[end] == 0x0a || raw[end] == 0x0d {
                    let line = UnsafeRawBufferPointer(rebasing: raw[start..<end])
                    start = end + 1
                    guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { continue }
                    let copy = try SecureBytes(copying: line)
                    if !lines.contains(where: { $0.constantTimeEquals(copy) }) { lines.append(copy) }
                }
            }
        }
        let prefix = Array("::add-mask::".utf8)
        var size = 0
        for line in lines {
            size += prefix.count + 1
            line.withUnsafeBytes { for b in $0 { size += b == UInt8(ascii: "%") ? 3 : 1 } }
        }
        let out = try SecureBytes(count: size)
        out.withUnsafeMutableBytes { out in
            var n = 0
            func put(_ b: UInt8) { out[n] = b; n += 1 }
            for line in lines {
                for b in prefix { put(b) }
                line.withUnsafeBytes { raw in
                    for b in raw {
                        if b == UInt8(ascii: "%") { put(UInt8(ascii: "%")); put(UInt8(ascii: "2")); put(UInt8(ascii: "5")) } else { put(b) }
                    }
                }
                put(0x0a)
            }
        }
        return out
    }

    /// `$GITHUB_ENV`, when this is a runner's step that has one. Outside a
    /// runner nothing would mask the values that later steps print.
    @discardableResult
    static func checkEnvironmentFile(_ environment: Environment) throws -> String {
        guard isRunner(environment) else {
            throw KeychainError(.param, "--github-env works only in a GitHub Actions step (GITHUB_ACTIONS=true), where the runner masks the values")
        }
        guard let path = try environment["GITHUB_ENV"], path.hasPrefix("/") else {
            throw KeychainError(.param, "--github-env needs GITHUB_ENV, the file the runner reads variables from, as an absolute path; it is not set")
        }
        return path
    }

    /// Appends `NAME<<DELIMITER`, the value, `DELIMITER` for each variable to
    /// the file `$GITHUB_ENV` names. The delimiter is random and checked not
    /// to occur in any value, so no value can end its heredoc early and set
    /// variables of its own (CVE-2020-15228's class). Values must be UTF-8
    /// text without NUL: the runner reads the file as text. One write(2) with
    /// O_APPEND, so a concurrent writer's lines never land inside a value.
    static func appendToEnvironmentFile(_ variables: [(name: String, value: SecureBytes)], _ environment: Environment) throws {
        let path = try checkEnvironmentFile(environment)
        for (name, value) in variables where !value.withUnsafeBytes({ UTF8Check.isValid($0, allowingNUL: false) }) {
            throw KeychainError(.param, "\(name): the value is not UTF-8 text (or holds a NUL byte), which $GITHUB_ENV can't carry")
        }
        var delimiter: [UInt8] = []
        for _ in 0..<8 {
            let candidate = Array("ghadelimiter_".utf8) + (try PasswordGenerator.generate(length: 32, charset: .alnum)).bytes
            if !variables.contains(where: { $0.value.withUnsafeBytes { occurs(candidate, in: $0) } }) {
                delimiter = candidate
                break
            }
        }
        guard !delimiter.isEmpty else { throw KeychainError(.param, "no heredoc delimiter could be found that the values do not contain") }
        // O_NONBLOCK: a FIFO put there must not hang the job; no O_CREAT: the runner makes the file.
        // Read as well as written: its last byte decides whether a newline goes
        // first (a file we may only write gets one, which the runner skips).
        var opened = valueOrErrno("open") { open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        if opened.error?.code == EACCES { opened = valueOrErrno("open") { open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) } }
        let fd = try opened.get { KeychainError(.io, "cannot open $GITHUB_ENV (\(path)): \($0)") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw KeychainError(.io, "$GITHUB_ENV (\(path)) is not a regular file")
        }
        // An earlier step's `printf 'A=1' >> $GITHUB_ENV` leaves its line open:
        // the header would join it and the runner would read the value's own
        // lines as assignments. The newline goes in the same write as the rest.
        let closesLine = st.st_size > 0 && GitHubActions.lastByte(fd, size: st.st_size) != 0x0a
        var size = closesLine ? 1 : 0
        for (name, value) in variables { size += name.utf8.count + 2 + delimiter.count + 1 + value.count + 1 + delimiter.count + 1 }
        let text = try SecureBytes(count: size)
        text.withUnsafeMutableBytes { out in
            var n = 0
            func put<Bytes: Sequence<UInt8>>(_ bytes: Bytes) { for b in bytes { out[n] = b; n += 1 } }
            if closesLine { put([0x0a]) }
            for (name, value) in variables {
                put(name.utf8); put("<<".utf8); put(delimiter); put([0x0a])
                value.withUnsafeBytes { put($0) }
                put([0x0a]); put(delimiter); put([0x0a])
            }
        }
        // One write: the lines go in whole or, if short, the job learns it.
        let written = text.withUnsafeBytes { raw in valueOrErrno("write") { write(fd, raw.baseAddress, raw.count) } }
        guard case .success(size) = written else {
            throw KeychainError(.io, "cannot append to $GITHUB_ENV (\(path)): \(written.error.map(String.init(describing:)) ?? "short write")")
        }
    }

    /// The file's last byte; nil when it can't be read (then a newline goes first, which the runner skips).
    private static func lastByte(_ fd: Int32, size: off_t) -> UInt8? {
        var byte: UInt8 = 0
        return valueOrErrno("pread") { pread(fd, &byte, 1, size - 1) } == .success(1) ? byte : nil
    }

    private static func occurs(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Bool {
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            var k = 1
            while k < needle.count, haystack[start + k] == needle[k] { k += 1 }
            if k == needle.count { return true }
        }
        return false
    }
}
