import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// Where a command keeps what lives only as long as it runs and must stay
/// the user's alone: `exec --file`'s secrets, the ssh-agent's socket.
///
/// `$XDG_RUNTIME_DIR` is where such things belong, but it is only an
/// environment variable: a directory another user can write (or swap, or
/// reach through a link of theirs) would let them replace locket's directory
/// inside it with their own after it was made, and the secret or socket would
/// be theirs. So it is used only when `isTrusted` says so, else `/dev/shm`
/// (sticky, so nobody can rename what is ours there), and what is made in
/// either is a `NAME-UID` directory used only if it is this user's alone.
enum RuntimeDirectory {
    /// `$XDG_RUNTIME_DIR` when it is absolute and trusted; nil otherwise.
    static func trusted(_ environment: Environment) throws -> String? {
        guard var runtime = try environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        // lstat of "dir/" would follow a link named dir.
        while runtime.count > 1 && runtime.hasSuffix("/") { runtime.removeLast() }
        return isTrusted(runtime) ? runtime : nil
    }

    /// The private directory `NAME-UID` in the first usable base (a trusted
    /// `$XDG_RUNTIME_DIR`, `/dev/shm`, and for what is not a secret `/tmp`),
    /// made mode 700 if missing. With `memoryOnly` only tmpfs or ramfs bases
    /// count: a secret written there never reaches a disk.
    static func privateParent(_ environment: Environment, name: String, memoryOnly: Bool) throws -> String {
        var bases = try trusted(environment).map { [$0] } ?? []
        bases += memoryOnly ? ["/dev/shm"] : ["/dev/shm", "/tmp"]
        guard let base = bases.first(where: { isUsableBase($0) && (!memoryOnly || isMemoryFilesystem($0)) }) else {
            throw KeychainError(.io, memoryOnly
                                ? "no private tmpfs: neither $XDG_RUNTIME_DIR (a directory of yours alone) nor /dev/shm is a memory file system"
                                : "no private place for \(name): neither $XDG_RUNTIME_DIR (a directory of yours alone), /dev/shm nor /tmp is usable",
                                hint: "set XDG_RUNTIME_DIR to a tmpfs directory of yours, mode 700")
        }
        let parent = "\(base)/\(name)-\(geteuid())"
        if let failure = nothingOrErrno("mkdir", { mkdir(parent, 0o700) }).error, failure.code != EEXIST {
            throw KeychainError(.io, "cannot create \(parent): \(failure)")
        }
        // Another user may have made this name first: use it only if it is ours alone.
        guard isPrivateDirectory(parent) else {
            throw KeychainError(.io, "\(parent) is not a directory private to this user (it must be owned by you, mode 700); locket keeps nothing there",
                                hint: "remove it, or set XDG_RUNTIME_DIR to a tmpfs directory of yours, mode 700")
        }
        return parent
    }

    /// Whether `path` may hold private files: a directory, not a symbolic
    /// link, owned by this user with no access for anyone else (mode 700, as
    /// the XDG Base Directory spec requires of the runtime directory), that
    /// resolves, and every directory above it, as written and as resolved,
    /// owned by root or this user and writable by no one else unless sticky,
    /// so that nobody else can rename it, or a link on the way to it, after
    /// it was checked (`TrustedPath`).
    static func isTrusted(_ path: String) -> Bool {
        guard PrivateFile.Rule.privateDirectory.isKept(atPath: path), let resolved = realpath(path, nil) else { return false }
        free(resolved)
        return TrustedPath.unsafeAncestor(of: path) == nil
    }

    /// A fallback base: a directory whose entries others can't rename (root's
    /// or ours; not writable by others, or sticky, as /dev/shm and /tmp are).
    private static func isUsableBase(_ path: String) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0, PrivateFile.Rule(kind: S_IFDIR, rootMayOwn: true, ownerOnly: 0).violation(st) == nil else { return false }
        return st.st_mode & 0o022 == 0 || st.st_mode & S_ISVTX != 0
    }

    /// tmpfs and ramfs keep files in memory only (statfs(2) magic numbers).
    static func isMemoryFilesystem(_ path: String) -> Bool {
        let type = locket_filesystem_type(path)
        return type == 0x0102_1994 || type == 0x8584_58f6
    }

    static func isPrivateDirectory(_ path: String) -> Bool {
        PrivateFile.Rule.privateDirectory.isKept(atPath: path)
    }
}
