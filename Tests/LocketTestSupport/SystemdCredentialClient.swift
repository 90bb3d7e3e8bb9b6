import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A client of the credential socket that does exactly what systemd does for
/// `LoadCredential=ID:/PATH` (systemd.exec(5); src/basic/fileio.c,
/// read_full_file_full with a bind name): an AF_UNIX stream socket bound to
/// the abstract address `\0RANDOM/unit/UNIT/ID` (RANDOM in hexadecimal, as
/// `%PRIx64` prints it), connected to PATH, its writing side shut down, then
/// read to the end.
public enum SystemdCredentialClient {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// Connects one request (bound, connected, shut down for writing); the
    /// descriptor. `receiveBuffer`: a small one, for a reader that takes little at a time.
    public static func connect(_ path: String, unit: String, id: String, receiveBuffer: Int32? = nil) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        let name = [UInt8(0)] + Array("\(String(UInt64.random(in: 0...UInt64.max), radix: 16))/unit/\(unit)/\(id)".utf8)
        var local = sockaddr_un()
        local.sun_family = sa_family_t(AF_UNIX)
        guard name.count <= MemoryLayout.size(ofValue: local.sun_path) else { close(fd); throw Failure(description: "name too long") }
        withUnsafeMutableBytes(of: &local.sun_path) { $0.copyBytes(from: name) }
        let header = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        // The abstract name is exactly its bytes: no terminating NUL in the length.
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(header + name.count)) } }
        guard bound == 0 else { close(fd); throw Failure(description: "bind: \(String(cString: strerror(errno)))") }
        var remote = sockaddr_un()
        remote.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &remote.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { let e = errno; close(fd); throw Failure(description: "connect: \(String(cString: strerror(e)))") }
        guard shutdown(fd, Int32(SHUT_WR)) == 0 else { close(fd); throw Failure(description: "shutdown: \(String(cString: strerror(errno)))") }
        return fd
    }

    /// Reads `fd` to its end (or `timeout` seconds) and closes it.
    public static func readToEnd(_ fd: Int32, timeout: Double = 10) throws -> [UInt8] {
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw Failure(description: "no end of the credential within \(timeout) s") }
            guard poll(&p, 1, Int32(left * 1000) + 1) >= 0 || errno == EINTR else { throw Failure(description: "poll: \(String(cString: strerror(errno)))") }
            guard p.revents != 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw Failure(description: "read: \(String(cString: strerror(errno)))") }
            if n == 0 { return out }
            out += buffer[0..<n]
        }
    }

    /// One credential, as systemd loads it.
    public static func load(_ path: String, unit: String, id: String) throws -> [UInt8] {
        try readToEnd(try connect(path, unit: unit, id: id))
    }
}
