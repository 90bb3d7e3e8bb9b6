import CLocketSystem
import Glibc
import LocketSupport

/// Tells the module when a keychain's files changed since it last looked
/// (inotify on the keychain's directory: the file, its `-wal`, a copy
/// renamed over it, its removal), so that a keychain kept open between calls
/// and the searches answered from its rows are dropped the moment another
/// process (or this one) writes. The kernel queues an event before the
/// writer's system call returns: a write that completed before a call is
/// always seen by that call.
///
/// Only on local filesystems, where every write passes through this
/// kernel; elsewhere (NFS, FUSE, ...) `watch` says no and the module opens
/// the keychain afresh for every call, as the command line does.
final class FileChanges {
    private var fd: Int32 = -1
    /// Watched directories by watch descriptor, and the reverse.
    private var directories: [Int32: String] = [:]
    private var watches: [String: Int32] = [:]

    /// What changed: directories whose every file must be taken as changed
    /// (events were lost, the directory moved), and files by directory.
    struct Changes {
        var directories: Set<String> = []
        var files: [String: [String]] = [:]

        var isEmpty: Bool { directories.isEmpty && files.isEmpty }

        /// Whether the keychain at `path` (or one of its companion files) changed.
        func affect(_ path: KeychainPath) -> Bool {
            if directories.contains(path.directory) { return true }
            return files[path.directory]?.contains { $0.hasPrefix(path.name) } ?? false
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Starts watching the directory of `path`; false when its changes
    /// can't be seen (not a local filesystem, no inotify, no watch left).
    func watch(_ path: KeychainPath) -> Bool {
        if watches[path.directory] != nil { return true }
        let type = locket_filesystem_type(path.directory)
        guard type >= 0, FileChanges.localFilesystems.contains(UInt(type)) else { return false }
        if fd < 0 {
            fd = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
            guard fd >= 0 else { return false }
        }
        // Not IN_ATTRIB: SQLite run as root fchowns the WAL to the database's
        // owner at every opening, a read included; contents change only
        // through writes, creations, renames and removals.
        let mask = UInt32(IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
        let wd = inotify_add_watch(fd, path.directory, mask)
        guard wd >= 0 else { return false }
        directories[wd] = path.directory
        watches[path.directory] = wd
        return true
    }

    /// Every change queued since the last call.
    func drain() -> Changes {
        var changes = Changes()
        guard fd >= 0 else { return changes }
        let capacity = 4096
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            guard case .success(let n) = valueOrErrno("read", { read(fd, buffer, capacity) }), n > 0 else { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= n {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + MemoryLayout<inotify_event>.size
                offset = nameStart + Int(event.len)
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    // Events were lost: everything watched has changed.
                    changes.directories.formUnion(watches.keys)
                    continue
                }
                guard let directory = directories[event.wd] else { continue }
                if event.mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                    changes.directories.insert(directory)
                    if event.mask & UInt32(IN_IGNORED) != 0 {
                        // The watch is gone (the directory was removed): watch again at the next opening.
                        directories[event.wd] = nil
                        watches[directory] = nil
                    }
                    continue
                }
                guard event.len > 0 else { continue }
                let name = String(cString: (buffer + nameStart).assumingMemoryBound(to: CChar.self))
                changes.files[directory, default: []].append(name)
            }
        }
        return changes
    }

    /// Filesystems whose writes all pass through this kernel (statfs magic
    /// numbers): ext2/3/4, XFS, Btrfs, tmpfs, F2FS, ZFS, overlayfs, bcachefs, JFS, ReiserFS.
    private static let localFilesystems: Set<UInt> = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0xF2F5_2010, 0x2FC1_2FC1,
                                                      0x794C_7630, 0xCA45_1A4E, 0x3153_464A, 0x5265_4973]
}

/// A keychain file as `FileChanges` sees it: its real directory and its name.
struct KeychainPath: Hashable {
    let directory: String
    let name: String

    /// nil when the directory does not exist (the keychain does not either).
    init?(_ path: String) {
        let slash = path.lastIndex(of: "/")
        let parent = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard let resolved = realpath(parent, nil) else { return nil }
        defer { free(resolved) }
        directory = String(cString: resolved)
        name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    }
}
