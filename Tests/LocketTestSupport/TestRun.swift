import Foundation
import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

/// What the test processes of one run share: `Tests/run-tests` (or `swift
/// test --parallel`) runs each class, or each test, in a process of its
/// own, and what costs a lot to make and nothing to copy (the PostgreSQL
/// template and shared server, `SharedPostgres`; the throwaway keys,
/// `TestKeys`) is made once per run in a directory named for the run: the
/// parent process the test processes share, and its start time. A watchdog
/// in a session of its own removes the directory once that process ends, so
/// that the next run makes everything afresh.
public enum TestRun {
    /// The process whose end ends the run, and the run's directory.
    struct Parent {
        let pid: pid_t
        /// Field 22 of /proc/PID/stat: with the pid, names one process.
        let startTime: String
        let directory: String
    }

    /// Why the run's directory or a lock in it could not be had.
    public struct Failure: Error, CustomStringConvertible { public let description: String }

    /// The run's private directory.
    public static func directory() throws -> String { try parent().directory }

    /// `body` with an exclusive flock on `path` (made 0600 if missing): of
    /// two test processes wanting the same thing, one makes it while the other waits.
    static func locked<T>(_ path: String, _ body: () throws -> T) throws -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Failure(description: "\(path): errno \(errno)") }
        defer { close(fd) }
        try nothingOrErrno("flock") { flock(fd, LOCK_EX) }.get { Failure(description: "flock \(path): errno \($0.code)") }
        return try body()
    }

    /// `path` made 0700 here or checked to be this user's own private
    /// directory, not a link (anything else in /tmp is someone else's); true when made here.
    @discardableResult
    static func privateDirectory(_ path: String) throws -> Bool {
        let made = mkdir(path, 0o700) == 0
        if !made {
            guard errno == EEXIST else { throw Failure(description: "mkdir \(path): errno \(errno)") }
        }
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw Failure(description: "\(path) is not this user's private directory")
        }
        return made
    }

    /// The parent process of this test process and the directory of its run:
    /// /tmp/locket-run-EUID-PID-START. The process that makes the directory
    /// starts the watchdog that removes it once that parent ends.
    static func parent() throws -> Parent {
        let pid = getppid()
        guard let line = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
              let paren = line.lastIndex(of: UInt8(ascii: ")")) else {
            throw Failure(description: "no /proc/\(pid)/stat")
        }
        // After "comm) ", field 3 (state) comes first: field 22 is the 20th.
        let fields = line[(paren + 2)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 19 else { throw Failure(description: "short /proc/\(pid)/stat") }
        let start = String(decoding: fields[19], as: UTF8.self)
        let parent = Parent(pid: pid, startTime: start, directory: "/tmp/locket-run-\(geteuid())-\(pid)-\(start)")
        if try privateDirectory(parent.directory) { try afterParent(parent, "rm -rf -- \"$3\"\n") }
        return parent
    }

    /// A shell, in a session of its own so that neither the end of this test
    /// process nor a ^C of the run's process group ends it, that waits for
    /// the process `parent` names to end (the same pid with the same start
    /// time: a reused pid is another process), then runs `cleanUp` ($3 is the run's directory).
    static func afterParent(_ parent: Parent, _ cleanUp: String) throws {
        let script = """
            while [ "$(sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f20)" = "$2" ]; do sleep 1; done

            """ + cleanUp
        // Nothing here waits for it: it outlives this process, and init reaps it.
        _ = try PostgresServer.spawn("/bin/sh", ["-c", script, "watchdog", String(parent.pid), parent.startTime, parent.directory],
                                     environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], stdin: .devNull, stdout: "/dev/null",
                                     stderr: "/dev/null", newSession: true)
    }
}
