import CLocketTPM
import Glibc
import LocketWire

/// One TPM, driven by the frames `locket` sends: one request, one reply.
/// Every field of a request is checked here before the TPM sees it (the
/// C layer checks the blobs again as it unmarshals them).
final class Server {
    let channel: Channel
    /// The open TPM, after an `open` request.
    var tpm: OpaquePointer?
    /// Why the TPM can no longer be used (it stopped answering): every later request gets this.
    var lost: String?

    init(channel: Channel) { self.channel = channel }

    /// Serves frames until locket closes the stream or sends `close`; returns the exit status.
    func serve() -> Int32 {
        defer { locket_tpm_close(tpm); tpm = nil }
        do throws(Wire.Failure) {
            try handshake()
            while true {
                var body = try channel.read(limit: TPMWire.maximumFrame)
                // The request may hold an authorization value or a secret,
                // and the calls that served it left copies on the stack.
                defer {
                    body.wipe()
                    locket_tpm_burn_stack()
                }
                if try !handle(body) { return 0 }
            }
        } catch .endOfStream {
            return 0
        } catch .system(EPIPE) {
            return 1
        } catch let failure {
            // Malformed, oversized or truncated input: say so once and stop,
            // since the stream can't be resynchronised.
            try? reply(.protocolError, stage: 0, code: 0, "protocol error: \(describe(failure))")
            return 2
        }
    }

    private func handshake() throws(Wire.Failure) {
        var reader = try FrameReader(try channel.read(limit: TPMWire.maximumFrame))
        guard reader.kind == TPMWire.Kind.hello.rawValue else { throw .malformed("the first frame is not a hello") }
        let magic = try reader.raw(TPMWire.magic.count)
        let version = try reader.u16()
        try reader.finish()
        guard magic == TPMWire.magic else { throw .malformed("bad magic") }
        var writer = FrameWriter(tpm: .helloReply)
        writer.raw(TPMWire.magic)
        writer.u16(TPMWire.version)
        try channel.write(writer.bytes, limit: TPMWire.maximumFrame)
        guard version == TPMWire.version else { throw .malformed("locket speaks protocol version \(version), this helper \(TPMWire.version)") }
    }

    /// Answers one request; false after `close`.
    private func handle(_ body: [UInt8]) throws(Wire.Failure) -> Bool {
        var reader = try FrameReader(body)
        switch TPMWire.Kind(rawValue: reader.kind) {
        case .close: try reader.finish(); return false
        case .open: try open(&reader)
        case .probe: try reader.finish(); try withTPM(probe)
        case .lockout: try reader.finish(); try withTPM(lockoutStatus)
        case .createKey: try createKey(&reader)
        case .sign: try sign(&reader)
        case .ecdh: try ecdh(&reader)
        case .seal: try seal(&reader)
        case .unseal: try unseal(&reader)
        default: throw .malformed("unexpected message type \(reader.kind)")
        }
        return true
    }

    /// Runs `body` with the open TPM, or replies why there is none.
    func withTPM(_ body: (OpaquePointer) throws(Wire.Failure) -> Void) throws(Wire.Failure) {
        if let lost { return try reply(.lost, stage: 0, code: 0, lost) }
        guard let tpm else { return try reply(.badRequest, stage: 0, code: 0, "no TPM is open yet") }
        try body(tpm)
    }

    /// Replies with the failure a response code stands for; a TPM that
    /// stopped answering is not asked again.
    func reply(code: UInt32, stage: Int32) throws(Wire.Failure) {
        let (failure, message) = Classification.classify(code, stage: stage)
        if failure == .lost {
            lost = message
            locket_tpm_close(tpm)
            tpm = nil
        }
        try reply(failure, stage: UInt8(truncatingIfNeeded: stage), code: code, message)
    }

    func reply(_ failure: TPMWire.Failure, stage: UInt8, code: UInt32, _ message: String) throws(Wire.Failure) {
        var writer = FrameWriter(tpm: .error)
        writer.u8(failure.rawValue)
        writer.u8(stage)
        writer.u32(code)
        writer.string(String(message.prefix(400)))
        try channel.write(writer.bytes, limit: TPMWire.maximumFrame)
    }

    func send(_ writer: FrameWriter) throws(Wire.Failure) {
        try channel.write(writer.bytes, limit: TPMWire.maximumFrame)
    }

    private func describe(_ failure: Wire.Failure) -> String {
        switch failure {
        case .endOfStream: "end of stream"
        case .truncated: "the stream ended inside a frame"
        case .tooLarge: "a frame or field over the size limit"
        case .malformed(let why): why
        case .system(let code): "system error \(code)"
        }
    }
}
