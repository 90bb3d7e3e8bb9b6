import Glibc

/// Writes all of `bytes` to `fd`, again after a partial write or EINTR.
/// False on another error, with `errno` saying which (EPIPE: the reader is gone).
@discardableResult
public func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
        if n < 0 { if errno == EINTR { continue }; return false }
        offset += n
    }
    return true
}

/// strerror(3) of the current `errno`, for a message.
public func errnoText() -> String { String(cString: strerror(errno)) }

/// Writes all of an array to `fd`; see `writeAll(_:_:)` for raw memory.
@discardableResult
public func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { writeAll(fd, $0) }
}
