import CLocketTPM
import Glibc
import LocketWire

// locket-tpm: the TPM 2.0 client `locket` starts for a Secure Enclave key or
// a TPM-bound keychain (SPEC §21). libtss2 is shared-only on Debian, so it
// lives here and never in the static `locket`. It speaks TPMWire frames on
// stdin/stdout and nothing else; it reads no arguments, and its
// environment is what locket gives it (nothing of the caller's).

// Authorization values and unsealed secrets pass through this process: no core dumps.
locket_tpm_disable_core_dumps()
// tpm2-tss logs failures to stderr unless told otherwise (its level is read
// from the environment at its first message): the helper prints nothing.
setenv("TSS2_LOG", "all+NONE", 1)
// A dead locket must come back as EPIPE on write, not as a signal.
_ = signal(SIGPIPE, SIG_IGN)
closeInheritedDescriptors()

exit(Server(channel: Channel(input: 0, output: 1)).serve())

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
