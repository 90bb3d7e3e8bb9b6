// Test only: a program that uses the Security module as an app would, for
// the tests that need one in a process of its own (several processes beside
// the command line, a real terminal). The keychain and the entitlements come
// from the environment, as for any app.
//   SecurityTestHost read SERVICE ACCOUNT [PROMPT]   the secret, or "status N"
//   SecurityTestHost worker NAME COUNT               COUNT mixed operations on items NAME-*, then "ok N"
//   SecurityTestHost can-evaluate POLICY             LAContext.canEvaluatePolicy: "yes", or "no CODE"
import Foundation
import Glibc
import LocalAuthentication
import Security

// Each line is written at once (print buffers when stdout is a pipe).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
let arguments = CommandLine.arguments
guard arguments.count >= 2 else { exit(2) }

switch arguments[1] {
case "read" where arguments.count >= 4:
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: arguments[2],
        kSecAttrAccount as String: arguments[3],
        kSecReturnData as String: true,
    ]
    if arguments.count > 4 { query[kSecUseOperationPrompt as String] = arguments[4] }
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    guard status == errSecSuccess, let data = result as? Data else {
        say("status \(status)")
        exit(1)
    }
    say(String(decoding: data, as: UTF8.self))

case "can-evaluate" where arguments.count == 3:
    guard let raw = Int(arguments[2]), let policy = LAPolicy(rawValue: raw) else { exit(2) }
    var error: NSError?
    if LAContext().canEvaluatePolicy(policy, error: &error) {
        say("yes")
    } else {
        say("no \(error.map { "\($0.code)" } ?? "without an error")")
    }

case "worker" where arguments.count == 4:
    // Adds COUNT / 2 items, reads each back, updates every other one and
    // deletes every fourth: what is left is known, and checked by the test.
    let name = arguments[2]
    let count = Int(arguments[3])!
    func item(_ i: Int) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "workers", kSecAttrAccount as String: "\(name)-\(i)"]
    }
    func check(_ status: OSStatus, _ what: String) {
        if status != errSecSuccess {
            say("\(what): status \(status)")
            exit(1)
        }
    }
    var done = 0
    for i in 0..<(count / 2) {
        var add = item(i)
        add[kSecValueData as String] = Data("v\(i)".utf8)
        check(SecItemAdd(add as CFDictionary, nil), "add \(i)")
        var read = item(i)
        read[kSecReturnData as String] = true
        var result: CFTypeRef?
        check(SecItemCopyMatching(read as CFDictionary, &result), "read \(i)")
        guard result as? Data == Data("v\(i)".utf8) else { say("read \(i): wrong value"); exit(1) }
        done += 2
        if i % 2 == 1 {
            check(SecItemUpdate(item(i - 1) as CFDictionary, [kSecValueData as String: Data("u\(i - 1)".utf8)] as CFDictionary), "update \(i - 1)")
            done += 1
        }
        if i % 4 == 3 {
            check(SecItemDelete(item(i - 3) as CFDictionary), "delete \(i - 3)")
            done += 1
        }
    }
    say("ok \(done)")

default:
    exit(2)
}
