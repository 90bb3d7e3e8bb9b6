import CLocketShim
import Glibc
import LocketCore

extension Commands {
    /// `locket exec [--env NAME=REF]... [--mask] -- COMMAND [ARG]...`
    static func exec(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        guard let program = invocation.operands.first else {
            throw UsageError(message: "no command to run", command: "exec")
        }
        // Which variables to fill: --env NAME=REF, then NAME=locket:REF already in the environment.
        var references: [(name: String, reference: String)] = []
        for assignment in invocation.all("env") {
            guard let eq = assignment.firstIndex(of: "="), isVariableName(assignment[..<eq]) else {
                throw UsageError(message: "--env needs NAME=REF with a variable name, not '\(assignment.prefix(40))'", command: "exec")
            }
            references.removeAll { $0.name == assignment[..<eq] }
            references.append((String(assignment[..<eq]), String(assignment[assignment.index(after: eq)...])))
        }
        let variables = context.io.environment.all
        let marker = Array("locket:".utf8)
        for variable in variables where variable.value.starts(with: marker) {
            // A name that is not text is no name locket can report; it is handed on as it is.
            guard let name = variable.nameText, !references.contains(where: { $0.name == name }) else { continue }
            guard let reference = String(validating: variable.value.dropFirst(marker.count), as: UTF8.self) else {
                throw KeychainError(.param, "\(name) is not valid UTF-8")
            }
            references.append((name, reference))
        }

        // Every reference resolves before anything starts; one failure starts nothing.
        var secrets: [(name: String, value: SecureBytes)] = []
        if !references.isEmpty {
            let keychain = try context.openKeychain()
            for (name, reference) in references {
                do {
                    let query = try Reference.query(reference)
                    guard let data = try keychain.search(query, limit: .one, returnData: true).first?.data else {
                        throw KeychainError(.itemNotFound)
                    }
                    guard !data.withUnsafeBytes({ $0.contains(0) }) else {
                        throw KeychainError(.param, "the secret contains a NUL byte, which an environment variable can't hold")
                    }
                    secrets.append((name, data))
                } catch let error as KeychainError {
                    throw KeychainError(error.code, "\(name): \(error.message)", hint: error.hint)
                }
            }
        }

        let plain = variables.filter { variable in !secrets.contains { Array($0.name.utf8) == variable.name } }
        let block = EnvironmentBlock(plain: plain, secrets: secrets)
        defer { block.wipe() }
        let argv = CStringArray(invocation.operands)
        defer { argv.free() }

        guard invocation.has("mask") else {
            // Without a filter locket has nothing left to do: become the command,
            // so signals, the exit status and the terminal are its own.
            locket_prepare_exec()
            locket_execvpe(program, argv.pointers, block.pointers)
            return execFailure(program, context)
        }
        return try runMasked(program, argv: argv, environment: block, secrets: secrets.map(\.value), context)
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

    /// Runs the command with its stdout and stderr through the mask filter,
    /// forwarding signals, and returns its exit status (128+N for signal N).
    private static func runMasked(_ program: String, argv: CStringArray, environment: EnvironmentBlock,
                                  secrets: [SecureBytes], _ context: Context) throws -> Int32 {
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        guard locket_pipe_cloexec(&outPipe) == 0, locket_pipe_cloexec(&errPipe) == 0 else {
            throw KeychainError(.io, "cannot create pipes: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child gets default signal handling and the core limit locket lowered for itself.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        // Hold the forwarded signals until the forwarders are in place: one
        // arriving between spawn and then would kill locket and orphan the command.
        var forwarded = sigset_t(), previous = sigset_t()
        sigemptyset(&forwarded)
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH] { sigaddset(&forwarded, sig) }
        pthread_sigmask(SIG_BLOCK, &forwarded, &previous)
        locket_prepare_exec()
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, program, &actions, &attributes, argv.pointers, environment.pointers)
        signal(SIGPIPE, SIG_IGN)
        locket_disable_core_dumps()
        close(outPipe[1])
        close(errPipe[1])
        environment.wipe()
        guard rc == 0 else {
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            close(outPipe[0]); close(errPipe[0])
            return execFailure(program, context, code: rc)
        }
        locket_forward_signals(pid)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        var status: Int32 = 0
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
        for k in buffer.indices { buffer[k] = 0 }
        if !exited { while waitpid(pid, &status, 0) < 0 && errno == EINTR {} }
        let signalled = status & 0x7f
        return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
    }
}

/// Writes all of `bytes` to `fd`; false once the reader is gone (EPIPE) or on another error.
private func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
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
            explicit_bzero(entry, size)
            free(entry)
        }
        pointers.deallocate()
    }
}
