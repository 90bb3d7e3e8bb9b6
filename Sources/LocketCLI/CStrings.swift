import Glibc
import LocketCore
import LocketSupport

/// NUL-terminated C strings in malloc'd memory, as execve wants them.
final class CStringArray {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private let count: Int

    init(_ strings: [String]) {
        count = strings.count
        pointers = .allocate(capacity: strings.count + 1)
        for (i, s) in strings.enumerated() { pointers[i] = strdup(s) }
        pointers[strings.count] = nil
    }

    func free() {
        for i in 0..<count { Glibc.free(pointers[i]) }
        pointers.deallocate()
    }
}

/// The child's environment: plain variables, and secrets copied straight from
/// guarded memory into C strings that are wiped once the child has them.
final class EnvironmentBlock {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private var entries: [(UnsafeMutablePointer<CChar>, Int)] = []
    private var wiped = false

    init(plain: [Environment.Variable], secrets: [(name: String, value: SecureBytes)]) {
        pointers = .allocate(capacity: plain.count + secrets.count + 1)
        var i = 0
        for variable in plain {
            // Byte for byte: a value that is not UTF-8 reaches the command unchanged.
            let bytes = variable.name + [UInt8(ascii: "=")] + variable.value + [0]
            let entry = malloc(bytes.count)!.assumingMemoryBound(to: CChar.self)
            bytes.withUnsafeBytes { UnsafeMutableRawPointer(entry).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            entries.append((entry, bytes.count))
            pointers[i] = entry; i += 1
        }
        for (name, value) in secrets {
            let prefix = Array("\(name)=".utf8)
            let size = prefix.count + value.count + 1
            let entry = malloc(size)!.assumingMemoryBound(to: CChar.self)
            prefix.withUnsafeBytes { UnsafeMutableRawPointer(entry).copyMemory(from: $0.baseAddress!, byteCount: prefix.count) }
            value.withUnsafeBytes { raw in
                if raw.count > 0 { (UnsafeMutableRawPointer(entry) + prefix.count).copyMemory(from: raw.baseAddress!, byteCount: raw.count) }
            }
            entry[size - 1] = 0
            entries.append((entry, size))
            pointers[i] = entry; i += 1
        }
        pointers[i] = nil
    }

    func wipe() {
        guard !wiped else { return }
        wiped = true
        for (entry, size) in entries {
            LocketSupport.wipe(UnsafeMutableRawBufferPointer(start: entry, count: size))
            free(entry)
        }
        pointers.deallocate()
    }
}
