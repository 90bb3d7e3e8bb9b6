import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

extension Commands {
    /// `locket exec [--env NAME=REF]... [--env-file FILE]... [--file NAME=REF]... [--mask] [--github-env] -- COMMAND [ARG]...`
    static func exec(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let githubEnv = invocation.has("github-env")
        guard let program = invocation.operands.first else {
            guard githubEnv else { throw UsageError(message: "no command to run", command: "exec") }
            for option in ["file", "mask"] where invocation.has(option) {
                throw UsageError(message: "--\(option) needs a command to run", command: "exec")
            }
            return try execVariables(invocation, context, run: nil)
        }
        return try execVariables(invocation, context, run: program)
    }

    /// Where a variable's value comes from. Inherited values are bytes, handed
    /// on as they are; an inherited `locket:` value that is not UTF-8 is a
    /// reference that fails if it is still wanted once every source is read.
    private enum Source {
        case plain([UInt8])
        case reference(String?)
    }

    /// The variables exec sets, lowest precedence first: the environment
    /// (`locket:REF` values resolved), each --env-file in order, then --env;
    /// a later one replaces an earlier one of the same name.
    private struct Plan {
        private(set) var order: [[UInt8]] = []
        private(set) var sources: [[UInt8]: (source: Source, inherited: Bool)] = [:]

        mutating func set(_ name: [UInt8], _ source: Source, inherited: Bool = false) {
            if sources[name] == nil { order.append(name) }
            sources[name] = (source, inherited)
        }

        mutating func set(_ name: String, _ source: Source) { set(Array(name.utf8), source) }

        mutating func remove(_ name: String) {
            sources[Array(name.utf8)] = nil
            order.removeAll { $0 == Array(name.utf8) }
        }
    }

    private static func execVariables(_ invocation: Invocation, _ context: Context, run program: String?) throws -> Int32 {
        if invocation.has("github-env") { try GitHubActions.checkEnvironmentFile(context.environment) }
        // Also when no secret is read (and the keychain not opened).
        SecretFiles.removeAbandoned(context.environment)
        var plan = Plan()
        let marker = Array("locket:".utf8)
        for variable in context.io.environment.all {
            // A name that is not text is no name locket can report; it is handed on as it is.
            if variable.value.starts(with: marker), variable.nameText != nil {
                plan.set(variable.name, .reference(String(validating: variable.value.dropFirst(marker.count), as: UTF8.self)), inherited: true)
            } else {
                plan.set(variable.name, .plain(variable.value), inherited: true)
            }
        }
        for path in invocation.all("env-file") {
            for entry in try readEnvFile(path) {
                plan.set(entry.name, entry.value.hasPrefix("locket:") ? .reference(String(entry.value.dropFirst("locket:".count)))
                                                                       : .plain(Array(entry.value.utf8)))
            }
        }
        for assignment in invocation.all("env") {
            let (name, reference) = try splitAssignment(assignment, option: "--env")
            plan.set(name, .reference(reference))
        }
        var fileReferences: [(name: String, reference: String)] = []
        for assignment in invocation.all("file") {
            let (name, reference) = try splitAssignment(assignment, option: "--file")
            if invocation.all("env").contains(where: { $0.hasPrefix(name + "=") }) {
                throw UsageError(message: "\(name) is given by both --env and --file", command: "exec")
            }
            fileReferences.removeAll { $0.name == name }
            fileReferences.append((name, reference))
            plan.remove(name)
        }

        // Every reference resolves before anything starts; one failure starts nothing.
        let resolver = SecretResolver(context)
        var secrets: [(name: String, value: SecureBytes)] = []
        var plain: [Environment.Variable] = []
        var exported: [(name: String, value: SecureBytes)] = []
        for nameBytes in plan.order {
            guard let (source, inherited) = plan.sources[nameBytes] else { continue }
            let name = String(decoding: nameBytes, as: UTF8.self)
            switch source {
            case .plain(let value):
                plain.append(Environment.Variable(name: nameBytes, value: value))
                if !inherited { exported.append((name, SecureBytes(copying: value))) }
            case .reference(let text):
                guard let reference = text else { throw KeychainError(.param, "\(name) is not valid UTF-8") }
                let data = try resolve(name, reference, resolver)
                guard !data.withUnsafeBytes({ $0.contains(0) }) else {
                    throw KeychainError(.param, "\(name): the secret contains a NUL byte, which an environment variable can't hold",
                                        hint: "use --file \(name)=\(reference) to get it in a file")
                }
                secrets.append((name, data))
                exported.append((name, data))
            }
        }
        var fileSecrets: [(name: String, secret: SecureBytes)] = []
        for (name, reference) in fileReferences { fileSecrets.append((name, try resolve(name, reference, resolver))) }

        // The runner learns every injected value before anything could print one.
        if GitHubActions.isRunner(context.environment) {
            let masks = GitHubActions.maskCommands(secrets.map(\.value) + fileSecrets.map(\.secret))
            context.out.flush()
            masks.withUnsafeBytes { if $0.count > 0 { context.io.write(1, $0) } }
        }
        if invocation.has("github-env") { try GitHubActions.appendToEnvironmentFile(exported, context.environment) }
        guard let program else { return 0 }

        let argv = CStringArray(invocation.operands)
        defer { argv.free() }
        let mask = invocation.has("mask")
        guard !fileSecrets.isEmpty else {
            let block = EnvironmentBlock(plain: plain, secrets: secrets)
            defer { block.wipe() }
            guard mask else {
                // Without a filter or files locket has nothing left to do: become
                // the command, so signals, the exit status and the terminal are its own.
                locket_prepare_exec()
                locket_execvpe(program, argv.pointers, block.pointers)
                return execFailure(program, context)
            }
            return try runChild(program, argv: argv, environment: block, masking: secrets.map(\.value), context)
        }
        // Signals wait until the forwarders are in place: one arriving between
        // making the files and starting the command would leave them behind.
        var previous = sigset_t()
        blockForwardedSignals(&previous)
        let files: SecretFiles
        do {
            files = try SecretFiles(fileSecrets, environment: context.environment)
        } catch {
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            throw error
        }
        defer { files.remove() }
        let paths = files.paths.map { Environment.Variable(name: Array($0.name.utf8), value: Array($0.path.utf8)) }
        let block = EnvironmentBlock(plain: plain + paths, secrets: secrets)
        defer { block.wipe() }
        return try runChild(program, argv: argv, environment: block, masking: mask ? secrets.map(\.value) + fileSecrets.map(\.secret) : nil,
                            files: files, blocked: previous, context)
    }

    /// The secret `reference` names, or the failure named after the variable.
    private static func resolve(_ name: String, _ reference: String, _ resolver: SecretResolver) throws -> SecureBytes {
        do {
            return try resolver.secret(reference)
        } catch let error as KeychainError {
            throw error.with(detail: "\(name): \(error.message)")
        }
    }

    /// `NAME=REF` of --env and --file.
    private static func splitAssignment(_ assignment: String, option: String) throws -> (String, String) {
        guard let eq = assignment.firstIndex(of: "="), isVariableName(assignment[..<eq]) else {
            throw UsageError(message: "\(option) needs NAME=REF with a variable name, not '\(assignment.prefix(40))'", command: "exec")
        }
        return (String(assignment[..<eq]), String(assignment[assignment.index(after: eq)...]))
    }

    /// The entries of an --env-file: a regular file (a FIFO must not hang exec), at most 1 MiB.
    private static func readEnvFile(_ path: String) throws -> [DotEnv.Entry] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw KeychainError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { throw KeychainError(.param, "\(path) is not a regular file") }
        var bytes = try Prompt.readAll(fd, what: path, limit: 1 << 20).bytes
        defer { wipe(&bytes) }
        do {
            return try DotEnv.parse(bytes)
        } catch let error as DotEnv.Malformed {
            throw KeychainError(.param, "\(path) line \(error.line): \(error.reason)")
        }
    }

    private static func isVariableName(_ name: Substring) -> Bool {
        guard let first = name.first, first == "_" || (first.isASCII && first.isLetter) else { return false }
        return name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }

    /// Reports a failed exec the way shells do: 127 when not found, 126 otherwise.
    private static func execFailure(_ program: String, _ context: Context, code: Int32 = errno) -> Int32 {
        context.err("locket: error: cannot run \(program): \(String(cString: strerror(code)))")
        return code == ENOENT ? 127 : 126
    }

    /// The signals forwarded to the command.
    private static let forwardedSignals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH]

    private static func blockForwardedSignals(_ previous: inout sigset_t) {
        var forwarded = sigset_t()
        sigemptyset(&forwarded)
        for sig in forwardedSignals { sigaddset(&forwarded, sig) }
        pthread_sigmask(SIG_BLOCK, &forwarded, &previous)
    }

    /// Runs the command as a child, forwarding signals, and returns its exit
    /// status (128+N for signal N). With `masking`, its stdout and stderr
    /// pass through the mask filter; without, they are locket's own. `files`
    /// are removed once the command has exited. `blocked` is the signal mask
    /// from before the caller held the forwarded signals, if it did.
    private static func runChild(_ program: String, argv: CStringArray, environment: EnvironmentBlock, masking: [SecureBytes]?,
                                 files: SecretFiles? = nil, blocked: sigset_t? = nil, _ context: Context) throws -> Int32 {
        // Hold the forwarded signals until the forwarders are in place: one
        // arriving between spawn and then would kill locket and orphan the command.
        var previous = sigset_t()
        if let blocked { previous = blocked } else { blockForwardedSignals(&previous) }
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        guard masking == nil || (locket_pipe_cloexec(&outPipe) == 0 && locket_pipe_cloexec(&errPipe) == 0) else {
            let reason = String(cString: strerror(errno))
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            throw KeychainError(.io, "cannot create pipes: \(reason)")
        }
        locket_prepare_exec()
        let spawned = Spawn.start(program, argv: argv, environment: environment.pointers, stdin: .inherit, stdout: outPipe[1], stderr: errPipe[1])
        signal(SIGPIPE, SIG_IGN)
        locket_disable_core_dumps()
        // Without a filter these are -1, and closing them does nothing.
        close(outPipe[1])
        close(errPipe[1])
        environment.wipe()
        let pid: pid_t
        switch spawned {
        case .success(let child): pid = child
        case .failure(let error):
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            close(outPipe[0]); close(errPipe[0])
            return execFailure(program, context, code: error.code)
        }
        locket_forward_signals(pid)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        var status: Int32 = 0
        // Without a filter the command writes straight to locket's stdout and stderr: wait for it.
        guard let secrets = masking else {
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return finished(status, files)
        }
        var exited = false

        var streams = [(fd: outPipe[0], target: Int32(1), masker: Masker(secrets: secrets)),
                       (fd: errPipe[0], target: Int32(2), masker: Masker(secrets: secrets))]
        var open = [true, true]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while open.contains(true) {
            var fds = streams.indices.map { pollfd(fd: open[$0] ? streams[$0].fd : -1, events: Int16(POLLIN), revents: 0) }
            // The timeout only paces the check for the command's exit below. A
            // held tail waits for the data or the end of stream that decides it,
            // however long the pause: a timer would let out the first part of a
            // secret written in two (SPEC §16). A command that writes part of a
            // secret and then waits forever keeps that part held.
            let n = poll(&fds, nfds_t(fds.count), 250)
            if n < 0 { if errno == EINTR { continue }; break }
            // The command's exit ends the run even if something it started still
            // holds the pipes: drain what is there without waiting for more.
            if !exited, waitpid(pid, &status, WNOHANG) == pid {
                exited = true
                for k in streams.indices where open[k] { _ = fcntl(streams[k].fd, F_SETFL, O_NONBLOCK) }
            }
            if n == 0 {
                // Drained after the exit: that is the end of the stream.
                if exited {
                    for k in streams.indices where open[k] {
                        _ = writeAll(streams[k].target, streams[k].masker.finish())
                        open[k] = false
                        close(streams[k].fd)
                    }
                }
                continue
            }
            for k in streams.indices where open[k] && fds[k].revents != 0 {
                let got = buffer.withUnsafeMutableBytes { read(streams[k].fd, $0.baseAddress, $0.count) }
                if got < 0 && errno == EINTR { continue }
                if got < 0 && errno == EAGAIN && !exited { continue }
                if got <= 0 {
                    open[k] = false
                    _ = writeAll(streams[k].target, streams[k].masker.finish())
                    close(streams[k].fd)
                    continue
                }
                let clean = buffer.withUnsafeBytes { streams[k].masker.feed(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
                // The reader is gone (EPIPE): stop reading, so that the command gets SIGPIPE as it would without locket.
                if !writeAll(streams[k].target, clean) {
                    open[k] = false
                    _ = streams[k].masker.finish()
                    close(streams[k].fd)
                }
            }
        }
        LocketSupport.wipe(&buffer)
        if !exited { while waitpid(pid, &status, 0) < 0 && errno == EINTR {} }
        return finished(status, files)
    }

    /// The exit status of a wait status (128+N for signal N), once the
    /// command is gone: its pid may be reused now, so nothing more is
    /// forwarded to it, and its files are removed.
    private static func finished(_ status: Int32, _ files: SecretFiles?) -> Int32 {
        locket_forward_signals(0)
        files?.remove()
        let signalled = status & 0x7f
        return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
    }
}

/// NUL-terminated C strings in malloc'd memory, as execve wants them.
final class CStringArray {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private let count: Int

    init(_ strings: [String]) {
        count = strings.count
        pointers = .allocate(capacity: strings.count + 1)
        for (i, s) in strings.enumerated() { pointers[i] = strdup(s) }
        pointers[strings.count] = nil
    }

    func free() {
        for i in 0..<count { Glibc.free(pointers[i]) }
        pointers.deallocate()
    }
}

/// The child's environment: plain variables, and secrets copied straight from
/// guarded memory into C strings that are wiped once the child has them.
final class EnvironmentBlock {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private var entries: [(UnsafeMutablePointer<CChar>, Int)] = []
    private var wiped = false

    init(plain: [Environment.Variable], secrets: [(name: String, value: SecureBytes)]) {
        pointers = .allocate(capacity: plain.count + secrets.count + 1)
        var i = 0
        for variable in plain {
            // Byte for byte: a value that is not UTF-8 reaches the command unchanged.
            let bytes = variable.name + [UInt8(ascii: "=")] + variable.value + [0]
            let entry = malloc(bytes.count)!.assumingMemoryBound(to: CChar.self)
            bytes.withUnsafeBytes { UnsafeMutableRawPointer(entry).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            entries.append((entry, bytes.count))
            pointers[i] = entry; i += 1
        }
        for (name, value) in secrets {
            let prefix = Array("\(name)=".utf8)
            let size = prefix.count + value.count + 1
            let entry = malloc(size)!.assumingMemoryBound(to: CChar.self)
            prefix.withUnsafeBytes { UnsafeMutableRawPointer(entry).copyMemory(from: $0.baseAddress!, byteCount: prefix.count) }
            value.withUnsafeBytes { raw in
                if raw.count > 0 { (UnsafeMutableRawPointer(entry) + prefix.count).copyMemory(from: raw.baseAddress!, byteCount: raw.count) }
            }
            entry[size - 1] = 0
            entries.append((entry, size))
            pointers[i] = entry; i += 1
        }
        pointers[i] = nil
    }

    func wipe() {
        guard !wiped else { return }
        wiped = true
        for (entry, size) in entries {
            LocketSupport.wipe(UnsafeMutableRawBufferPointer(start: entry, count: size))
            free(entry)
        }
        pointers.deallocate()
    }
}
