// usage: locket-bench-load KEYCHAIN_PATH FIRST LAST [BATCH]
// Adds items service-i / account bench / comment comment-i / secret secret-i
// for i in FIRST...LAST, BATCH (default 10 000) per transaction. The keychain
// must be unlocked (locket unlock) first: items are when-unlocked.
import Glibc
import LocketCore

func fail(_ message: String, _ code: Int32) -> Never {
    let line = Array((message + "\n").utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(code)
}

let args = CommandLine.arguments
guard args.count >= 4, let first = Int(args[2]), let last = Int(args[3]), first <= last else {
    fail("usage: locket-bench-load KEYCHAIN_PATH FIRST LAST [BATCH]", 2)
}
let batch = args.count > 4 ? Int(args[4]) ?? 10_000 : 10_000

var variables: [String: String] = [:]
var p = environ
while let entry = p.pointee {
    let s = String(cString: entry)
    if let eq = s.firstIndex(of: "=") { variables[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
    p += 1
}

do {
    let keychain = try Keychain.open(at: args[1], environment: Environment(variables))
    var i = first
    while i <= last {
        let end = min(i + batch - 1, last)
        var items: [(item: NewItem, data: SecureBytes)] = []
        items.reserveCapacity(end - i + 1)
        for n in i...end {
            var item = NewItem(itemClass: .genericPassword)
            try item.set(.service, Array("service-\(n)".utf8))
            try item.set(.account, Array("bench".utf8))
            try item.set(.comment, Array("comment-\(n)".utf8))
            items.append((item: item, data: SecureBytes(copying: Array("secret-\(n)".utf8))))
        }
        try keychain.addBatch(items)
        i = end + 1
    }
} catch {
    fail("locket-bench-load: \(error)", 1)
}
