import Glibc
import LocketSupport

/// posix_spawnp with the plumbing every child of locket gets: chosen
/// descriptors dup'd onto 1 and 2 (a negative one leaves locket's own), default handling of the signals locket
/// changes for itself, and an empty signal mask.
enum Spawn {
    /// What the child reads.
    enum Input { case inherit, devNull }

    /// Starts `program` (looked up in PATH) with `argv` and `environment`.
    /// Returns the child's pid, or the errno of posix_spawnp.
    static func start(_ program: String, argv: CStringArray, environment: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
                      stdin: Input, stdout: Int32, stderr: Int32) -> Result<pid_t, Errno> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if stdin == .devNull { posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) }
        // A negative descriptor leaves locket's own in place.
        if stdout >= 0 { posix_spawn_file_actions_adddup2(&actions, stdout, 1) }
        if stderr >= 0 { posix_spawn_file_actions_adddup2(&actions, stderr, 2) }
        var pid: pid_t = 0
        let rc = withChildSpawnAttributes { posix_spawnp(&pid, program, &actions, $0, argv.pointers, environment) }
        return rc == 0 ? .success(pid) : .failure(Errno(rc))
    }

    /// An errno value as an Error.
    struct Errno: Error {
        let code: Int32
        init(_ code: Int32) { self.code = code }
    }

    /// Waits for `pid`; its exit status, or 128+N when signal N ended it.
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signalled = status & 0x7f
        return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
    }
}
