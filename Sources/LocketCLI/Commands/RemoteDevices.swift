import Glibc
import LocketCore
import LocketSupport

extension Commands {
    /// `locket keychain add-remote|enroll|devices|approve|revoke` (SPEC §17).
    static func keychain(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let operands = invocation.operands
        guard let operation = operands.first else {
            throw UsageError(message: "name an operation: add-remote, enroll, devices, approve or revoke", command: "keychain")
        }
        func count(_ n: Int, _ what: String) throws {
            guard operands.count == n else { throw UsageError(message: "\(operation) takes \(what)", command: "keychain") }
        }
        switch operation {
        case "add-remote":
            try count(3, "a NAME and a postgres:// URL")
            try RemoteRegistry.add(name: operands[1], url: operands[2], passwordService: invocation.value("password-service"),
                                   environment: context.environment)
        case "enroll":
            try count(1, "no operand")
            let keychain = try context.openKeychain()
            let id = try keychain.enroll(name: invocation.value("name") ?? hostName())
            context.out.line("device \(id): ask an approved device to run 'locket \(context.keychainArgument)keychain approve \(id) --groups GROUP,...'")
        case "devices":
            try count(1, "no operand")
            try listDevices(try context.openKeychain().devices(), context)
        case "approve":
            try count(2, "a DEVICE id")
            guard let groups = invocation.value("groups")?.split(separator: ",").map(String.init), !groups.isEmpty else {
                throw UsageError(message: "approve needs --groups GROUP,...", command: "keychain")
            }
            try context.openKeychain().approve(device: try deviceID(operands[1]), groups: groups)
        case "revoke":
            try count(2, "a DEVICE id")
            try context.openKeychain().revoke(device: try deviceID(operands[1]))
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

    private static func listDevices(_ devices: [Keychain.RemoteDevice], _ context: Context) throws {
        if context.json {
            var w = JSONWriter()
            w.beginArray()
            for device in devices {
                w.beginObject()
                w.key("id"); w.int(device.id)
                w.key("name"); w.string(device.name)
                w.key("state"); w.string(device.state)
                w.key("groups"); w.beginArray(); for group in device.groups { w.string(group) }; w.endArray()
                w.key("thisMachine"); w.bool(device.isThisMachine)
                w.endObject()
            }
            w.endArray()
            context.out.bytes(w.bytes)
            context.out.text("\n")
            return
        }
        for device in devices {
            let groups = device.groups.isEmpty ? "-" : device.groups.map { Printable.clip($0) }.joined(with: ",")
            context.out.line("\(device.id)\t\(device.state)\t\(Printable.clip(device.name))\t\(groups)\(device.isThisMachine ? "\t(this machine)" : "")")
        }
    }
}
