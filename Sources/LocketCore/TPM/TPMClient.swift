import Glibc
import LocketSupport
import LocketWire

/// The TPM, through `locket-tpm` (SPEC §21): libtss2 is shared-only on
/// Debian, so the static `locket` never links it. Nothing runs until the
/// first request: making a client reads no device and starts no process,
/// so a command that never touches a TPM key pays nothing. The helper then
/// lives until `close()` (or the client goes), and is killed if the TPM
/// does not answer within `timeout`.
///
/// Every failure is a `KeychainError` (TPMClient+Failures): no TPM or no
/// helper is errSecNotAvailable (reason `.noTPM`), an object from another
/// TPM errSecDecode (reason `.boundToOtherDevice`), a wrong authorization
/// value errSecAuthFailed, the TPM's lockout errSecAuthFailed (reason
/// `.tpmLockout`), a TPM that stopped answering errSecIO.
///
/// One thread at a time: the helper answers requests in order.
public final class TPMClient {
    public let location: TPMLocation
    /// How long one request may wait for the TPM before the helper is killed.
    public let timeout: Double
    private let helperPath: String?
    private let environment: Environment
    private var helper: HelperProcess?

    /// The TPM's helper gets none of the caller's variables.
    static let program = HelperProgram(
        name: "locket-tpm", description: "the TPM helper", neededFor: "Secure Enclave keys need locket-tpm installed (make install)",
        passedVariables: [],
        libraries: "libtss2 (Debian's libtss2-esys-3.0.2-0, libtss2-tctildr0, libtss2-mu0, libtss2-rc0 and libtss2-sys1 packages)")

    /// A client of the TPM at `location`, through the helper at `helper`
    /// (nil: `locket-tpm` where `make install` puts it, else beside `locket`).
    public init(location: TPMLocation, helper: String? = nil, timeout: Double = 30, environment: Environment) {
        self.location = location
        self.timeout = timeout
        helperPath = helper
        self.environment = environment
    }

    /// The TPM `environment` names (`TPMLocation.find`).
    public convenience init(environment: Environment, helper: String? = nil, timeout: Double = 30) throws {
        self.init(location: try TPMLocation.find(environment: environment), helper: helper, timeout: timeout, environment: environment)
    }

    deinit { close() }

    /// Ends the helper (it flushes what it loaded and closes the TPM).
    public func close() {
        guard let helper else { return }
        try? helper.channel.write(FrameWriter(tpm: .close).bytes, limit: TPMWire.maximumFrame)
        helper.stop()
        self.helper = nil
    }

    /// The helper's process id while one runs (tests signal it).
    public var helperProcessID: pid_t? { helper?.pid }

    /// The helper, started and its TPM opened on first use.
    private func running() throws -> HelperProcess {
        if let helper { return helper }
        guard let path = helperPath ?? CompanionExecutable.find(Self.program.name) else {
            throw KeychainError(.notAvailable, "locket-tpm is not installed next to locket: Secure Enclave keys need it (make install)", reason: .noTPM)
        }
        let process: HelperProcess
        do {
            process = try HelperProcess(path: path, program: Self.program, environment: environment)
        } catch let error as KeychainError {
            throw KeychainError(error.code, error.detail, reason: .noTPM)
        }
        process.limitReads(to: timeout)
        helper = process
        do {
            var hello = FrameWriter(tpm: .hello)
            hello.raw(TPMWire.magic)
            hello.u16(TPMWire.version)
            var reply: FrameReader
            do {
                try process.channel.write(hello.bytes, limit: TPMWire.maximumFrame)
                reply = try FrameReader(try process.channel.read(limit: TPMWire.maximumFrame))
            } catch {
                // A helper that ends before its first answer: a missing libtss2 (the package's recommendation) says so.
                helper = nil
                let failure: Wire.Failure? = error
                // (No hint about LOCKET_TPM: the TPM is not what is missing.)
                if failure != nil, failure != .system(EAGAIN), failure != .system(EWOULDBLOCK), let missing = process.missingLibraries() {
                    throw missing
                }
                process.kill()
                throw KeychainError(.io, failure == .system(EAGAIN) || failure == .system(EWOULDBLOCK)
                                    ? "locket-tpm did not answer within \(Int(timeout)) s while starting: it was stopped"
                                    : "locket-tpm stopped while starting")
            }
            guard reply.kind == TPMWire.Kind.helloReply.rawValue, try reply.raw(TPMWire.magic.count) == TPMWire.magic else {
                throw KeychainError(.notAvailable, "\(path) is not locket-tpm", reason: .noTPM)
            }
            let version = try reply.u16()
            guard version == TPMWire.version else {
                throw KeychainError(.notAvailable, "locket-tpm speaks protocol version \(version), locket \(TPMWire.version): install matching versions", reason: .noTPM)
            }
            var open = FrameWriter(tpm: .open)
            open.string(location.tcti)
            let opened = try exchange(open, "opening the TPM")
            guard opened.kind == TPMWire.Kind.opened.rawValue else { throw unexpected(opened) }
            return process
        } catch {
            if self.helper != nil { process.kill() }
            self.helper = nil
            throw error
        }
    }

    /// Sends one request and calls `body` with its reply (an error frame
    /// becomes its KeychainError), then wipes the reply's frame (it may hold
    /// a shared secret or an unsealed one). A request that carried an
    /// authorization value ends the helper: ESAPI keeps the value in its
    /// session's record (session key and value, the HMAC key) until that
    /// record is used again, so the process that held it goes with the request.
    func request<R>(_ writer: FrameWriter, _ operation: String, authorized: Bool = false, _ body: (inout FrameReader) throws -> R) throws -> R {
        _ = try running()
        defer { if authorized { close() } }
        var frame = try receive(after: writer, operation)
        defer { wipe(&frame) }
        return try Self.read(frame, body)
    }

    private static func read<R>(_ frame: [UInt8], _ body: (inout FrameReader) throws -> R) throws -> R {
        var reader = try FrameReader(frame)
        let result = try body(&reader)
        try reader.finish()
        return result
    }

    private func exchange(_ writer: FrameWriter, _ operation: String) throws -> FrameReader {
        try FrameReader(try receive(after: writer, operation))
    }

    /// Writes `writer` and reads one frame; a dead, silent or confused helper is killed.
    private func receive(after writer: FrameWriter, _ operation: String) throws -> [UInt8] {
        guard let helper else { throw KeychainError(.io, "the TPM helper is not running") }
        do {
            try helper.channel.write(writer.bytes, limit: TPMWire.maximumFrame)
            let frame = try helper.channel.read(limit: TPMWire.maximumFrame)
            if frame.first == TPMWire.Kind.error.rawValue {
                var reader = try FrameReader(frame)
                throw try failure(&reader, operation)
            }
            return frame
        } catch let failure as Wire.Failure {
            helper.kill()
            self.helper = nil
            switch failure {
            case .system(EAGAIN), .system(EWOULDBLOCK):
                throw KeychainError(.io, "the TPM did not answer within \(Int(timeout)) s while \(operation) (\(location.tcti)): locket-tpm was stopped")
            case .endOfStream, .truncated, .system:
                throw KeychainError(.io, "locket-tpm stopped while \(operation)")
            case .tooLarge, .malformed:
                throw KeychainError(.io, "locket-tpm answered something malformed while \(operation)")
            }
        }
    }

    /// Forgets a helper that exits after its reply (a protocol error) or must not be asked again.
    func helperStopped() {
        helper?.kill()
        helper = nil
    }

    func unexpected(_ reader: FrameReader) -> KeychainError {
        helperStopped()
        return KeychainError(.io, "locket-tpm answered message type \(reader.kind) out of turn")
    }
}
