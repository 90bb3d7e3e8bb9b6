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
        guard let child = spawn(command, address: address) else {
            log("error: cannot run \(command[0]): \(String(cString: strerror(errno)))")
            return errno == ENOENT ? 127 : 126
        }
        var status: Int32 = 0
        var exited = false
        provider.serve(signals: signals) { signal in
            if signal == SIGCHLD {
                if !exited && waitpid(child, &status, WNOHANG) == child { exited = true }
                return exited
            }
            if !exited { kill(child, signal) }
            return false
        }
        if !exited {
            // The bus went away under COMMAND: it is stopped rather than left without its provider.
            log(provider.stopped)
            kill(child, SIGTERM)
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
        let signalled = status & 0x7f
        return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
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
        guard mkdtemp(&template) != nil else { throw ProviderError("cannot make a directory in \(base): \(String(cString: strerror(errno)))") }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
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
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ProviderError("cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard writeAll(fd, bytes) else { throw ProviderError("cannot write \(path)") }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    /// Starts dbus-daemon and reads the address it prints.
    private static func startDaemon(config: String) throws -> (pid_t, String) {
        var pipe: [Int32] = [-1, -1]
        guard locket_pipe_cloexec(&pipe) == 0 else { throw ProviderError("cannot make a pipe") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        // Its warnings (it can't raise its descriptor limit in a container) are not the user's business.
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = ["dbus-daemon", "--config-file=\(config)", "--nofork", "--nopidfile", "--print-address=1"]
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = withChildSpawnAttributes { posix_spawnp(&pid, "dbus-daemon", &actions, $0, argv, environ) }
        close(pipe[1])
        defer { close(pipe[0]) }
        guard rc == 0 else {
            throw ProviderError("cannot start dbus-daemon: \(String(cString: strerror(rc))) (Debian's dbus-daemon package has it)")
        }
        var line: [UInt8] = []
        var fds = [pollfd(fd: pipe[0], events: Int16(POLLIN), revents: 0)]
        let deadline = Prompt.now() + 20
        while !line.contains(10) {
            guard Prompt.now() < deadline, poll(&fds, 1, 1000) >= 0 || errno == EINTR else { break }
            guard fds[0].revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 256)
            let n = read(pipe[0], &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            line.append(contentsOf: chunk[..<n])
        }
        guard let end = line.firstIndex(of: 10), end > 0 else {
            stop(pid)
            throw ProviderError("dbus-daemon did not start (no address printed)")
        }
        return (pid, String(decoding: line[..<end], as: UTF8.self))
    }

    private static func stop(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// COMMAND with DBUS_SESSION_BUS_ADDRESS set, the rest of the environment
    /// as it is, byte for byte (the entries are passed on, not re-encoded).
    private static func spawn(_ command: [String], address: String) -> pid_t? {
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
        var pid: pid_t = 0
        let rc = withChildSpawnAttributes { posix_spawnp(&pid, command[0], nil, $0, argv, envp) }
        guard rc == 0 else {
            errno = rc
            return nil
        }
        return pid
    }
}
