import Foundation
import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

// How a PostgresServer is set up and driven: its commands (as its own
// account under root), its watchdogs, the account, the throwaway CA.
extension PostgresServer {
    @discardableResult
    func runAsServer(_ program: String, _ arguments: [String]) throws -> Data {
        if let account {
            return try Self.run("/usr/bin/setpriv", ["--reuid=\(account.uid)", "--regid=\(account.gid)", "--clear-groups", "--", program] + arguments,
                                environment: ["PATH": "/usr/bin:/bin", "LANG": "C", "HOME": root])
        }
        return try Self.run(program, arguments, environment: ["PATH": "/usr/bin:/bin", "LANG": "C", "HOME": root])
    }

    /// A shell that waits for its stdin to close (this test process ending,
    /// however it ends), then stops the server and removes its files and its
    /// account: a test process that crashed left both behind before.
    func startWatchdog(_ bin: String) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let script = "cat >/dev/null\n" + cleanUpScript(bin)
        if let pid = try? Self.spawn("/bin/sh", ["-c", script], environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], stdin: .descriptor(fds[0]),
                                     stdout: "/dev/null", stderr: "/dev/null") {
            watchdog = pid
            watchdogInput = fds[1]
        } else {
            close(fds[1])
        }
        close(fds[0])
    }

    /// Stops the server now (as if it crashed), removes its files and account.
    private func cleanUpScript(_ bin: String) -> String {
        let asServer = account.map { "/usr/bin/setpriv --reuid=\($0.uid) --regid=\($0.gid) --clear-groups -- " } ?? ""
        // A standby made by startStandby lives under root: stopped first.
        return """
            [ -d '\(root)/standby/data' ] && \(asServer)'\(bin)/pg_ctl' -D '\(root)/standby/data' -m immediate -w -t 60 stop
            \(asServer)'\(bin)/pg_ctl' -D '\(data)' -m immediate -w -t 60 stop
            rm -rf -- '\(root)'
            \(account.map { "/usr/sbin/userdel '\($0.name)'" } ?? "")

            """
    }

    /// A shell, in a session of its own so that neither the end of this test
    /// process nor a ^C of the run's process group ends it, that waits for
    /// the process `parent` names to end (the same pid with the same start
    /// time: a reused pid is another process), then stops the server and
    /// removes its files and its account.
    func startDetachedWatchdog(_ bin: String, parent: TestRun.Parent) throws {
        try TestRun.afterParent(parent, cleanUpScript(bin))
    }

    @discardableResult
    public static func run(_ program: String, _ arguments: [String], environment: [String: String] = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]) throws -> Data {
        let scratch = "/tmp/locket-pg-run-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        defer { unlink("\(scratch).out"); unlink("\(scratch).err") }
        let pid = try spawn(program, arguments, environment: environment,
                            stdin: .devNull, stdout: "\(scratch).out", stderr: "\(scratch).err")
        let status = (try? Spawner.wait(pid).get().status) ?? 0
        let out = FileManager.default.contents(atPath: "\(scratch).out") ?? Data()
        let errors = FileManager.default.contents(atPath: "\(scratch).err") ?? Data()
        guard status == 0 else {
            throw ServerFailure(description: "\(program) \(arguments.joined(separator: " ")) ended with status \(status): "
                                + String(decoding: errors, as: UTF8.self))
        }
        return out
    }

    /// The test spawner with stdin from /dev/null or a descriptor, stdout
    /// and stderr to files, and no other descriptor of this process: a server
    /// that outlives this test process must not hold the pipe the test
    /// runner reads its output from. Swift's Glibc doesn't export
    /// posix_spawn_file_actions_addclosefrom_np, so bash closes them before
    /// it execs `program`; `newSession` puts it in a session of its own (setsid).
    static func spawn(_ program: String, _ arguments: [String], environment: [String: String],
                      stdin: ChildStream, stdout: String, stderr: String, newSession: Bool = false) throws -> pid_t {
        let closeAndExec = #"for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n<&-"; done; exec "$@""#
        let command = (newSession ? ["/usr/bin/setsid"] : []) + ["/bin/bash", "-c", closeAndExec, "spawn", program] + arguments
        let spawned = ProcessSpawner.spawn(command[0], command.dropFirst().map { Array($0.utf8) }, environmentEntries: ProcessSpawner.entries(environment),
                                           stdin: stdin, stdout: .file(stdout, mode: 0o644), stderr: .file(stderr, mode: 0o644))
        return try spawned.get { ServerFailure(description: "could not start \(program): errno \($0.code)") }
    }

    /// A server command that failed, with what it said.
    public struct ServerFailure: Error, CustomStringConvertible { public let description: String }

    static func makeAccount() throws -> (name: String, uid: uid_t, gid: gid_t) {
        for tool in ["/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/bin/setpriv"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw TestUnavailable("\(tool) is missing: PostgreSQL refuses to run as root and needs an account of its own")
        }
        let name = "lkt-pg-\(getpid())-\(UInt16.random(in: 0...9999))"
        try run("/usr/sbin/useradd", ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name])
        guard let entry = getpwnam(name) else { throw ServerFailure(description: "useradd \(name) made no account") }
        return (name, entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// A CA, a server certificate for localhost and 127.0.0.1 signed by it, and an unrelated CA.
    func makeCertificates() throws {
        let tls = "\(root)/tls"
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.run("/usr/bin/openssl", ["req", "-x509"] + ec + ["-keyout", "\(tls)/ca.key", "-out", "\(tls)/ca.crt", "-days", "2", "-subj", "/CN=locket test CA"])
        try Self.run("/usr/bin/openssl", ["req", "-x509"] + ec + ["-keyout", "\(tls)/wrong-ca.key", "-out", "\(tls)/wrong-ca.crt", "-days", "2",
                                                                  "-subj", "/CN=locket wrong CA"])
        try Self.run("/usr/bin/openssl", ["req"] + ec + ["-keyout", "\(tls)/server.key", "-out", "\(tls)/server.csr", "-subj", "/CN=localhost"])
        try Data("subjectAltName=DNS:localhost,IP:127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: "\(tls)/san.ext"))
        try Self.run("/usr/bin/openssl", ["x509", "-req", "-in", "\(tls)/server.csr", "-CA", "\(tls)/ca.crt", "-CAkey", "\(tls)/ca.key",
                                          "-CAcreateserial", "-out", "\(tls)/server.crt", "-days", "2", "-extfile", "\(tls)/san.ext"],
                     environment: OpenSSLFixtures.environment.merging(["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]) { $1 })
    }
}
