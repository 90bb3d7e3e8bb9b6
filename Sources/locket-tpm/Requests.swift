import CLocketTPM
import Glibc
import LocketWire

/// A blob of the request: a marshalled TPM2B_PUBLIC and TPM2B_PRIVATE.
struct Blob {
    var publicArea: [UInt8]
    var privateArea: [UInt8]

    init(_ reader: inout FrameReader) throws(Wire.Failure) {
        publicArea = try reader.field(limit: TPMWire.maximumBlob)
        privateArea = try reader.field(limit: TPMWire.maximumBlob)
        guard !publicArea.isEmpty, !privateArea.isEmpty else { throw .malformed("an empty key blob") }
    }

    /// Calls `body` with the blob as the C layer takes it.
    func withObject<R>(_ body: (locket_tpm_object) -> R) -> R {
        publicArea.withUnsafeBufferPointer { pub in
            privateArea.withUnsafeBufferPointer { priv in
                body(locket_tpm_object(public_area: pub.baseAddress, public_size: pub.count, private_area: priv.baseAddress, private_size: priv.count))
            }
        }
    }
}

extension Server {
    /// `u8 present, [bytes value]`: an authorization value of at most 32 bytes (absent: empty).
    func readAuthorization(_ reader: inout FrameReader) throws(Wire.Failure) -> Secret {
        let present = try reader.u8()
        guard present <= 1 else { throw .malformed("the authorization flag is not 0 or 1") }
        guard present == 1 else { return Secret(capacity: TPMWire.maximumAuthorization) }
        do {
            let secret = try reader.withField(limit: TPMWire.maximumAuthorization) {
                Secret(copying: $0, capacity: TPMWire.maximumAuthorization)
            }
            guard secret.count > 0 else { throw Wire.Failure.malformed("an empty authorization value is sent as absent") }
            return secret
        } catch let failure as Wire.Failure {
            throw failure
        } catch {
            throw .malformed("unreadable authorization value")
        }
    }

    func open(_ reader: inout FrameReader) throws(Wire.Failure) {
        let configuration = try reader.string(limit: TPMWire.maximumTCTI)
        try reader.finish()
        guard tpm == nil, lost == nil else { throw .malformed("the TPM is already open") }
        if let refusal = TCTI.refusal(configuration) {
            return try reply(.unavailable, stage: UInt8(LOCKET_TPM_STAGE_CONNECT), code: 0, refusal)
        }
        if let absent = TCTI.missingDevice(configuration) {
            return try reply(.unavailable, stage: UInt8(LOCKET_TPM_STAGE_CONNECT), code: 0, absent)
        }
        var opened: OpaquePointer?
        var stage: Int32 = 0
        let code = locket_tpm_open(configuration, &opened, &stage)
        guard code == 0, let opened else {
            return try reply(.unavailable, stage: UInt8(stage), code: code,
                             "no TPM answers at \(configuration) (\(Classification.text(code)))")
        }
        tpm = opened
        try send(FrameWriter(tpm: .opened))
    }

    func probe(_ tpm: OpaquePointer) throws(Wire.Failure) {
        var info = locket_tpm_info()
        var stage: Int32 = 0
        let code = locket_tpm_probe(tpm, &info, &stage)
        guard code == 0 else { return try reply(code: code, stage: stage) }
        var writer = FrameWriter(tpm: .info)
        for value in [info.family, info.revision, info.year, info.day_of_year, info.manufacturer,
                      info.vendor.0, info.vendor.1, info.vendor.2, info.vendor.3, info.firmware.0, info.firmware.1] {
            writer.u32(value)
        }
        writer.u8(info.has_p256 != 0 ? 1 : 0)
        try send(writer)
    }

    func lockoutStatus(_ tpm: OpaquePointer) throws(Wire.Failure) {
        var status = locket_tpm_lockout()
        var stage: Int32 = 0
        let code = locket_tpm_lockout_status(tpm, &status, &stage)
        guard code == 0 else { return try reply(code: code, stage: stage) }
        var writer = FrameWriter(tpm: .lockoutStatus)
        writer.u32(status.counter)
        writer.u32(status.max_tries)
        writer.u32(status.interval)
        writer.u32(status.recovery)
        writer.u8(status.in_lockout != 0 ? 1 : 0)
        try send(writer)
    }

    func createKey(_ reader: inout FrameReader) throws(Wire.Failure) {
        let auth = try readAuthorization(&reader)
        try reader.finish()
        try withTPM { tpm throws(Wire.Failure) in
            try made { made, stage in locket_tpm_create_key(tpm, auth.auth, &made, &stage) }
        }
    }

    func sign(_ reader: inout FrameReader) throws(Wire.Failure) {
        let blob = try Blob(&reader)
        let auth = try readAuthorization(&reader)
        let digest = try reader.field(limit: TPMWire.p256Bytes)
        try reader.finish()
        guard digest.count == TPMWire.p256Bytes else { throw .malformed("a digest that is not 32 bytes") }
        try withTPM { tpm throws(Wire.Failure) in
            var r = [UInt8](repeating: 0, count: TPMWire.p256Bytes), s = r
            var rSize = 0, sSize = 0
            var stage: Int32 = 0
            let code = blob.withObject { object in
                locket_tpm_sign(tpm, object, auth.auth, digest, &r, &rSize, &s, &sSize, &stage)
            }
            guard code == 0 else { return try reply(code: code, stage: stage) }
            var writer = FrameWriter(tpm: .signature)
            writer.field(r[0..<rSize])
            writer.field(s[0..<sSize])
            try send(writer)
        }
    }

    func ecdh(_ reader: inout FrameReader) throws(Wire.Failure) {
        let blob = try Blob(&reader)
        let auth = try readAuthorization(&reader)
        let x = try reader.field(limit: TPMWire.p256Bytes)
        let y = try reader.field(limit: TPMWire.p256Bytes)
        try reader.finish()
        guard x.count == TPMWire.p256Bytes, y.count == TPMWire.p256Bytes else { throw .malformed("a point coordinate that is not 32 bytes") }
        try withTPM { tpm throws(Wire.Failure) in
            let shared = Secret(capacity: TPMWire.p256Bytes)
            var size = 0
            var stage: Int32 = 0
            let code = blob.withObject { object in
                locket_tpm_ecdh(tpm, object, auth.auth, x, y, shared.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), &size, &stage)
            }
            guard code == 0 else { return try reply(code: code, stage: stage) }
            shared.setCount(size)
            try sendSecret(shared)
        }
    }

    func seal(_ reader: inout FrameReader) throws(Wire.Failure) {
        let secret: Secret
        do {
            secret = try reader.withField(limit: TPMWire.maximumSealed) { Secret(copying: $0, capacity: TPMWire.maximumSealed) }
        } catch let failure as Wire.Failure {
            throw failure
        } catch {
            throw .malformed("unreadable secret")
        }
        let auth = try readAuthorization(&reader)
        let mask = try reader.u32()
        try reader.finish()
        guard secret.count > 0 else { throw .malformed("an empty secret to seal") }
        guard mask < TPMWire.pcrMaskLimit else { throw .malformed("a PCR beyond 23") }
        try withTPM { tpm throws(Wire.Failure) in
            try made { made, stage in locket_tpm_seal(tpm, secret.pointer, secret.count, auth.auth, mask, &made, &stage) }
        }
    }

    func unseal(_ reader: inout FrameReader) throws(Wire.Failure) {
        let blob = try Blob(&reader)
        let auth = try readAuthorization(&reader)
        let mask = try reader.u32()
        try reader.finish()
        guard mask < TPMWire.pcrMaskLimit else { throw .malformed("a PCR beyond 23") }
        try withTPM { tpm throws(Wire.Failure) in
            let secret = Secret(capacity: TPMWire.maximumSealed)
            var size = 0
            var stage: Int32 = 0
            let code = blob.withObject { object in
                locket_tpm_unseal(tpm, object, auth.auth, mask, secret.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), &size, &stage)
            }
            guard code == 0 else { return try reply(code: code, stage: stage) }
            secret.setCount(size)
            try sendSecret(secret)
        }
    }

    /// A new object's blobs, or the failure.
    private func made(_ body: (inout locket_tpm_made, inout Int32) -> UInt32) throws(Wire.Failure) {
        var publicArea = [UInt8](repeating: 0, count: TPMWire.maximumBlob)
        var privateArea = [UInt8](repeating: 0, count: TPMWire.maximumBlob)
        var stage: Int32 = 0
        let code = publicArea.withUnsafeMutableBufferPointer { pub in
            privateArea.withUnsafeMutableBufferPointer { priv in
                var made = locket_tpm_made(public_area: pub.baseAddress, public_capacity: pub.count, public_size: 0,
                                           private_area: priv.baseAddress, private_capacity: priv.count, private_size: 0)
                let code = body(&made, &stage)
                return code == 0 ? (code, made.public_size, made.private_size) : (code, 0, 0)
            }
        }
        guard code.0 == 0 else { return try reply(code: code.0, stage: stage) }
        var writer = FrameWriter(tpm: .object, capacity: 16 + code.1 + code.2)
        writer.field(publicArea[0..<code.1])
        writer.field(privateArea[0..<code.2])
        try send(writer)
    }

    /// A `secret` reply, its frame wiped once written.
    private func sendSecret(_ secret: Secret) throws(Wire.Failure) {
        var writer = FrameWriter(tpm: .secret, capacity: 8 + secret.count)
        writer.field(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(secret.bytes)[0..<secret.count]))
        defer { writer.wipe() }
        try send(writer)
    }
}
