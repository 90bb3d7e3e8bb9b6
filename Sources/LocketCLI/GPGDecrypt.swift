import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// Decrypts pass entries with the user's own gpg, as `pass show` does:
/// `gpg [PASSWORD_STORE_GPG_OPTS] --decrypt --quiet --batch --yes -- FILE`,
/// with the caller's environment (GNUPGHOME, the agent's socket, GPG_TTY for
/// pinentry). The argv holds no secret; the plaintext comes back through a
/// pipe straight into guarded memory; gpg's stderr is handed to `failureOutput`
/// only when it fails, and a failure is a per-file errSecDecode whose message
/// is the reason (`PassStore.read` turns it into a skipped entry).
struct GPGDecrypt {
    /// The program, looked up in PATH.
    var program = "gpg"
    /// Words of PASSWORD_STORE_GPG_OPTS, split on blanks as pass's unquoted expansion does.
    var options: [String]
    private let environment: [Environment.Variable]
    /// Receives gpg's stderr after a failure (never the plaintext).
    var failureOutput: ([UInt8]) -> Void

    init(environment: Environment, failureOutput: @escaping ([UInt8]) -> Void) throws {
        self.environment = environment.all
        options = (try environment["PASSWORD_STORE_GPG_OPTS"] ?? "").split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init)
        self.failureOutput = failureOutput
    }

    /// The decrypted contents of `path`. errSecDecode (per file) when gpg
    /// fails or the plaintext is over the secret size limit; errSecIO when gpg
    /// can't be started at all (every file would fail the same way).
    func decrypt(_ path: String) throws -> SecureBytes {
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        try nothingOrErrno("pipe2") { locket_pipe_cloexec(&outPipe) }.get { KeychainError(.io, "cannot create a pipe: \($0)") }
        if let failure = nothingOrErrno("pipe2", { locket_pipe_cloexec(&errPipe) }).error {
            close(outPipe[0]); close(outPipe[1])
            throw KeychainError(.io, "cannot create a pipe: \(failure)")
        }
        let argv = CStringArray([program] + options + ["--decrypt", "--quiet", "--batch", "--yes", "--", path])
        defer { argv.free() }
        let block = EnvironmentBlock(plain: environment, secrets: [])
        defer { block.wipe() }
        let spawned = Spawner.spawn(program, argv: argv.pointers, environment: block.pointers, stdin: .devNull,
                                    stdout: .descriptor(outPipe[1]), stderr: .descriptor(errPipe[1]), searchPath: true)
        close(outPipe[1])
        close(errPipe[1])
        defer { close(outPipe[0]); close(errPipe[0]) }
        let pid: pid_t
        switch spawned {
        case .success(let child): pid = child
        case .failure(let error): throw KeychainError(.io, "cannot run \(program): \(error)")
        }

        let limit = Keychain.maximumDataLength
        var plain = try SecureBytes(count: 4096)
        var count = 0
        var errors: [UInt8] = []
        var tooLarge = false
        var open = [true, true]
        var scratch = [UInt8](repeating: 0, count: 4096)
        while open[0] || open[1] {
            var fds = [pollfd(fd: open[0] ? outPipe[0] : -1, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: open[1] ? errPipe[0] : -1, events: Int16(POLLIN), revents: 0)]
            guard case .success = valueOrErrno("poll", { poll(&fds, 2, -1) }) else { break }
            if open[0], fds[0].revents != 0 {
                if count == plain.count {
                    // Grown in guarded memory; the old buffer is wiped when released.
                    let bigger = try SecureBytes(count: min(plain.count * 2, limit + 1))
                    bigger.withUnsafeMutableBytes { b in plain.withUnsafeBytes { b.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: count) } }
                    plain = bigger
                }
                let n = plain.withUnsafeMutableBytes { raw in valueOrErrno("read") { read(outPipe[0], raw.baseAddress! + count, raw.count - count) } }
                if case .success(let got) = n, got > 0 { count += got } else { open[0] = false }
                if count > limit {
                    tooLarge = true
                    kill(pid, SIGTERM)
                    open[0] = false
                }
            }
            if open[1], fds[1].revents != 0 {
                let n = scratch.withUnsafeMutableBytes { raw in valueOrErrno("read") { read(errPipe[0], raw.baseAddress, raw.count) } }
                if case .success(let got) = n, got > 0 {
                    if errors.count < 65_536 { errors += scratch[0..<got] }
                } else {
                    open[1] = false
                }
            }
        }
        let status = Spawner.exitStatus(pid)
        if tooLarge { throw KeychainError(.decode, "it decrypts to more than \(ByteSize.text(limit))") }
        guard status == 0 else {
            failureOutput(errors)
            throw KeychainError(.decode, status > 128 ? "gpg was killed by signal \(status - 128)" : "gpg exited with status \(status)")
        }
        return try plain.prefix(count)
    }
}
