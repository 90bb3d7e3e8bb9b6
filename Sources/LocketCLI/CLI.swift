import Glibc
import LocketCore
import LocketSupport

/// The process's inputs and outputs, injectable so tests can run the whole
/// CLI in-process.
public struct IO: Sendable {
    /// Writes bytes to fd 1 (stdout) or 2 (stderr).
    public var write: @Sendable (Int32, UnsafeRawBufferPointer) -> Void
    /// The file descriptor secrets and passwords are read from.
    public var stdin: Int32
    /// The environment variables.
    public var environment: Environment
    /// How long, in milliseconds, a password or secret that nobody asked for
    /// explicitly waits for its first byte on a non-terminal stdin
    /// (`Prompt.implicitStdinWait`). Only tests shorten it: the binary always
    /// runs with `standard`.
    public var implicitStdinWait: Int32 = Prompt.implicitStdinWait
    /// The Argon2id cost `init` and `passwd` use without `--kdf`; nil for
    /// their own defaults. Only tests set it (libsodium's minimum, to make
    /// keychains quickly); the binary has no way to.
    public var defaultKDF: KDFCost? = nil

    public init(write: @escaping @Sendable (Int32, UnsafeRawBufferPointer) -> Void, stdin: Int32, environment: [String: String]) {
        self.init(write: write, stdin: stdin, environment: Environment(environment))
    }

    init(write: @escaping @Sendable (Int32, UnsafeRawBufferPointer) -> Void, stdin: Int32, environment: Environment) {
        self.write = write
        self.stdin = stdin
        self.environment = environment
    }

    /// The real process.
    public static var standard: IO {
        IO(write: { fd, bytes in _ = writeAll(fd, bytes) }, stdin: 0, environment: Environment.process)
    }
}

/// The command line's entry point.
public enum CLI {
    /// Runs with the real process's argv, environment and file descriptors.
    /// Arguments are checked as bytes first: Swift would silently replace
    /// invalid UTF-8, and an attribute must be stored as typed or refused.
    /// (One allocation for the array, and `String(validatingCString:)`: the
    /// generic `String(validating:as:)` built metadata and looked up
    /// witnesses for every argument, bench/README.md "A lookup above the process floor".)
    /// `backends`: where keychains are (`Backends.all`, LocketCLIBackends).
    public static func runProcess(backends: Backends) -> Int32 {
        var arguments: [String] = []
        arguments.reserveCapacity(Int(CommandLine.argc))
        for i in 0..<Int(CommandLine.argc) {
            guard let p = CommandLine.unsafeArgv[i] else { continue }
            guard let argument = String(validatingCString: p) else {
                let message = "locket: error: argument \(i) is not valid UTF-8 (errSecParam -50)\n"
                _ = message.withCString { write(2, $0, strlen($0)) }
                return Diagnostics.exitStatus(KeychainError(.param))
            }
            arguments.append(argument)
        }
        return run(arguments, io: .standard, backends: backends)
    }

    /// Runs locket with `arguments` (argv, including argv[0]) and returns the exit status.
    public static func run(_ arguments: [String], io: IO, backends: Backends) -> Int32 {
        run(arguments, io: io, backends: backends, extra: nil)
    }

    /// `run`, with `extra` parsed as if it were one of the table's commands.
    static func run(_ arguments: [String], io: IO, backends: Backends, extra: CommandSpec?) -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        // A file size limit (`ulimit -f`) would kill a writer mid-write with
        // no word (exit 153); ignored, the write fails with EFBIG, and the
        // command reports errSecIO naming the limit, the keychain unchanged.
        signal(SIGXFSZ, SIG_IGN)
        var arguments = arguments
        // git runs `git-credential-locket get` for `credential.helper = locket`;
        // docker and skopeo run `docker-credential-locket get` for `credsStore: locket`.
        // The program's name after its last '/' (no split: an array of
        // substrings costs every command its metadata at run time).
        if let path = arguments.first {
            let name = path.lastIndex(of: "/").map { path[path.index(after: $0)...] } ?? path[...]
            if name == "git-credential-locket" { arguments = ["locket", "credential"] + arguments.dropFirst() }
            if name == "docker-credential-locket" { arguments = ["locket", "docker-credential"] + arguments.dropFirst() }
        }
        let context = Context(io: io, backends: backends)
        defer { context.out.flush() }
        do {
            switch try Parser.parse(Array(arguments.dropFirst()), extra: extra) {
            case .version:
                context.out.line("locket \(CommandTable.version)")
                return 0
            case .run(let globals, let invocation):
                context.globals = globals
                context.commandName = invocation.command.name
                context.oneLineFailures = invocation.command.oneLineFailures
                if try globals.json || io.environment["LOCKET_FORMAT"] == "json" { context.json = true }
                if globals.help {
                    context.out.text(Help.text(for: invocation.command.name == "help" ? nil : invocation.command))
                    return 0
                }
                return try invocation.command.run(invocation, context)
            }
        } catch let error as UsageError {
            context.out.flush()
            context.usage(error, extra: extra)
            return 2
        } catch let error as KeychainError {
            context.out.flush()
            context.report(error)
            return Diagnostics.exitStatus(error)
        } catch {
            let wrapped = KeychainError(.io, "unexpected failure: \(error)")
            context.report(wrapped)
            return Diagnostics.exitStatus(wrapped)
        }
    }
}

/// What a command runs with: IO, global options, output helpers and the backends.
package final class Context {
    package let io: IO
    /// Where keychains are (LocketLocator, LocketRemote), from whoever runs the command line.
    let backends: Backends
    package var globals = GlobalOptions()
    /// The command being run (hints differ by command).
    var commandName: String?
    /// The command's failures are one line each (`CommandSpec.oneLineFailures`).
    var oneLineFailures = false
    package var json = false
    package let out: OutputBuffer
    /// The keychain opened with its file kept open for the first call;
    /// every prompt releases it first (`releaseKeychainFile`).
    weak var heldKeychain: Keychain?

    init(io: IO, backends: Backends) {
        self.io = io
        self.backends = backends
        self.out = OutputBuffer(fd: 1, io: io)
    }

    package var environment: Environment { io.environment }

    /// Writes one line to stderr. Every message passes here, and nothing in
    /// it may drive the terminal: user text is quoted with `Printable.clip`
    /// where the message is made, and whatever else slipped in unescaped (a
    /// path in an engine message, a program name) is escaped here. Backslashes
    /// are left alone: they are locket's own, or already escaped.
    package func err(_ line: String) {
        var bytes = Array(Printable.escape(line, backslashes: false).utf8)
        bytes.append(0x0a)
        bytes.withUnsafeBytes { io.write(2, $0) }
    }

    func warn(_ message: String) { err("locket: warning: \(message)") }

    func report(_ error: KeychainError) {
        if json {
            var w = JSONWriter()
            w.beginObject()
            w.key("error"); w.string(error.code.name)
            w.key("status"); w.int(Int64(error.status))
            w.key("message"); w.string(error.message)
            if let hint = Hints.hint(for: error, self) { w.key("hint"); w.string(hint) }
            w.endObject()
            err(w.result)
        } else if oneLineFailures {
            // The hint inside the line, the status still last, where scripts look for it.
            let hint = Hints.hint(for: error, self).map { "; \($0)" } ?? ""
            err("locket: error: \(error.message)\(hint) (\(error.code.name) \(error.code.rawValue))")
        } else {
            err("locket: error: \(error.description)")
            if let hint = Hints.hint(for: error, self) { err("locket: hint: \(hint)") }
        }
    }

    func usage(_ error: UsageError, extra: CommandSpec? = nil) {
        let command = error.command.flatMap { name in extra.flatMap { $0.name == name ? $0 : nil } ?? CommandTable.command(named: name) }
        if let command, command.oneLineFailures {
            err("locket: error: \(error.message) (see 'locket help \(command.name)')")
            return
        }
        err("locket: error: \(error.message)")
        if let command {
            err("usage: \(command.usageLine)")
        } else {
            err("usage: locket [-k KEYCHAIN] [-e ENTITLEMENTS] [--json] COMMAND [OPTIONS]")
        }
        err("locket: hint: run 'locket help\(error.command.map { " \($0)" } ?? "")' for more")
    }

    /// The caller named by `-e` or `LOCKET_ENTITLEMENTS`; the owner without either.
    package func caller() throws -> Caller {
        let path = try globals.entitlements ?? io.environment["LOCKET_ENTITLEMENTS"].flatMap { $0.isEmpty ? nil : $0 }
        guard let path else { return .owner }
        return .app(try Entitlements.load(path: path))
    }

    /// Lets other processes have the keychain's file while this one waits
    /// (for a prompt, standard input, a child); the next call opens it again.
    func releaseKeychainFile() { heldKeychain?.releaseFile() }

    /// `-k NAME ` when the keychain was named, for hints that give a command line.
    package var keychainArgument: String { globals.keychain.map { "-k \($0) " } ?? "" }
}

/// Buffered stdout.
package final class OutputBuffer {
    private var buffer: [UInt8] = []
    private let fd: Int32
    private let io: IO
    /// The buffer never grows past this: growing would copy it and free the
    /// old block, secrets included, without wiping it.
    private static let capacity = 1 << 16

    init(fd: Int32, io: IO) {
        self.fd = fd
        self.io = io
        buffer.reserveCapacity(OutputBuffer.capacity)
    }

    package func bytes(_ b: [UInt8]) { b.withUnsafeBytes { raw($0) } }

    func raw(_ b: UnsafeRawBufferPointer) {
        if buffer.count + b.count > OutputBuffer.capacity { flush() }
        if b.count >= OutputBuffer.capacity { io.write(fd, b); return }
        buffer.append(contentsOf: b)
    }

    package func text(_ s: String) {
        var s = s
        s.withUTF8 { raw(UnsafeRawBufferPointer($0)) }
    }

    package func line(_ s: String) { text(s); byte(0x0a) }

    func byte(_ b: UInt8) { withUnsafeBytes(of: b) { raw($0) } }

    package func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { io.write(fd, $0) }
        // The buffer may have held a secret (find -w): wipe before reuse.
        LocketSupport.wipe(&buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}
