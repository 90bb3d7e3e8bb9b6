import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// `locket secret-service -- COMMAND`: a session bus of its own (Debian's
/// dbus-daemon, with a configuration that activates no other service, so no
/// gnome-keyring can start on it), the provider on it, COMMAND with
/// DBUS_SESSION_BUS_ADDRESS set. When COMMAND exits, the provider and the bus
/// stop and its status is the exit status; signals sent to this process go
/// on to COMMAND, as with `locket exec`.
enum PrivateBus {
    static func run(_ command: [String], options: ProviderOptions, signals: Int32, log: @escaping (String) -> Void) throws -> Int32 {
        let directory = try makeDirectory()
        defer { removeDirectory(directory) }
        let config = directory + "/bus.conf"
        try write(configuration(listeningIn: directory), to: config)
        let (daemon, address) = try startDaemon(config: config)
        defer { stop(daemon) }
        let provider = try Provider(address: address, options: options, environment: .process, log: log)
        try provider.claimName()
        let child: pid_t
        switch spawn(command, address: address) {
        case .success(let pid): child = pid
        case .failure(let failure):
            log("error: cannot run \(command[0]): \(failure)")
            return failure.code == ENOENT ? 127 : 126
        }
        var status: Int32 = 0
        var exited = false
        provider.serve(signals: signals) { signal in
            if signal == SIGCHLD {
                if !exited, case .success(let changed) = Spawner.wait(child, options: WNOHANG), changed.pid == child {
                    status = changed.status
                    exited = true
                }
                return exited
            }
            if !exited { kill(child, signal) }
            return false
        }
        if !exited {
            // The bus went away under COMMAND: it is stopped rather than left without its provider.
            log(provider.stopped)
            status = Spawner.stop(child)
        }
        return Spawner.shellStatus(status)
    }

    /// dbus-daemon's configuration: a session bus listening in our private
    /// directory, every connection of this user allowed, no service
    /// directories (nothing is activated), and limits that let a 10 MB
    /// secret through (the session bus's own, from Debian's session.conf).
    static func configuration(listeningIn directory: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:dir=\(directory)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
          <limit name="max_incoming_bytes">1000000000</limit>
          <limit name="max_incoming_unix_fds">250000000</limit>
          <limit name="max_outgoing_bytes">1000000000</limit>
          <limit name="max_outgoing_unix_fds">250000000</limit>
          <limit name="max_message_size">1000000000</limit>
          <limit name="service_start_timeout">120000</limit>
          <limit name="auth_timeout">240000</limit>
          <limit name="pending_fd_timeout">150000</limit>
          <limit name="max_completed_connections">100000</limit>
          <limit name="max_incomplete_connections">10000</limit>
          <limit name="max_connections_per_user">100000</limit>
          <limit name="max_pending_service_starts">10000</limit>
          <limit name="max_names_per_connection">50000</limit>
          <limit name="max_match_rules_per_connection">50000</limit>
          <limit name="max_replies_per_connection">50000</limit>
        </busconfig>

        """
    }

    /// A private directory for the socket and the configuration.
    private static func makeDirectory() throws -> String {
        let runtime = (try? Environment.process["XDG_RUNTIME_DIR"]) ?? nil
        let base = runtime.flatMap { $0.hasPrefix("/") && access($0, W_OK) == 0 ? $0 : nil } ?? "/tmp"
        var template = Array((base + "/locket-bus-XXXXXX").utf8CString)
        let made = try template.withUnsafeMutableBufferPointer { buffer in
            try pointerOrErrno("mkdtemp") { mkdtemp(buffer.baseAddress!) }.get { ProviderError("cannot make a directory in \(base): \($0)") }
        }
        return String(cString: made)
    }

    private static func removeDirectory(_ directory: String) {
        if let dir = opendir(directory) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
                if name != "." && name != ".." { unlink(directory + "/" + name) }
            }
            closedir(dir)
        }
        rmdir(directory)
    }

    private static func write(_ text: String, to path: String) throws {
        let fd = try valueOrErrno("open") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
            .get { ProviderError("cannot write \(path): \($0)") }
        defer { close(fd) }
        try writeAll(fd, Array(text.utf8)).get { ProviderError("cannot write \(path): \($0)") }
    }

    /// The first argument of this executable that makes it the private
    /// bus's dbus-daemon: `locket-secret-service DAEMON_MODE PARENT_PID
    /// ARGUMENTS...` (an internal command line, never the user's).
    static let daemonMode = "--private-bus-daemon"

    /// The private bus's dbus-daemon, exec'd with a parent-death signal
    /// (posix_spawn can't set one): when the provider ends, however it ends
    /// (SIGKILL, an abort), the kernel sends the daemon SIGTERM, so no bus
    /// is left behind without its provider (issue 44). Returns only on failure.
    static func execDaemon(_ arguments: [String]) -> Int32 {
        guard let parent = Int32(arguments[0]), arguments.count > 1 else { return 2 }
        guard locket_set_parent_death_signal(SIGTERM) == 0 else { return 1 }
        // The provider ended between the spawn and the prctl: nothing would signal us.
        guard getppid() == parent else { return 1 }
        let argv: [UnsafeMutablePointer<CChar>?] = (["dbus-daemon"] + arguments.dropFirst()).map { strdup($0) } + [nil]
        _ = argv.withUnsafeBufferPointer { execvp("dbus-daemon", $0.baseAddress!) }
        return 127
    }

    /// Starts dbus-daemon (through `execDaemon`) and reads the address it prints.
    private static func startDaemon(config: String) throws -> (pid_t, String) {
        var pipe: [Int32] = [-1, -1]
        try nothingOrErrno("pipe2") { locket_pipe_cloexec(&pipe) }.get { ProviderError("cannot make a pipe: \($0)") }
        let options = ["--config-file=\(config)", "--nofork", "--nopidfile", "--print-address=1"]
        // This executable, to set the parent-death signal before dbus-daemon runs; dbus-daemon itself where /proc is not mounted.
        let own = readLink("/proc/self/exe")
        let arguments = own.map { _ in ["locket-secret-service", daemonMode, String(getpid())] + options } ?? ["dbus-daemon"] + options
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // Its warnings (it can't raise its descriptor limit in a container) are not the user's business.
        let spawned = Spawner.spawn(own ?? "dbus-daemon", argv: argv, environment: environ, stdin: .devNull, stdout: .descriptor(pipe[1]),
                                    stderr: .devNull, searchPath: own == nil)
        close(pipe[1])
        defer { close(pipe[0]) }
        let pid = try spawned.get { ProviderError("cannot start dbus-daemon: \($0) (Debian's dbus-daemon package has it)") }
        var line: [UInt8] = []
        var fds = [pollfd(fd: pipe[0], events: Int16(POLLIN), revents: 0)]
        let deadline = Prompt.now() + 20
        while !line.contains(10) {
            guard Prompt.now() < deadline, valueOrErrno("poll", { poll(&fds, 1, 1000) }).error == nil else { break }
            guard fds[0].revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 256)
            guard case .success(let n) = valueOrErrno("read", { read(pipe[0], &chunk, chunk.count) }), n > 0 else { break }
            line.append(contentsOf: chunk[..<n])
        }
        guard let end = line.firstIndex(of: 10), end > 0 else {
            stop(pid)
            throw ProviderError("dbus-daemon did not start (no address printed; Debian's dbus-daemon package has it)")
        }
        return (pid, String(decoding: line[..<end], as: UTF8.self))
    }

    private static func stop(_ pid: pid_t) { Spawner.stop(pid) }

    /// COMMAND with DBUS_SESSION_BUS_ADDRESS set, the rest of the environment
    /// as it is, byte for byte (the entries are passed on, not re-encoded).
    private static func spawn(_ command: [String], address: String) -> Result<pid_t, Errno> {
        var envp: [UnsafeMutablePointer<CChar>?] = []
        var index = 0
        let prefix = Array("DBUS_SESSION_BUS_ADDRESS=".utf8)
        while let entry = environ[index] {
            if !prefix.withUnsafeBytes({ memcmp(entry, $0.baseAddress!, prefix.count) == 0 }) { envp.append(entry) }
            index += 1
        }
        let own = strdup("DBUS_SESSION_BUS_ADDRESS=\(address)")
        envp.append(own)
        envp.append(nil)
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            free(own)
        }
        return Spawner.spawn(command[0], argv: argv, environment: envp, searchPath: true)
    }
}
