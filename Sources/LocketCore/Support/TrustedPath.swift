import Glibc
import LocketSupport

/// Whether anyone but this user (or root) could change what a path leads
/// to: the check behind the runtime directory locket trusts and the
/// credential socket's directory.
public enum TrustedPath {
    /// The first directory above `path` (as written, then as resolved when it
    /// resolves) that another user owns, or that others may write without the
    /// sticky bit: whoever controls it could rename it, or a link on the way,
    /// and put something of theirs where locket looks. lstat, so a link on
    /// the way counts by its own owner. nil when there is none.
    public static func unsafeAncestor(of path: String) -> String? {
        var candidates = [path]
        if let resolved = realpath(path, nil) {
            candidates.append(String(cString: resolved))
            free(resolved)
        }
        for candidate in candidates {
            var prefix = ""
            for component in candidate.split(separator: "/").dropLast() {
                prefix += "/" + component
                var st = stat()
                guard lstat(prefix, &st) == 0, PrivateFile.isOwn(st, orRoot: true) else { return prefix }
                if st.st_mode & S_IFMT == S_IFDIR, st.st_mode & 0o022 != 0, st.st_mode & S_ISVTX == 0 { return prefix }
            }
        }
        return nil
    }
}
