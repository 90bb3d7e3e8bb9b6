import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Loopback TCP for the servers the tests start (a registry, sshd, PostgreSQL).
public enum Loopback {
    /// A port on 127.0.0.1 nothing listens on now (bound to port 0, read back,
    /// released); a server started at once on it is all but certain to get it.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port` within `timeout` seconds.
    public static func waitForListener(port: Int, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(fd)
            if connected { return true }
            usleep(50_000)
        }
        return false
    }

    /// A port on 127.0.0.1 that neither accepts nor refuses a connection, as
    /// a host that drops packets: a listener whose accept queue (backlog 0)
    /// is full and never read, so the kernel drops every new SYN and a
    /// client waits for its own timeout. `port` 0: any free port.
    public final class BlackHole {
        public let port: Int
        private var descriptors: [Int32] = []

        public init(port wanted: Int = 0) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard listener >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
            descriptors.append(listener)
            var on: Int32 = 1
            setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(wanted).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let listening = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, length) == 0 && listen(listener, 0) == 0 && getsockname(listener, $0, &length) == 0
                }
            }
            guard listening else {
                let code = errno
                descriptors.forEach { _ = Glibc.close($0) }
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EADDRINUSE)
            }
            port = Int(UInt16(bigEndian: address.sin_port))
            // Fill the queue: connections the kernel completes and nobody accepts.
            for _ in 0..<2 {
                let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                guard client >= 0 else { continue }
                descriptors.append(client)
                _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) } }
            }
            usleep(200_000)
        }

        deinit { close() }

        /// Closes the listener and the connections that fill its queue.
        public func close() {
            descriptors.forEach { _ = Glibc.close($0) }
            descriptors = []
        }
    }
}
