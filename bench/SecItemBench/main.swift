// make bench: in-process SecItemCopyMatching of one item among N (SPEC §19:
// at least 20,000 calls per second warm, memory flat over 1 M calls), through
// the Security module exactly as an app calls it, against a keychain in a
// temporary directory (default session backend: the kernel keyring where
// the kernel allows it). Usage: locket-bench-secitem N [CALLS] [ROUNDS]
import Foundation
import Glibc
import LocketCore
import Security

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Resident memory in KiB (/proc/self/statm, pages).
func residentKiB() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024 : 0
}

let arguments = CommandLine.arguments
let itemCount = arguments.count > 1 ? Int(arguments[1])! : 1000
let calls = arguments.count > 2 ? Int(arguments[2])! : 200_000
let rounds = arguments.count > 3 ? Int(arguments[3])! : 5

let directory = String(cString: mkdtemp(strdup("/tmp/locket-bench-secitem-XXXXXX")))
defer { _ = try? FileManager.default.removeItem(atPath: directory) }
for (name, value) in ["HOME": directory, "XDG_DATA_HOME": directory + "/data", "XDG_STATE_HOME": directory + "/state",
                      "XDG_RUNTIME_DIR": directory + "/run"] { setenv(name, value, 1) }
for name in ["LOCKET_KEYCHAIN", "LOCKET_ENTITLEMENTS", "LOCKET_DEVICE_KEY"] { unsetenv(name) }
let path = directory + "/data/locket/login.keychain"
let password = try SecureBytes(copying: Array("bench password".utf8))
try Keychain.create(at: path, password: password, kdf: .interactive, environment: .process)
try Keychain.open(at: path, environment: .process).session.unlock(password: password, timeout: nil)
try Keychain.open(at: path, environment: .process).addBatch((0..<itemCount).lazy.map { i in
    var item = NewItem(itemClass: .genericPassword)
    try! item.set(.service, Array("service-\(i)".utf8))
    try! item.set(.account, Array("bench".utf8))
    return (item, try! SecureBytes(copying: Array("secret-\(i)".utf8)))
})
defer { try? Keychain.open(at: path, environment: .process).session.lock(all: true) }

let wanted = "service-\(itemCount / 2)"
let query: [String: Any] = [
    kSecClass as String: kSecClassGenericPassword,
    kSecAttrService as String: wanted,
    kSecAttrAccount as String: "bench",
    kSecReturnData as String: true,
    kSecMatchLimit as String: kSecMatchLimitOne,
]
let expected = Data("secret-\(itemCount / 2)".utf8)
func lookup(_ query: [String: Any]) {
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    guard status == errSecSuccess, (result as? Data)?.count == expected.count else {
        fatalError("SecItemCopyMatching: \(status)")
    }
}

for _ in 0..<1000 { lookup(query) }  // warm: the keychain kept open, the search's rows held
/// CPU time of this process (user and system), in seconds.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

var rates: [Double] = []
var cpu: [Double] = []
for _ in 0..<rounds {
    let (start, startCPU) = (now(), cpuSeconds())
    for _ in 0..<calls { lookup(query) }
    rates.append(Double(calls) / (now() - start))
    cpu.append((cpuSeconds() - startCPU) / Double(calls) * 1e6)
}
rates.sort()
cpu.sort()
// On a shared machine the wall-clock rate also counts the time others held
// the cores; the CPU time per call is this process's own.
print("items \(itemCount): SecItemCopyMatching warm \(Int(rates[rates.count / 2])) calls/s (median of \(rounds) x \(calls); "
      + "min \(Int(rates.first!)), max \(Int(rates.last!))); CPU \(String(format: "%.1f", cpu[cpu.count / 2])) us per call "
      + "= \(Int(1e6 / cpu[cpu.count / 2])) calls per CPU-second")

// The engine's own search on a keychain opened once (no held rows): what each call cost before.
let engine = try Keychain.open(at: path, environment: .process)
var engineQuery = Query(itemClass: .genericPassword)
try engineQuery.match(.service, Array(wanted.utf8))
try engineQuery.match(.account, Array("bench".utf8))
let engineCalls = max(calls / 20, 1000)
let engineStart = now()
for _ in 0..<engineCalls { _ = try engine.search(engineQuery, returnData: true) }
print("items \(itemCount): Keychain.search, keychain kept open, \(Int(Double(engineCalls) / (now() - engineStart))) calls/s (the file opened per call)")

if arguments.contains("--memory") {
    let before = residentKiB()
    var samples: [Int] = []
    for i in 1...1_000_000 {
        lookup(query)
        if i % 200_000 == 0 { samples.append(residentKiB()) }
    }
    print("items \(itemCount): resident memory over 1,000,000 calls: \(before) KiB before, then \(samples.map { "\($0)" }.joined(separator: ", ")) KiB every 200,000")
}
