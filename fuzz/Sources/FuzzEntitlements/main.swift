import FuzzSupport
import LocketCore

/// XML property lists, binary ones and JSON alike: parse must fail with a
/// KeychainError, never crash, and every group it returns must be usable.
runFuzzer { data, size in
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let entitlements = try? Entitlements.parse(bytes, name: "fuzz.entitlements") {
        precondition(!entitlements.accessGroups.isEmpty)
        precondition(entitlements.accessGroups.allSatisfy { !$0.isEmpty && !$0.unicodeScalars.contains { $0.value < 0x20 } })
        precondition(Set(entitlements.accessGroups).count == entitlements.accessGroups.count)
    }
    return 0
}
