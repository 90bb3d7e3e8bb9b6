import CLibPQ
import Glibc
import LocketWire

// locket-postgres: the PostgreSQL client `locket` starts for a remote
// keychain (docs/REMOTE.md). It speaks LocketWire frames on stdin/stdout and
// nothing else; it reads no arguments.

// The database password passes through this process: no core dumps.
locket_pg_disable_core_dumps()
// A dead locket must come back as EPIPE on write, not as a signal.
_ = signal(SIGPIPE, SIG_IGN)
closeInheritedDescriptors()

exit(Session(channel: Channel(input: 0, output: 1)).serve())

/// Closes every descriptor above stderr that a careless parent left open.
func closeInheritedDescriptors() {
    guard let directory = opendir("/proc/self/fd") else { return }
    var open: [Int32] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if let fd = Int32(name), fd > 2 { open.append(fd) }
    }
    let own = dirfd(directory)
    closedir(directory)
    for fd in open where fd != own { close(fd) }
}
