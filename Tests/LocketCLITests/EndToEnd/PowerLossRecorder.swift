import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// Issue 30 item 1: the disk operations of a locket command, recorded with
// strace from the release binary (static: no LD_PRELOAD; nothing of this is
// in the binary). `strace -f -y -xx -s N` prints every write's bytes in hex
// and names each descriptor's file, so the log alone says which bytes went
// where, in the order the kernel took them. PowerLossReplayer builds the
// crash states from it.

/// The files and directories under some roots at one instant.
struct FileTree: Equatable {
    var directories: Set<String> = []
    var files: [String: [UInt8]] = [:]

    /// What is under `roots` now (the roots themselves are not part of it).
    static func capture(_ roots: [String]) -> FileTree {
        var tree = FileTree()
        func walk(_ directory: String) {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
            for name in names {
                let path = directory + "/" + name
                var st = stat()
                guard lstat(path, &st) == 0 else { continue }
                switch st.st_mode & S_IFMT {
                case S_IFDIR:
                    tree.directories.insert(path)
                    walk(path)
                case S_IFREG:
                    tree.files[path] = ReliabilityFiles.read(path) ?? []
                default:
                    break
                }
            }
        }
        for root in roots { walk(root) }
        return tree
    }

    /// Replaces everything under `roots` with this tree: directories 0700, files 0600.
    func restore(into roots: [String]) {
        for root in roots {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
                try? FileManager.default.removeItem(atPath: root + "/" + name)
            }
        }
        for directory in directories.sorted() { mkdir(directory, 0o700) }
        for (path, bytes) in files { ReliabilityFiles.write(path, bytes) }
    }

    /// FNV-1a over every name and content, to tell identical crash states apart cheaply.
    var fingerprint: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        // Through a pointer into a local: a generic loop writing the captured
        // hash (an exclusivity check a byte) took a quarter of the power-loss
        // suite's own CPU time in the debug build (perf).
        func mix(_ bytes: [UInt8]) {
            bytes.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return }
                var h = hash
                var i = 0
                while i < buffer.count {
                    h = (h ^ UInt64(base[i])) &* 0x100_0000_01b3
                    i += 1
                }
                hash = h
            }
        }
        for directory in directories.sorted() { mix(Array(directory.utf8)); mix([0]) }
        for path in files.keys.sorted() {
            mix(Array(path.utf8))
            mix([1])
            mix(files[path]!)
            mix(withUnsafeBytes(of: files[path]!.count) { Array($0) })
        }
        return hash
    }
}

/// One thing a command asked of the file system that a power loss may or
/// may not have kept. Files are named by inode (a number of the recording's
/// own), names by path.
enum DiskOperation: Equatable {
    case write(inode: Int, offset: Int, bytes: [UInt8])
    case truncate(inode: Int, size: Int)
    case create(path: String, inode: Int)
    case link(inode: Int, path: String)
    /// `replaces`: the target existed (ext4's auto_da_alloc then writes the source's data before the rename commits).
    case rename(from: String, to: String, inode: Int?, replaces: Bool)
    case unlink(path: String)
    case makeDirectory(String)
    case removeDirectory(String)
    /// fsync (`dataOnly` false) or fdatasync of a file; `sizeChanged`: its size or name changed since its last sync.
    case sync(inode: Int, dataOnly: Bool, sizeChanged: Bool)
    case syncDirectory(String)
    /// A traced process ended (nil status: killed); `program` is its argv[1...] (`locket ADD ...` -> ["add", ...]).
    case exit(pid: Int32, status: Int32?, program: [String])

    var isMetadata: Bool {
        switch self {
        case .truncate, .create, .link, .rename, .unlink, .makeDirectory, .removeDirectory: return true
        default: return false
        }
    }

    var isSync: Bool {
        switch self {
        case .sync, .syncDirectory: return true
        default: return false
        }
    }
}

/// A recorded operation and the file names it concerned, for reports.
struct RecordedOperation {
    var operation: DiskOperation
    var pid: Int32
    var summary: String
}

/// One command's disk operations and the files before and after it.
struct PowerLossRecording {
    /// The directories recorded (a keychain's, the state directory): what is under them.
    var roots: [String]
    var before: FileTree
    /// The inode of each file of `before`.
    var inodes: [String: Int]
    var operations: [RecordedOperation]
    var after: FileTree
    var result: RunResult
}

enum PowerLossRecorder {
    /// The system calls that change a file or a name, and those that say where
    /// a write goes (open, lseek, close) or who made it (execve).
    static let calls = ["open", "openat", "creat", "write", "pwrite64", "lseek", "close", "ftruncate", "fsync", "fdatasync",
                        "rename", "renameat", "renameat2", "unlink", "unlinkat", "link", "linkat", "mkdir", "mkdirat", "rmdir",
                        "execve",
                        // Never expected on a keychain's files: recorded only to fail loudly if one appears.
                        "writev", "pwritev", "pwritev2", "truncate", "fallocate", "copy_file_range", "sendfile", "msync",
                        "sync_file_range", "syncfs", "sync", "mmap"]

    /// Runs `executable ARGS` under strace and returns what it did to the files under `roots`.
    static func record(_ executable: String, _ arguments: [String], environment: [String: String], input: Input = .devNull,
                       roots: [String], scratch: String) throws -> PowerLossRecording {
        let strace = try SystemTool.require("strace", for: "recording a command's disk operations")
        let log = scratch + "/strace.log"
        unlink(log)
        let before = FileTree.capture(roots)
        let result = Spawn.run(strace, ["-f", "-y", "-xx", "-s", "33554432", "-e", "trace=" + calls.joined(separator: ","),
                                        "-o", log, executable] + arguments,
                               environment: environment, input: input, timeout: 120)
        let after = FileTree.capture(roots)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        unlink(log)
        var parser = StraceLog(before: before, roots: roots)
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) { try parser.feed(String(line)) }
        return PowerLossRecording(roots: roots, before: before, inodes: parser.initialInodes, operations: parser.operations, after: after,
                                  result: result)
    }
}

/// A recording that strace's log did not let us make.
struct PowerLossRecordingError: Error, CustomStringConvertible {
    let description: String
}
