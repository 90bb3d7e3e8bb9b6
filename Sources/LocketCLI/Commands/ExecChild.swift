import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

// exec's child process: started with the secrets in its environment (or
// files), signals forwarded to it, its output masked if asked, its exit
// status handed on, its files removed once it is gone.
extension Commands {
    /// Reports a failed exec the way shells do: 127 when not found, 126 otherwise.
    static func execFailure(_ program: String, _ context: Context, _ failure: Errno) -> Int32 {
        context.err("locket: error: cannot run \(program): \(failure)")
        return failure.code == ENOENT ? 127 : 126
    }

    /// The signals forwarded to the command.
    private static let forwardedSignals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH]

    static func blockForwardedSignals(_ previous: inout sigset_t) {
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
    static func runChild(_ program: String, argv: CStringArray, environment: EnvironmentBlock, masking: [SecureBytes]?,
                                 files: SecretFiles? = nil, blocked: sigset_t? = nil, _ context: Context) throws -> Int32 {
        // Hold the forwarded signals until the forwarders are in place: one
        // arriving between spawn and then would kill locket and orphan the command.
        var previous = sigset_t()
        if let blocked { previous = blocked } else { blockForwardedSignals(&previous) }
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        if masking != nil, let reason = (nothingOrErrno("pipe2") { locket_pipe_cloexec(&outPipe) }.error
                                         ?? nothingOrErrno("pipe2") { locket_pipe_cloexec(&errPipe) }.error) {
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            throw KeychainError(.io, "cannot create pipes: \(reason)")
        }
        locket_prepare_exec()
        // Without a filter the pipes are -1: the command writes to locket's own stdout and stderr.
        let spawned = Spawner.spawn(program, argv: argv.pointers, environment: environment.pointers,
                                    stdout: outPipe[1] >= 0 ? .descriptor(outPipe[1]) : .inherit,
                                    stderr: errPipe[1] >= 0 ? .descriptor(errPipe[1]) : .inherit, searchPath: true)
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
            return execFailure(program, context, error)
        }
        locket_forward_signals(pid)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        var status: Int32 = 0
        // Without a filter the command writes straight to locket's stdout and stderr: wait for it.
        guard let secrets = masking else {
            if case .success(let ended) = Spawner.wait(pid) { status = ended.status }
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
            guard case .success(let n) = valueOrErrno("poll", { poll(&fds, nfds_t(fds.count), 250) }) else { break }
            // The command's exit ends the run even if something it started still
            // holds the pipes: drain what is there without waiting for more.
            if !exited, case .success(let ended) = Spawner.wait(pid, options: WNOHANG), ended.pid == pid {
                status = ended.status
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
                let read = buffer.withUnsafeMutableBytes { raw in valueOrErrno("read") { Glibc.read(streams[k].fd, raw.baseAddress, raw.count) } }
                if read.error?.code == EAGAIN && !exited { continue }
                let got = (try? read.get()) ?? 0
                if got == 0 {
                    open[k] = false
                    _ = writeAll(streams[k].target, streams[k].masker.finish())
                    close(streams[k].fd)
                    continue
                }
                let clean = buffer.withUnsafeBytes { streams[k].masker.feed(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
                // The reader is gone (EPIPE): stop reading, so that the command gets SIGPIPE as it would without locket.
                if case .failure = writeAll(streams[k].target, clean) {
                    open[k] = false
                    _ = streams[k].masker.finish()
                    close(streams[k].fd)
                }
            }
        }
        LocketSupport.wipe(&buffer)
        if !exited, case .success(let ended) = Spawner.wait(pid) { status = ended.status }
        return finished(status, files)
    }

    /// The exit status of a wait status (128+N for signal N), once the
    /// command is gone: its pid may be reused now, so nothing more is
    /// forwarded to it, and its files are removed.
    static func finished(_ status: Int32, _ files: SecretFiles?) -> Int32 {
        locket_forward_signals(0)
        files?.remove()
        let signalled = status & 0x7f
        return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
    }
}
