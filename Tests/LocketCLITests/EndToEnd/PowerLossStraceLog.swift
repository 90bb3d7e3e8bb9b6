import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// strace's log (`-f -y -xx`), line by line, turned into the DiskOperations
/// of the files under some roots. It keeps its own picture of those files'
/// names (inode numbers of its own), sizes and descriptors' offsets, so that
/// a `write` knows where it lands and a rename which file it moves.
/// Anything it can't model on those files (writev, mmap, fallocate, ...)
/// fails the recording instead of being left out.
struct StraceLog {
    private(set) var operations: [RecordedOperation] = []
    let initialInodes: [String: Int]
    private let roots: [String]
    private var names: [String: Int]
    private var directories: Set<String>
    private var nextInode: Int
    private var sizes: [Int: Int] = [:]
    /// The size at the last sync; nil for a file made or renamed since, whose next sync commits metadata.
    private var syncedSizes: [Int: Int] = [:]
    private var offsets: [String: Int] = [:]
    private var unfinished: [Int32: String] = [:]
    private var programs: [Int32: [String]] = [:]
    private var workingDirectories: [Int32: String] = [:]

    init(before: FileTree, roots: [String]) {
        self.roots = roots
        directories = before.directories
        var inodes: [String: Int] = [:]
        for (n, path) in before.files.keys.sorted().enumerated() {
            inodes[path] = n
            sizes[n] = before.files[path]!.count
            syncedSizes[n] = before.files[path]!.count
        }
        initialInodes = inodes
        names = inodes
        nextInode = inodes.count
    }

    mutating func feed(_ line: String) throws {
        guard let space = line.firstIndex(of: " "), let pid = Int32(line[..<space]) else { return }
        var rest = String(line[line.index(after: space)...]).trimmingCharacters(in: .whitespaces)
        if rest.hasPrefix("+++ ") {
            let status: Int32? = rest.hasPrefix("+++ exited with ") ? Int32(rest.dropFirst(16).prefix { $0.isNumber }) : nil
            emit(.exit(pid: pid, status: status, program: programs[pid] ?? []), pid, "exit \(status.map(String.init) ?? "killed")")
            return
        }
        if rest.hasPrefix("---") { return }
        if rest.hasSuffix(" <unfinished ...>") {
            unfinished[pid] = String(rest.dropLast(" <unfinished ...>".count))
            return
        }
        if rest.hasPrefix("<... ") {
            guard let close = rest.range(of: " resumed>"), let start = unfinished.removeValue(forKey: pid) else {
                throw PowerLossRecordingError(description: "a resumed call without its start: \(line.prefix(200))")
            }
            rest = start + rest[close.upperBound...]
        }
        guard let call = try StraceCall(rest) else { return }
        try handle(call, pid: pid)
    }

    // MARK: - Calls

    private mutating func handle(_ call: StraceCall, pid: Int32) throws {
        for argument in call.arguments { if let (_, path) = StraceCall.descriptor(argument), let path, path.hasPrefix("/") {
            if argument.hasPrefix("AT_FDCWD") { workingDirectories[pid] = path }
        } }
        guard call.result >= 0 else { return }
        let a = call.arguments
        switch call.name {
        case "execve":
            programs[pid] = Array(StraceCall.strings(in: a.count > 1 ? a[1] : "").dropFirst())
        case "open", "openat", "creat":
            guard let (fd, opened) = StraceCall.descriptor(call.returned), let path = opened else { return }
            offsets[key(pid, fd)] = 0
            guard tracked(path), !isDirectory(path) else { return }
            let flags = call.name == "creat" ? "O_CREAT|O_TRUNC" : a[call.name == "openat" ? 2 : 1]
            if names[path] == nil {
                guard flags.contains("O_CREAT") else { throw PowerLossRecordingError(description: "\(path) opened but never seen made") }
                let inode = nextInode
                nextInode += 1
                names[path] = inode
                sizes[inode] = 0
                emit(.create(path: path, inode: inode), pid, "create \(short(path))")
            } else if flags.contains("O_TRUNC"), let inode = names[path] {
                sizes[inode] = 0
                emit(.truncate(inode: inode, size: 0), pid, "truncate \(short(path)) to 0")
            }
        case "write", "pwrite64":
            guard let (fd, described) = StraceCall.descriptor(a[0]), let path = described, tracked(path) else { return }
            if path.hasSuffix(" (deleted)") { return }
            guard let inode = names[path] else { throw PowerLossRecordingError(description: "a write to \(path), which has no name here") }
            let offset: Int
            if call.name == "pwrite64" {
                offset = Int(a[3]) ?? 0
            } else {
                guard let at = offsets[key(pid, fd)] else { throw PowerLossRecordingError(description: "a write to \(path) at an unknown offset") }
                offset = at
                offsets[key(pid, fd)] = at + call.result
            }
            guard let bytes = StraceCall.bytes(a[1]) else { throw PowerLossRecordingError(description: "a write's bytes were cut: \(a[1].suffix(20))") }
            sizes[inode] = max(sizes[inode] ?? 0, offset + call.result)
            emit(.write(inode: inode, offset: offset, bytes: Array(bytes.prefix(call.result))), pid,
                 "\(call.name) \(short(path)) \(call.result) bytes at \(offset)")
        case "lseek":
            if let (fd, _) = StraceCall.descriptor(a[0]) { offsets[key(pid, fd)] = call.result }
        case "close":
            if let (fd, _) = StraceCall.descriptor(a[0]) { offsets[key(pid, fd)] = nil }
        case "ftruncate":
            guard let (_, described) = StraceCall.descriptor(a[0]), let path = described, tracked(path), let inode = names[path] else { return }
            let size = Int(a[1]) ?? 0
            sizes[inode] = size
            emit(.truncate(inode: inode, size: size), pid, "ftruncate \(short(path)) to \(size)")
        case "fsync", "fdatasync":
            guard let (_, described) = StraceCall.descriptor(a[0]), let path = described, tracked(path) || roots.contains(path) else { return }
            if isDirectory(path) {
                emit(.syncDirectory(path), pid, "fsync of the directory \(short(path))")
            } else if let inode = names[path] {
                let changed = syncedSizes[inode] != sizes[inode]
                syncedSizes[inode] = sizes[inode]
                emit(.sync(inode: inode, dataOnly: call.name == "fdatasync", sizeChanged: changed), pid, "\(call.name) \(short(path))")
            }
        case "rename", "renameat", "renameat2":
            let at = call.name != "rename"
            let from = try resolve(a[at ? 1 : 0], in: at ? a[0] : nil, pid: pid)
            let to = try resolve(a[at ? 3 : 1], in: at ? a[2] : nil, pid: pid)
            guard tracked(from) || tracked(to) else { return }
            guard tracked(from) && tracked(to) else { throw PowerLossRecordingError(description: "a rename across the recorded roots: \(from) -> \(to)") }
            if directories.contains(from) {
                moveDirectory(from, to)
                emit(.rename(from: from, to: to, inode: nil, replaces: false), pid, "rename \(short(from)) -> \(short(to))")
            } else if let inode = names[from] {
                let replaces = names[to] != nil
                names[from] = nil
                names[to] = inode
                syncedSizes[inode] = nil
                emit(.rename(from: from, to: to, inode: inode, replaces: replaces), pid, "rename \(short(from)) -> \(short(to))")
            }
        case "unlink", "unlinkat", "rmdir":
            let at = call.name == "unlinkat"
            let path = try resolve(a[at ? 1 : 0], in: at ? a[0] : nil, pid: pid)
            guard tracked(path) else { return }
            if call.name == "rmdir" || (at && a[2].contains("AT_REMOVEDIR")) {
                directories.remove(path)
                emit(.removeDirectory(path), pid, "rmdir \(short(path))")
            } else {
                names[path] = nil
                emit(.unlink(path: path), pid, "unlink \(short(path))")
            }
        case "link", "linkat":
            let at = call.name == "linkat"
            let from = try resolve(a[at ? 1 : 0], in: at ? a[0] : nil, pid: pid)
            let to = try resolve(a[at ? 3 : 1], in: at ? a[2] : nil, pid: pid)
            guard tracked(to) else { return }
            guard let inode = names[from] else { throw PowerLossRecordingError(description: "a link to \(to) from \(from), which is not recorded") }
            names[to] = inode
            emit(.link(inode: inode, path: to), pid, "link \(short(from)) -> \(short(to))")
        case "mkdir", "mkdirat":
            let at = call.name == "mkdirat"
            let path = try resolve(a[at ? 1 : 0], in: at ? a[0] : nil, pid: pid)
            guard tracked(path) else { return }
            directories.insert(path)
            emit(.makeDirectory(path), pid, "mkdir \(short(path))")
        case "mmap":
            guard a.count > 4, let (_, described) = StraceCall.descriptor(a[4]), let path = described, tracked(path) else { return }
            if a[2].contains("PROT_WRITE") && a[3].contains("MAP_SHARED") {
                throw PowerLossRecordingError(description: "\(path) is written through a shared mapping, which is not modelled")
            }
        case "sync", "syncfs":
            throw PowerLossRecordingError(description: "\(call.name) is not modelled")
        default:
            // writev, pwritev, truncate, fallocate, ...: fail if it touched a recorded file.
            for argument in a {
                if let (_, path) = StraceCall.descriptor(argument), let path, tracked(path) {
                    throw PowerLossRecordingError(description: "\(call.name) on \(path) is not modelled")
                }
                if let bytes = StraceCall.bytes(argument), let path = String(bytes: bytes, encoding: .utf8), tracked(path) {
                    throw PowerLossRecordingError(description: "\(call.name) on \(path) is not modelled")
                }
            }
        }
    }

    private mutating func emit(_ operation: DiskOperation, _ pid: Int32, _ summary: String) {
        operations.append(RecordedOperation(operation: operation, pid: pid, summary: summary))
    }

    private func key(_ pid: Int32, _ fd: Int) -> String { "\(pid)/\(fd)" }

    private func tracked(_ path: String) -> Bool { roots.contains { path.hasPrefix($0 + "/") } }

    private func isDirectory(_ path: String) -> Bool { directories.contains(path) || roots.contains(path) }

    private mutating func moveDirectory(_ from: String, _ to: String) {
        directories.remove(from)
        directories.insert(to)
        for path in directories where path.hasPrefix(from + "/") {
            directories.remove(path)
            directories.insert(to + path.dropFirst(from.count))
        }
        for (path, inode) in names where path.hasPrefix(from + "/") {
            names[path] = nil
            names[to + path.dropFirst(from.count)] = inode
        }
    }

    /// A path argument made absolute against its directory descriptor (or the working directory).
    private func resolve(_ argument: String, in directory: String?, pid: Int32) throws -> String {
        guard let bytes = StraceCall.bytes(argument) else { throw PowerLossRecordingError(description: "not a path: \(argument.prefix(80))") }
        let path = String(decoding: bytes, as: UTF8.self)
        if path.hasPrefix("/") { return Self.normalized(path) }
        let base = directory.flatMap { StraceCall.descriptor($0)?.1 } ?? workingDirectories[pid]
        guard let base else { throw PowerLossRecordingError(description: "a relative path \(path) with no known directory") }
        return Self.normalized(base + "/" + path)
    }

    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(part) }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The path from the roots' common parent: `data/locket/login.keychain-wal`.
    private func short(_ path: String) -> String {
        for root in roots where path.hasPrefix(root + "/") || path == root {
            let parent = String(root[..<(root.lastIndex(of: "/") ?? root.startIndex)])
            return String(path.dropFirst(parent.count + 1))
        }
        return path
    }
}
