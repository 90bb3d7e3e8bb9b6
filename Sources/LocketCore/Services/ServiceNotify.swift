import Glibc
import LocketSupport

/// systemd's readiness protocol (sd_notify(3)) for a `Type=notify` service:
/// one datagram, `READY=1`, to the socket `$NOTIFY_SOCKET` names (a path, or
/// `@NAME` for an abstract address), so that the units ordered after the
/// credential socket start only once it listens.
public enum ServiceNotify {
    /// Sends `READY=1` when `$NOTIFY_SOCKET` is set; false when it is not.
    @discardableResult
    public static func ready(_ environment: Environment) throws -> Bool {
        guard let target = try environment["NOTIFY_SOCKET"], !target.isEmpty else { return false }
        var bytes = Array(target.utf8)
        guard bytes.first == UInt8(ascii: "/") || bytes.first == UInt8(ascii: "@") else {
            throw KeychainError(.param, "NOTIFY_SOCKET is neither a path nor an @abstract address")
        }
        guard bytes.count <= MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1 else {
            throw KeychainError(.param, "NOTIFY_SOCKET is longer than a Unix socket address")
        }
        let abstract = bytes[0] == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        // An abstract address is exactly its bytes; a path ends at its NUL.
        let length = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count + (abstract ? 0 : 1)
        let fd = try valueOrErrno("socket") { socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
            .get { KeychainError(.io, "cannot make a Unix socket: \($0)") }
        defer { close(fd) }
        let message = Array("READY=1".utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddr in
                message.withUnsafeBytes { raw in
                    valueOrErrno("sendto") { sendto(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), sockaddr, socklen_t(length)) }
                }
            }
        }
        guard case .success(message.count) = sent else {
            throw KeychainError(.io, "cannot tell systemd the service is ready (NOTIFY_SOCKET): \(sent.error.map(String.init(describing:)) ?? "short send")")
        }
        return true
    }
}
