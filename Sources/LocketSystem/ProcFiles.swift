import Glibc

// What locket reads of /proc (and of other symbolic links), in one place:
// the command line's private directories, the terminal session's identity,
// the Secret Service's callers and the Security module's prompts each read
// the same few things and had a copy each.

/// The target of the symbolic link `path` (`/proc/self/exe`,
/// `/proc/PID/ns/pid`); nil when it is none or can't be read.
/// The corresponding C function is `readlink`.
public func readLink(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard case .success(let count) = valueOrErrno("readlink", { readlink(path, &buffer, buffer.count - 1) }), count > 0 else { return nil }
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// A small file read whole in one read(2), as /proc gives its entries:
/// at most `limit` bytes; nil when it can't be read or is empty.
public func readSmallFile(_ path: String, limit: Int = 4096) -> [UInt8]? {
    guard case .success(let fd) = valueOrErrno("open", { open(path, O_RDONLY | O_CLOEXEC) }) else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: limit)
    guard case .success(let n) = buffer.withUnsafeMutableBytes({ raw in valueOrErrno("read") { read(fd, raw.baseAddress, raw.count) } }),
          n > 0 else { return nil }
    return Array(buffer[..<n])
}

/// When process `pid` started, in clock ticks since boot (field 22 of
/// /proc/PID/stat): with the pid, it names one process, not whichever
/// later reuses the pid. nil when it can't be read.
public func processStartTime(_ pid: pid_t) -> UInt64? {
    guard let stat = readSmallFile("/proc/\(pid)/stat", limit: 1024),
          // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
          let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
    let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
    guard fields.count > 19 else { return nil }
    return UInt64(String(decoding: fields[19], as: UTF8.self))
}
