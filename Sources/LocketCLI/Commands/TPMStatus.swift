import LocketCore
import LocketSupport

/// What `status` says of the TPM that holds Secure Enclave keys (SPEC §21):
/// where it is, from LOCKET_TPM and the device alone (no process starts);
/// with `--tpm`, what the TPM says of itself and its dictionary-attack
/// counter, through locket-tpm (a failure then is the command's error).
struct TPMStatus {
    var location: TPMLocation?
    /// Why there is none, when there is none.
    var absence: String?
    var info: TPMInfo?
    var lockout: TPMLockoutStatus?

    static func read(_ context: Context, probe: Bool) throws -> TPMStatus {
        var status = TPMStatus()
        do {
            status.location = try TPMLocation.find(environment: context.environment)
        } catch let error as KeychainError where error.reason == .noTPM {
            if probe { throw error }
            status.absence = error.detail
        }
        if probe, let location = status.location {
            let client = TPMClient(location: location, environment: context.environment)
            defer { client.close() }
            status.info = try client.probe()
            status.lockout = try client.lockoutStatus()
        }
        return status
    }

    var lines: [String] {
        guard let location else { return ["tpm: none (\(absence ?? "no TPM was found"))"] }
        var out = ["tpm: \(Printable.escape(location.tcti))\(location.source == .environment ? " (LOCKET_TPM)" : "")"]
        if let info {
            out.append("tpm maker: \(Printable.escape(info.manufacturer)) \(Printable.escape(info.vendor)), firmware \(info.firmwareVersion), TPM \(info.family)")
            out.append("tpm P-256: \(info.hasP256 ? "yes" : "no (Secure Enclave keys need it)")")
        }
        if let lockout {
            out.append("tpm lockout: \(lockout.inLockout ? "locked out" : "not locked out"), \(lockout.counter) of \(lockout.maxTries) failures, one forgotten every \(lockout.interval) s")
        }
        return out
    }

    func json(_ w: inout JSONWriter) {
        w.beginObject()
        w.key("found"); w.bool(location != nil)
        w.key("tcti"); if let location { w.string(location.tcti) } else { w.null() }
        w.key("source"); if let location { w.string(location.source == .environment ? "LOCKET_TPM" : "device") } else { w.null() }
        if let absence { w.key("reason"); w.string(absence) }
        if let info {
            w.key("manufacturer"); w.string(info.manufacturer)
            w.key("vendor"); w.string(info.vendor)
            w.key("firmware"); w.string(info.firmwareVersion)
            w.key("p256"); w.bool(info.hasP256)
        }
        if let lockout {
            w.key("lockout"); w.beginObject()
            w.key("counter"); w.int(Int64(lockout.counter))
            w.key("maxTries"); w.int(Int64(lockout.maxTries))
            w.key("interval"); w.int(Int64(lockout.interval))
            w.key("inLockout"); w.bool(lockout.inLockout)
            w.endObject()
        }
        w.endObject()
    }
}
