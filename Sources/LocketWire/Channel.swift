import Glibc
import LocketSystem

/// Frames over file descriptors: whole frames in, whole frames out, with the
/// size limit checked on the length before the body is read.
public struct Channel: Sendable {
    /// Where frames are read from.
    public let input: Int32
    /// Where frames are written to.
    public let output: Int32

    public init(input: Int32, output: Int32) {
        self.input = input
        self.output = output
    }

    /// Reads one frame body of at most `limit` bytes. `.endOfStream` only
    /// when the stream ends cleanly between frames.
    public func read(limit: Int = Wire.maximumFrame) throws(Wire.Failure) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 4)
        let got = try readFully(&header, allowEmpty: true)
        if got == 0 { throw .endOfStream }
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length <= limit else { throw .tooLarge }
        guard length > 0 else { throw .malformed("empty frame") }
        var body = [UInt8](repeating: 0, count: length)
        _ = try readFully(&body, allowEmpty: false)
        return body
    }

    /// Writes one frame (its length, then `body`) of at most `limit` bytes.
    public func write(_ body: [UInt8], limit: Int = Wire.maximumFrame) throws(Wire.Failure) {
        guard body.count <= limit else { throw .tooLarge }
        let length = UInt32(body.count)
        let header: [UInt8] = [UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff)]
        try writeAll(header)
        try writeAll(body)
    }

    private func readFully(_ buffer: inout [UInt8], allowEmpty: Bool) throws(Wire.Failure) -> Int {
        let done: Int
        switch buffer.withUnsafeMutableBytes({ LocketSystem.readFully(input, into: $0) }) {
        case .success(let count): done = count
        case .failure(let failure): throw .system(failure.code)
        }
        if done == 0 && allowEmpty { return 0 }
        guard done == buffer.count else { throw .truncated }
        return done
    }

    private func writeAll(_ bytes: [UInt8]) throws(Wire.Failure) {
        var done = 0
        while done < bytes.count {
            // MSG_NOSIGNAL: a helper that died must come back as EPIPE, not
            // kill the caller with SIGPIPE. Not a socket: plain write.
            var sent = bytes.withUnsafeBytes { raw in
                valueOrErrno("send") { send(output, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL)) }
            }
            if sent.error?.code == ENOTSOCK {
                sent = bytes.withUnsafeBytes { raw in valueOrErrno("write") { Glibc.write(output, raw.baseAddress! + done, raw.count - done) } }
            }
            switch sent {
            case .success(let count): done += count
            case .failure(let failure): throw .system(failure.code)
            }
        }
    }
}
