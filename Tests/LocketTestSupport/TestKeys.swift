import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The throwaway keys the tests read, made once per run (issue 38). An RSA
/// key is a random prime search, 0.1-2 CPU-s at 2,048-3,072 bits, and the
/// classes that need one as a fixture (to import, sign with, put in a
/// certificate or an agent) each made their own: ~6 CPU-s of openssl and
/// ssh-keygen a run, and more in-process. The first test process of the run
/// that asks for a key makes it, in the run's private directory
/// (`TestRun`), the others wait for it and copy it; the run's end removes
/// it, so every run has fresh keys and none is committed.
///
/// Every caller gets its own copy (0600, in its own directory): what a test
/// does to it (re-encrypt it, rewrite it, delete it) reaches no other test.
/// Keys copied into one directory stay distinct: the first key of a kind
/// copied into a directory is the run's first of that kind, the second (by
/// another name) its second, and so on (a CA and a leaf of the same curve
/// stay two keys); a name asked for again in the same directory is the same
/// key. Tests about making keys make their own.
public enum TestKeys {
    /// Copies a run's `kind` key (`OpenSSLFixtures.genpkeyOptions`) to
    /// `destination`, as `openssl genpkey` wrote it (PKCS#8 PEM).
    public static func genpkey(_ kind: String, to destination: String) throws {
        try write(try read(genpkeyEntry(kind, slot: slot("genpkey-\(kind)", for: destination)) + "/key"), to: destination)
    }

    /// The run's first `kind` key's PEM, for a test that parses it in memory.
    public static func genpkey(_ kind: String) throws -> [UInt8] {
        [UInt8](try read(genpkeyEntry(kind, slot: 0) + "/key"))
    }

    private static func genpkeyEntry(_ kind: String, slot: Int) throws -> String {
        guard let options = OpenSSLFixtures.genpkeyOptions(kind) else { throw TestRun.Failure(description: "no key kind \(kind)") }
        return try cached("genpkey-\(kind)-\(slot)") { directory in
            try tool("openssl", ["genpkey", "-out", "\(directory)/key"] + options)
        }
    }

    /// Copies a run's key pair made by `ssh-keygen -q ARGUMENTS -N "" -C
    /// COMMENT` (unencrypted, OpenSSH's format) to `destination` and its
    /// public key to `destination.pub`.
    public static func sshKeygen(_ arguments: [String], comment: String, to destination: String) throws {
        let kind = (["ssh-keygen"] + arguments + [comment]).joined(separator: "-")
        let entry = try cached("\(kind)-\(slot(kind, for: destination))") { directory in
            try tool("ssh-keygen", ["-q"] + arguments + ["-N", "", "-C", comment, "-f", "\(directory)/key"])
        }
        try write(try read("\(entry)/key"), to: destination)
        try write(try read("\(entry)/key.pub"), to: destination + ".pub")
    }

    nonisolated(unsafe) private static var slots: [String: [String]] = [:]
    private static let slotsLock = NSLock()

    /// Which of the run's keys of `kind` `destination` gets: the number of
    /// other names its directory was given one of that kind by before.
    private static func slot(_ kind: String, for destination: String) -> Int {
        let url = URL(fileURLWithPath: destination)
        let key = url.deletingLastPathComponent().path + "\u{0}" + kind
        slotsLock.lock()
        defer { slotsLock.unlock() }
        if let known = slots[key]?.firstIndex(of: url.lastPathComponent) { return known }
        slots[key, default: []].append(url.lastPathComponent)
        return slots[key]!.count - 1
    }

    /// The directory holding entry `name`'s files, made by `make` (in a
    /// scratch directory renamed into place once whole) if no process of
    /// the run made it yet.
    private static func cached(_ name: String, _ make: (String) throws -> Void) throws -> String {
        let keys = try TestRun.directory() + "/keys"
        try TestRun.privateDirectory(keys)
        let entry = "\(keys)/" + String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" })
        return try TestRun.locked(entry + ".lock") {
            var info = stat()
            if lstat(entry, &info) == 0 {
                guard (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
                    throw TestRun.Failure(description: "\(entry) is not this user's private directory")
                }
                return entry
            }
            // A scratch left by a process that died making it is made again.
            let scratch = entry + ".making"
            _ = try? FileManager.default.removeItem(atPath: scratch)
            try TestRun.privateDirectory(scratch)
            try make(scratch)
            // Read-only: every test reads its own copy, none writes here.
            for file in try FileManager.default.contentsOfDirectory(atPath: scratch) { chmod("\(scratch)/\(file)", 0o400) }
            guard rename(scratch, entry) == 0 else { throw TestRun.Failure(description: "rename \(scratch): errno \(errno)") }
            return entry
        }
    }

    private static func tool(_ name: String, _ arguments: [String]) throws {
        let path = executableOnPath(name) ?? "/usr/bin/\(name)"
        let result = Spawn.run(path, arguments, environment: ["PATH": "/usr/bin:/bin"], input: .devNull, timeout: 120)
        guard result.status == 0 else { throw TestRun.Failure(description: "\(name) \(arguments.joined(separator: " ")): \(result.summary)") }
    }

    /// `source`: this user's own private regular file, not a link.
    private static func read(_ source: String) throws -> Data {
        let input = open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard input >= 0 else { throw TestRun.Failure(description: "\(source): errno \(errno)") }
        defer { close(input) }
        var info = stat()
        guard fstat(input, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw TestRun.Failure(description: "\(source) is not this user's private file")
        }
        return try FileHandle(fileDescriptor: input, closeOnDealloc: false).readToEnd() ?? Data()
    }

    /// `bytes` as `destination`, 0600, replacing what was there.
    private static func write(_ bytes: Data, to destination: String) throws {
        let scratch = "\(destination).\(getpid()).copying"
        unlink(scratch)
        let output = open(scratch, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw TestRun.Failure(description: "\(scratch): errno \(errno)") }
        let written = bytes.withUnsafeBytes { Glibc.write(output, $0.baseAddress, $0.count) }
        close(output)
        guard written == bytes.count, rename(scratch, destination) == 0 else {
            unlink(scratch)
            throw TestRun.Failure(description: "could not write \(destination): errno \(errno)")
        }
    }
}
