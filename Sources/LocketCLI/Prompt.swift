import Glibc
import LocketCore
import LocketSupport
import LocketTerminal

/// Reading secrets and passwords: a no-echo prompt at a terminal, standard
/// input otherwise, never a hang when there is neither.
package enum Prompt {
    static let maximumPasswordLength = Terminal.maximumPasswordLength

    /// How long locket waits for the first byte of a secret on a non-terminal
    /// stdin that nobody asked for explicitly: long enough for a slow producer
    /// (`gpg -d | locket add -w`), short enough that a CI job without input fails.
    static let implicitStdinWait: Int32 = 10_000

    package static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// A password for init (confirm) or unlock.
    package static func password(_ context: Context, prompt: String, confirm: Bool, fromStdin: Bool) throws -> SecureBytes {
        context.releaseKeychainFile()
        let fd = context.io.stdin
        if !fromStdin && isTerminal(fd) {
            let first = try readTerminal(fd, prompt: prompt)
            if confirm {
                let second = try readTerminal(fd, prompt: "Again: ")
                guard first.constantTimeEquals(second) else { throw KeychainError(.param, "the two passwords do not match") }
            }
            return first
        }
        if !fromStdin { try waitForInput(fd, what: "password", milliseconds: context.io.implicitStdinWait) }
        let line = try readLine(fd)
        guard line.count > 0 else {
            throw KeychainError(.interactionNotAllowed, "no password on standard input and no terminal to ask at",
                                hint: "pipe it in with --password-stdin (printf '%s\\n' \"$PW\" | locket unlock --password-stdin), or run at a terminal")
        }
        return line
    }

    /// The secret of `add`/`update`: `-w VALUE`, bare `-w` (prompt, or stdin),
    /// or `--data-file PATH|-`; nil when none of them was given.
    static func secret(_ context: Context, _ invocation: Invocation, confirm: Bool) throws -> SecureBytes? {
        if let path = invocation.value("data-file") {
            // A regular file reads at once: the keychain's file stays open
            // for the write that follows (which then neither opens it nor
            // parses its schema again: a sixth of an `add`).
            if path != "-", let secret = try readIfRegularFile(path) { return secret }
            // A FIFO or a device may wait for its writer, stdin for a slow
            // producer: wait without the keychain's file.
            context.releaseKeychainFile()
            if path == "-" { return try readAll(context.io.stdin, what: "standard input", contents: "the secret") }
            let fd = try valueOrErrno("open") { open(path, O_RDONLY | O_CLOEXEC) }
                .get { KeychainError(.io, "cannot read \(Printable.clip(path, max: 256)): \($0)") }
            defer { close(fd) }
            return try readAll(fd, what: path)
        }
        guard invocation.has("password") else { return nil }
        if !invocation.isBare("password") {
            context.warn("a secret given as an argument is visible to other processes; pipe it on stdin with -w alone")
            return try SecureBytes(copying: Array(invocation.value("password")!.utf8))
        }
        context.releaseKeychainFile()
        let fd = context.io.stdin
        if isTerminal(fd) {
            let first = try readTerminal(fd, prompt: "Secret: ")
            if confirm {
                let second = try readTerminal(fd, prompt: "Again: ")
                guard first.constantTimeEquals(second) else { throw KeychainError(.param, "the two secrets do not match") }
            }
            return first
        }
        try waitForInput(fd, what: "secret", milliseconds: context.io.implicitStdinWait)
        // One byte of slack for the trailing newline that is dropped below; add checks the size.
        let all = try readAll(fd, what: "standard input", contents: "the secret", limit: Keychain.maximumDataLength + 1)
        // One trailing newline is the shell's, not the secret's (`echo s | locket add -w`).
        let secret = try all.withUnsafeBytes { raw in
            raw.last == 0x0a ? try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: raw.dropLast())) : all
        }
        // A closed or /dev/null stdin, or `echo "$UNSET" |`, is a common CI mistake: say so.
        if secret.count == 0 {
            context.warn("-w read an empty secret from standard input (closed, /dev/null or a blank line?); "
                         + "use --data-file /dev/null for an empty secret on purpose")
        }
        return secret
    }

    /// The contents of `path` when it is a regular file, nil when it is
    /// anything else or can't be opened (the caller's open says why). Opened
    /// without blocking: a FIFO swapped in after the check can't hold the
    /// process (and the keychain's file) waiting for a writer.
    private static func readIfRegularFile(_ path: String) throws -> SecureBytes? {
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        return try readAll(fd, what: path)
    }

    /// The contents of `path`, which must be a regular file: a FIFO or a
    /// directory is refused at once (errSecParam, with `hint`), never waited on.
    static func readRegularFile(_ path: String, contents: String? = nil, limit: Int = Keychain.maximumDataLength, hint: String) throws -> SecureBytes {
        let shown = Printable.clip(path, max: 256)
        let fd = try valueOrErrno("open") { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }.get { KeychainError(.io, "cannot read \(shown): \($0)") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { throw KeychainError(.param, "\(shown) is not a regular file", hint: hint) }
        return try readAll(fd, what: shown, contents: contents.map { "\($0) \(shown)" }, limit: limit)
    }

    private static func readTerminal(_ fd: Int32, prompt: String) throws -> SecureBytes {
        // The prompt names the keychain's path, which is the user's text.
        try readTerminal(fd, output: 2, escapedPrompt: Printable.escape(prompt, backslashes: false))
    }

    /// Reads a password with echo off at `fd`, after writing `escapedPrompt`
    /// (already made printable by the caller) to `output`.
    static func readTerminal(_ fd: Int32, output: Int32, escapedPrompt prompt: String) throws -> SecureBytes {
        try Terminal.readPassword(fd, output: output, escapedPrompt: prompt)
    }

    /// A yes/no question at the terminal; only "y" or "yes" agrees.
    package static func confirm(_ context: Context, _ question: String) throws -> Bool {
        context.releaseKeychainFile()
        question.utf8CString.withUnsafeBytes { context.io.write(2, UnsafeRawBufferPointer(rebasing: $0.dropLast())) }
        var answer = [UInt8]()
        var c: UInt8 = 0
        while read(context.io.stdin, &c, 1) == 1, c != 0x0a { answer.append(c) }
        let text = String(decoding: answer, as: UTF8.self).lowercased()
        return text == "y" || text == "yes"
    }

    /// Fails instead of hanging when stdin stays silent (no terminal, no data).
    private static func waitForInput(_ fd: Int32, what: String, milliseconds: Int32) throws {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        // Interrupted: as if input came, and the read that follows decides.
        if case .success(0) = valueOrErrno("poll", retryOnInterrupt: false, { poll(&p, 1, milliseconds) }) {
            throw KeychainError(.interactionNotAllowed, "no \(what) on standard input and no terminal to ask at",
                                hint: "pipe the \(what) in (or use --password-stdin), or run at a terminal")
        }
    }

    /// One line (without its newline) into guarded memory.
    static func readLine(_ fd: Int32) throws -> SecureBytes {
        let buffer = try SecureBytes(count: maximumPasswordLength)
        var used = 0
        var c: UInt8 = 0
        while true {
            let n = valueOrErrno("read") { read(fd, &c, 1) }
            if n.error?.code == EBADF { break }
            guard case .success(let got) = n else { throw KeychainError(.io, "cannot read standard input") }
            if got == 0 || c == 0x0a { break }
            guard used < buffer.count else { throw KeychainError(.dataTooLarge, "the password is longer than \(ByteSize.text(maximumPasswordLength))") }
            buffer.withUnsafeMutableBytes { $0[used] = c }
            used += 1
        }
        c = 0
        if used > 0, buffer.withUnsafeBytes({ $0[used - 1] }) == 0x0d { used -= 1 }
        return try buffer.prefix(used)
    }

    /// Everything on `fd`, up to the keychain's limit plus one byte to detect
    /// excess. `what` is where it comes from (for a read error), `contents`
    /// what it is (for the size error: "the template is larger than ..."),
    /// by default `what`.
    static func readAll(_ fd: Int32, what: String, contents: String? = nil, limit: Int = Keychain.maximumDataLength) throws -> SecureBytes {
        let tooLarge = KeychainError(.dataTooLarge, "\(contents ?? what) is larger than \(ByteSize.text(limit))")
        // Most secrets fit a pooled 1 KiB slot; a fresh guarded region
        // (mmap, mlock, munlock, munmap) is only for the big ones.
        var capacity = 1024
        var buffer = try SecureBytes(count: capacity)
        var used = 0
        while true {
            if used == capacity {
                guard capacity <= limit else { throw tooLarge }
                capacity = min(capacity * 16, limit + 1)
                let bigger = try SecureBytes(count: capacity)
                bigger.withUnsafeMutableBytes { dst in buffer.withUnsafeBytes { src in dst.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: used) } }
                buffer = bigger
            }
            let read = buffer.withUnsafeMutableBytes { raw in valueOrErrno("read") { Glibc.read(fd, raw.baseAddress! + used, capacity - used) } }
            if read.error?.code == EBADF { break }
            let n = try read.get { KeychainError(.io, "cannot read \(what): \($0)") }
            if n == 0 { break }
            used += n
            if used > limit { throw tooLarge }
        }
        return try buffer.prefix(used)
    }
}
