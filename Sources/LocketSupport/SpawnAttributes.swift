import Glibc

/// The posix_spawn attributes every child of locket gets (a command for
/// `exec`, gpg, the PostgreSQL helper): default handling of the signals
/// locket changes for itself, and an empty signal mask, so that the child
/// starts as if from a shell. `body` runs the spawn with them.
public func withChildSpawnAttributes<R>(_ body: (UnsafePointer<posix_spawnattr_t>) -> R) -> R {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for sig in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, sig) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var unblocked = sigset_t()
    sigemptyset(&unblocked)
    posix_spawnattr_setsigmask(&attributes, &unblocked)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
    return withUnsafePointer(to: &attributes) { body($0) }
}
