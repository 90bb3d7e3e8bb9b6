import Foundation
import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

// A primary and a streaming standby as an operator runs them (issue 42):
// Debian's `pg_basebackup -R` from a private server, on loopback, with the
// primary's TLS files; synchronous when asked; and what a failover does to
// them: the primary killed (SIGKILL to the postmaster and every child, as
// `kill -9` of the server), the standby promoted, and replication held back
// first (the walsender stopped) so that an asynchronous failover loses
// exactly what was written meanwhile.
extension PostgresServer {
    /// A streaming standby of this private server (a base backup with
    /// `-R`), started and streaming; with `synchronous`, every commit on
    /// this server then waits for the standby's flush
    /// (`synchronous_standby_names = '*'`, `synchronous_commit = on`).
    /// Its files are under this server's, which stops and removes it.
    public func startStandby(synchronous: Bool) throws -> PostgresServer {
        precondition(owned && !isStandby, "a standby is made of a private primary")
        let bin = try Self.binaries()
        let standby = PostgresServer(standbyOf: self, root: "\(root)/standby", port: try Loopback.freePort())
        try FileManager.default.createDirectory(atPath: standby.socket, withIntermediateDirectories: true)
        if let account {
            for path in [standby.root, standby.socket] where chown(path, account.uid, account.gid) != 0 { throw POSIXError(.EPERM) }
        }
        // --no-sync: the tests' servers run with fsync off, and a synced copy cost seconds.
        try runAsServer("\(bin)/pg_basebackup", ["-h", socket, "-p", String(port), "-U", Self.user, "-D", standby.data,
                                                  "-R", "-X", "stream", "-c", "fast", "--no-sync"])
        // Later lines win: its own port and socket; the rest (TLS files, logging) as the primary's.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(standby.data)/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data("\nport = \(standby.port)\nunix_socket_directories = '\(standby.socket)'\n".utf8))
        handle.closeFile()
        try standby.runAsServer("\(bin)/pg_ctl", ["-D", standby.data, "-l", standby.log, "-w", "-t", "60", "start"])
        standby.running = true
        if synchronous {
            let connection = try connect()
            try connection.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            try connection.execute("ALTER SYSTEM SET synchronous_commit = 'on'")
            try connection.execute("SELECT pg_reload_conf()")
            connection.close()
        }
        try waitForStandby(synchronous: synchronous)
        return standby
    }

    /// Waits until the standby streams (and is the synchronous one when
    /// asked) and has flushed everything written so far: a promotion
    /// replays all it flushed. (Its replay position is reported only every
    /// `wal_receiver_status_interval`, 10 s; the flush position at once.)
    public func waitForStandby(synchronous: Bool = false, timeout: Double = 20) throws {
        let connection = try connect()
        defer { connection.close() }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let row = try connection.execute("""
                SELECT state, sync_state, flush_lsn >= pg_current_wal_lsn() FROM pg_stat_replication
                """).first
            if row?[0].text == "streaming", !synchronous || row?[1].text == "sync", row?[2].bool == true { return }
            usleep(20_000)
        }
        throw ServerFailure(description: "the standby did not catch up within \(timeout) s")
    }

    /// Stops this server's walsender (SIGSTOP): commits go on here, nothing
    /// more reaches the standby. A synchronous primary would wait for it.
    public func pauseReplication() throws {
        let connection = try connect()
        defer { connection.close() }
        guard let pid = try connection.execute("SELECT pid FROM pg_stat_replication").first?[0].int else {
            throw ServerFailure(description: "no walsender to pause")
        }
        guard kill(pid_t(pid), SIGSTOP) == 0 else { throw ServerFailure(description: "SIGSTOP of the walsender: errno \(errno)") }
    }

    /// `kill -9` of the server: the postmaster and every process it started,
    /// at once, so no backend answers another statement or says goodbye.
    public func killNow() throws {
        let pidFile = "\(data)/postmaster.pid"
        guard let text = FileManager.default.contents(atPath: pidFile),
              let postmaster = String(decoding: text, as: UTF8.self).split(separator: "\n").first.flatMap({ pid_t($0) }) else {
            throw ServerFailure(description: "no postmaster.pid in \(data)")
        }
        var victims = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = FileManager.default.contents(atPath: "/proc/\(entry)/stat"),
                  let paren = stat.lastIndex(of: UInt8(ascii: ")")) else { continue }
            // After "comm) ": state, then the parent's pid.
            let fields = stat[(paren + 2)...].split(separator: UInt8(ascii: " "))
            if fields.count > 1, pid_t(String(decoding: fields[1], as: UTF8.self)) == postmaster { victims.append(pid) }
        }
        for pid in victims { kill(pid, SIGKILL) }
        for _ in 0..<200 where victims.contains(where: { Self.isAlive($0) }) { usleep(10_000) }
        running = false
        // The dead postmaster's parent is gone too, so nothing reaps it; its
        // pid file would make pg_ctl wait for a zombie when the watchdog runs.
        unlink(pidFile)
    }

    /// `pg_ctl promote`: the standby ends recovery and takes writes.
    public func promote() throws {
        precondition(isStandby, "only a standby is promoted")
        try runAsServer("\(try Self.binaries())/pg_ctl", ["-D", data, "-w", "-t", "60", "promote"])
    }

    /// Whether `pid` runs (a zombie counts as gone).
    private static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat"), let paren = stat.lastIndex(of: UInt8(ascii: ")")),
              stat.count > paren + 2 else { return false }
        return stat[paren + 2] != UInt8(ascii: "Z")
    }
}
