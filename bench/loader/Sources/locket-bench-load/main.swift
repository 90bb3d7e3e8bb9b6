// usage: locket-bench-load KEYCHAIN_PATH FIRST LAST [BATCH]
//        locket-bench-load --create KEYCHAIN_PATH < password
// Adds items service-i / account bench / comment comment-i / secret secret-i
// for i in FIRST...LAST, BATCH (default 10 000) per transaction. The keychain
// must be unlocked (locket unlock) first: items are when-unlocked.
// --create makes the keychain as `locket init` would, but with libsodium's
// minimum Argon2id cost, which the locket binary never writes (it opens such
// a keychain only on this device): an unlock that is everything but Argon2id.
import Glibc
import LocketCore

func fail(_ message: String, _ code: Int32) -> Never {
    let line = Array((message + "\n").utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(code)
}

let args = CommandLine.arguments
if args.count == 3 && args[1] == "--create" {
    var line: [UInt8] = []
    var c: UInt8 = 0
    while read(0, &c, 1) == 1 && c != 0x0a { line.append(c) }
    do {
        try Keychain.create(at: args[2], password: try SecureBytes(copying: line), kdf: .weakForTests, environment: .process)
    } catch {
        fail("locket-bench-load: \(error)", 1)
    }
    exit(0)
}
guard args.count >= 4, let first = Int(args[2]), let last = Int(args[3]), first <= last else {
    fail("usage: locket-bench-load KEYCHAIN_PATH FIRST LAST [BATCH]", 2)
}
let batch = args.count > 4 ? Int(args[4]) ?? 10_000 : 10_000

do {
    let keychain = try Keychain.open(at: args[1], environment: .process)
    var i = first
    while i <= last {
        let end = min(i + batch - 1, last)
        // Lazy: each secret is made when it is inserted and released after.
        let items = (i...end).lazy.map { n -> (item: NewItem, data: SecureBytes) in
            var item = NewItem(itemClass: .genericPassword)
            try! item.set(.service, Array("service-\(n)".utf8))
            try! item.set(.account, Array("bench".utf8))
            try! item.set(.comment, Array("comment-\(n)".utf8))
            // try!: a lazy map cannot throw (a throwing one is the eager map, every secret at once).
            return (item: item, data: try! SecureBytes(copying: Array("secret-\(n)".utf8)))
        }
        try keychain.addBatch(items)
        i = end + 1
    }
} catch {
    fail("locket-bench-load: \(error)", 1)
}
