import Foundation
import Glibc
import LocketCore
import LocketTestSupport
import Security
import Synchronization
import XCTest

/// Thread safety (SPEC §19): many threads calling at once in one process,
/// and several processes with the command line beside them, lose nothing.
/// The keychain is on tmpfs: these tests are about threads and processes,
/// not about how fast a disk syncs (a write is a transaction with fsyncs).
final class SecurityConcurrencyTests: SecurityTestCase {
    private var memoryDirectory: String?

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard FileManager.default.fileExists(atPath: "/dev/shm") else { return }
        var template = Array("/dev/shm/locket-security-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { return }
        let directory = String(cString: made)
        memoryDirectory = directory
        // The generation mirror is written (and synced) at every write: on tmpfs too.
        setenv("XDG_STATE_HOME", directory + "/state", 1)
        try Keychain.create(at: directory + "/threads.keychain", password: try SecureBytes(copying: Array(password.utf8)),
                            kdf: .weakForTests, environment: .process)
        setenv("LOCKET_KEYCHAIN", directory + "/threads.keychain", 1)
    }

    override func tearDown() {
        if let memoryDirectory {
            if let keychain = try? Keychain.open(at: memoryDirectory + "/threads.keychain", environment: .process) { keychain.session.lock(all: true) }
            try? FileManager.default.removeItem(atPath: memoryDirectory)
        }
        unsetenv("LOCKET_KEYCHAIN")
        super.tearDown()
    }

    private static func item(_ thread: Int, _ i: Int) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "threads", kSecAttrAccount as String: "t\(thread)-\(i)"]
    }

    /// 8 threads x 1,000 operations each under `make soak` (a quarter in
    /// `make test`, where the threads still meet on every kind of call:
    /// ReliabilityScale): 400 adds, 400 reads of what was just added, 100
    /// updates and 100 deletes, interleaved. Every status is success, every
    /// read sees its thread's value, and what is left is what the operations
    /// leave: 300 items a thread, the updated ones changed.
    func testEightThreadsOfAThousandMixedOperations() throws {
        let threads = 8
        let adds = ReliabilityScale.soak ? 400 : 100
        let item = SecurityConcurrencyTests.item
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            func check(_ status: OSStatus, _ what: String) {
                if status != errSecSuccess { failures.withLock { $0.append("thread \(thread): \(what): \(status)") } }
            }
            for i in 0..<adds {
                var add = item(thread, i)
                add[kSecValueData as String] = Data("v\(thread)-\(i)".utf8)
                check(SecItemAdd(add as CFDictionary, nil), "add \(i)")
                var read = item(thread, i)
                read[kSecReturnData as String] = true
                var result: CFTypeRef?
                check(SecItemCopyMatching(read as CFDictionary, &result), "read \(i)")
                if result as? Data != Data("v\(thread)-\(i)".utf8) { failures.withLock { $0.append("thread \(thread): read \(i) saw \(String(describing: result))") } }
                if i % 4 == 1 {
                    check(SecItemUpdate(item(thread, i - 1) as CFDictionary, [kSecValueData as String: Data("u\(thread)-\(i - 1)".utf8)] as CFDictionary),
                          "update \(i - 1)")
                }
                if i % 4 == 3 { check(SecItemDelete(item(thread, i - 2) as CFDictionary), "delete \(i - 2)") }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecAttrService: "threads", kSecMatchLimit: kSecMatchLimitAll,
                                            kSecReturnAttributes: true, kSecReturnData: true] as CFDictionary, &result), errSecSuccess)
        let left = try XCTUnwrap(result as? [[String: Any]])
        XCTAssertEqual(left.count, threads * adds * 3 / 4)
        var values: [String: String] = [:]
        for entry in left {
            values[entry[kSecAttrAccount as String] as! String] = String(decoding: entry[kSecValueData as String] as! Data, as: UTF8.self)
        }
        for thread in 0..<threads {
            for i in 0..<adds {
                let expected: String? = i % 4 == 1 ? nil : i % 4 == 0 ? "u\(thread)-\(i)" : "v\(thread)-\(i)"
                XCTAssertEqual(values["t\(thread)-\(i)"], expected, "t\(thread)-\(i)")
            }
        }
    }

    /// Three processes using the module and two command lines adding beside
    /// them, all at once on one keychain: nothing is lost.
    func testProcessesAndTheCommandLineTogether() throws {
        let host = try XCTUnwrap(SecurityTestHost.path, "SecurityTestHost was not built next to the tests")
        let binary = try locketBinary()
        var shared = sandbox.environment
        shared["LOCKET_KEYCHAIN"] = try XCTUnwrap(memoryDirectory) + "/threads.keychain"
        shared["XDG_STATE_HOME"] = try XCTUnwrap(memoryDirectory) + "/state"
        let environment = shared
        let outcomes = Mutex<[String: RunResult]>([:])
        DispatchQueue.concurrentPerform(iterations: 5) { worker in
            if worker < 3 {
                let result = Spawn.run(host, ["worker", "p\(worker)", "200"], environment: environment, input: .devNull, timeout: 120)
                outcomes.withLock { $0["host \(worker)"] = result }
            } else {
                // A shell loop of `locket add`s, secrets on stdin.
                let script = "i=0; while [ $i -lt 25 ]; do printf 'cli%s' $i | \"$L\" add -s workers -a cli\(worker)-$i -w || exit 1; i=$((i+1)); done"
                var shellEnvironment = environment
                shellEnvironment["L"] = binary
                let result = Spawn.run("/bin/sh", ["-c", script], environment: shellEnvironment, input: .devNull, timeout: 120)
                outcomes.withLock { $0["cli \(worker)"] = result }
            }
        }
        for (name, result) in outcomes.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(result.status, 0, "\(name): \(result.summary)")
            if name.hasPrefix("host") { XCTAssertEqual(result.out, "ok 275\n", name) }
        }
        // Each host leaves 100 - 25 = 75 items; each command line 25.
        let listed = Spawn.run(binary, ["find", "-s", "workers", "--all", "--json"], environment: environment, input: .devNull, timeout: 60)
        XCTAssertEqual(listed.status, 0, listed.summary)
        XCTAssertEqual(try listed.jsonArray().count, 3 * 75 + 2 * 25)
    }
}
