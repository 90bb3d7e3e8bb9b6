import Glibc
import LocketCLI
import LocketCore
import LocketLocator
import LocketRemote
import LocketSupport

/// `locket keychain`: naming a keychain in PostgreSQL, and managing the
/// devices that share it (its row in the one table is LocketCLI's; what it
/// runs is here, beside the modules it names: `Backends.all`).
enum KeychainCommand {
    /// `locket keychain add-remote|enroll|devices|approve|revoke|audit|verify|sync|recover` (SPEC §17).
    static func run(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let operands = invocation.operands
        guard let operation = operands.first else {
            throw UsageError(message: "name an operation: add-remote, enroll, devices, approve, revoke, audit, verify, sync or recover", command: "keychain")
        }
        func count(_ n: Int, _ what: String) throws {
            guard operands.count == n else { throw UsageError(message: "\(operation) takes \(what)", command: "keychain") }
        }
        switch operation {
        case "add-remote":
            try count(3, "a NAME and a postgres:// URL")
            let replaced = try KeychainLocator.register(name: operands[1], url: operands[2], passwordService: invocation.value("password-service"),
                                                        replacing: invocation.has("replace"), environment: context.environment)
            if let replaced {
                // Both URLs passed the locator's checks: neither holds a password.
                context.err("locket: \(Printable.clip(operands[1])) now names \(Printable.clip(operands[2], max: 512)) (it named \(Printable.clip(replaced, max: 512)))")
            }
        case "enroll":
            try count(1, "no operand")
            let enrolled = try context.openKeychain().remote(for: .enroll).enroll(name: invocation.value("name") ?? hostName())
            context.out.line("device \(enrolled.id): fingerprint \(enrolled.fingerprint) (\(enrolled.fingerprintWords))")
            context.out.line("tell it to the owner of an approved device, who checks it and runs 'locket \(context.keychainArgument)keychain approve \(enrolled.id) --fingerprint \(enrolled.fingerprint) --groups GROUP,...'")
            context.out.line("this device now trusts the membership last signed by device \(enrolled.signer), fingerprint \(enrolled.signerFingerprint): compare it with 'keychain devices' there")
        case "devices":
            try count(1, "no operand")
            try listDevices(try context.openKeychain().remote(for: .devices).devices(), context)
        case "approve":
            try count(2, "a DEVICE id")
            guard let groups = invocation.value("groups")?.split(separator: ",").map(String.init), !groups.isEmpty else {
                throw UsageError(message: "approve needs --groups GROUP,...", command: "keychain")
            }
            guard let fingerprint = invocation.value("fingerprint") else {
                throw UsageError(message: "approve needs --fingerprint FINGERPRINT: the one 'keychain enroll' printed on that device, compared out of band", command: "keychain")
            }
            try context.openKeychain().remote(for: .approve).approve(device: try deviceID(operands[1]), groups: groups, fingerprint: fingerprint)
        case "revoke":
            try count(2, "a DEVICE id")
            try context.openKeychain().remote(for: .revoke).revoke(device: try deviceID(operands[1]))
        case "audit":
            try count(1, "no operand")
            let since = try invocation.value("since").map { try AuditTime.parse($0, now: context.io.environment.time.milliseconds() * 1000) } ?? 0
            try listAudit(try context.openKeychain().remote(for: .audit).audit(since: since), context)
        case "verify":
            try count(1, "no operand")
            let remote = try context.openKeychain().remote(for: .verify)
            if let other = invocation.value("expect") {
                let view = try remote.verify(against: other)
                context.out.line("consistent with \(Printable.clip(other)): this device sees \(view)")
            } else {
                context.out.line(try remote.view())
            }
        case "sync":
            try count(1, "no operand")
            let remote = try context.openKeychain().remote(for: .sync)
            let items = try remote.syncOfflineCache()
            context.out.line("\(items) after-first-unlock item\(items == 1 ? "" : "s") cached for offline reads (--max-stale) in \(remote.offlineCachePath ?? "")")
        case "recover":
            try count(1, "no operand")
            return try recover(invocation, context)
        default:
            throw UsageError(message: "unknown operation '\(Printable.clip(operation))'", command: "keychain")
        }
        return 0
    }

    private static func deviceID(_ text: String) throws -> Int64 {
        guard let id = Int64(text), id > 0 else { throw UsageError(message: "'\(Printable.clip(text))' is not a device id", command: "keychain") }
        return id
    }

    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "device" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func listDevices(_ devices: [RemoteAdmin.Device], _ context: Context) throws {
        if context.json {
            return writeJSONArray(devices, context) { device, w in
                w.key("id"); w.int(device.id)
                w.key("name"); w.string(device.name)
                w.key("state"); w.string(device.state)
                w.key("groups"); w.beginArray(); for group in device.groups { w.string(group) }; w.endArray()
                w.key("thisMachine"); w.bool(device.isThisMachine)
                w.key("fingerprint"); w.string(device.fingerprint)
                w.key("fingerprintWords"); w.string(device.fingerprintWords)
            }
        }
        for device in devices {
            let groups = device.groups.isEmpty ? "-" : device.groups.map { Printable.clip($0) }.joined(with: ",")
            context.out.line("\(device.id)\t\(device.state)\t\(Printable.clip(device.name))\t\(groups)\t\(device.fingerprint)\(device.isThisMachine ? "\t(this machine)" : "")")
        }
    }

    private static func listAudit(_ entries: [RemoteAdmin.AuditEntry], _ context: Context) throws {
        if context.json {
            return writeJSONArray(entries, context) { entry, w in
                w.key("id"); w.int(entry.id)
                w.key("device"); w.int(entry.device)
                w.key("deviceName"); w.string(entry.deviceName)
                w.key("ref"); w.string(Hex.encode(entry.item))
                w.key("operation"); w.string(entry.operation)
                w.key("at"); w.string(AuditTime.format(entry.at))
            }
        }
        for entry in entries {
            context.out.line("\(AuditTime.format(entry.at))\t\(entry.device)\t\(Printable.clip(entry.deviceName))\t\(entry.operation)\t\(Hex.encode(entry.item))")
        }
    }

    /// `--json` of a listing: one array, an object per row (`fields` writes its keys), then a newline.
    private static func writeJSONArray<Row>(_ rows: [Row], _ context: Context, fields: (Row, inout JSONWriter) -> Void) {
        var w = JSONWriter()
        w.beginArray()
        for row in rows {
            w.beginObject()
            fields(row, &w)
            w.endObject()
        }
        w.endArray()
        context.out.bytes(w.bytes)
        context.out.text("\n")
    }
}
