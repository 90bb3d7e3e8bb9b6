import Foundation
import LocketCore
import LocketTestSupport
import XCTest

/// SPEC §19's "done when": a new package outside the repository, depending
/// on this checkout and on its Security product only on Linux (the condition
/// that keeps Apple's framework on Apple's platforms), compiles a file
/// written with nothing but Apple's spellings, and the program works on a
/// keychain; once by path, once by version (`.package(url: "file://...",
/// from: "0.1.0")` against a clone of the checkout's HEAD tagged 0.1.0),
/// which SwiftPM allows only for a package without unsafeFlags. Built in
/// `.build/external-package*` (kept: a second run is incremental). A clean
/// clone pays a whole debug build of the engine for each (45 s of CPU
/// here): they run in `make package-check` (LOCKET_PACKAGE_CHECK=1), which
/// `.ci/run` runs after `make test`, and `make test` says so.
final class ExternalPackageTests: SecurityTestCase {
    static let manifest = """
    // swift-tools-version:5.9
    import PackageDescription

    let package = Package(
        name: "KeychainClient",
        dependencies: [DEPENDENCY],
        targets: [
            .executableTarget(name: "KeychainClient", dependencies: [
                .product(name: "Security", package: "IDENTITY", condition: .when(platforms: [.linux])),
            ]),
        ]
    )
    """

    /// Apple's spellings only: nothing here is locket's.
    static let program = """
    import Foundation
    import LocalAuthentication
    import Security

    func fail(_ what: String, _ status: OSStatus) -> Never {
        print("\\(what): \\(status) \\(SecCopyErrorMessageString(status, nil) as String? ?? "")")
        exit(1)
    }

    let add: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: "com.example.client",
        kSecAttrAccount as String: "token",
        kSecValueData as String: "s3cret".data(using: .utf8)!,
        kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
    ]
    var status = SecItemAdd(add as CFDictionary, nil)
    guard status == errSecSuccess else { fail("SecItemAdd", status) }

    var item: CFTypeRef?
    status = SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecAttrService: "com.example.client",
                                  kSecMatchLimit: kSecMatchLimitAll, kSecReturnAttributes: kCFBooleanTrue!,
                                  kSecReturnData: kCFBooleanTrue!] as CFDictionary, &item)
    guard status == errSecSuccess, let found = item as? [[String: Any]],
          let secret = found.first?[kSecValueData as String] as? Data else { fail("SecItemCopyMatching", status) }

    var error: Unmanaged<CFError>?
    guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                       .privateKeyUsage, &error) else { fail("SecAccessControlCreateWithFlags", -1) }
    let parameters: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeySizeInBits as String: 256,
        kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
        kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true, kSecAttrAccessControl as String: access],
    ]
    guard let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error),
          let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, secret as CFData, &error),
          let publicKey = SecKeyCopyPublicKey(key),
          SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, secret as CFData, signature, &error) else {
        print("SecKey: \\(error!.takeRetainedValue() as Error)")
        exit(1)
    }
    let context = LAContext()
    context.interactionNotAllowed = true
    status = SecItemDelete([kSecClass: kSecClassGenericPassword, kSecUseAuthenticationContext: context] as CFDictionary)
    guard status == errSecSuccess else { fail("SecItemDelete", status) }
    print("ok \\(String(data: secret, encoding: .utf8)!) \\((item as! [[String: Any]]).count)")
    """

    func testANewPackageBuildsAgainstThisCheckoutByPath() throws {
        let root = LocketBinary.repositoryRoot
        try check(dependency: ".package(path: \"\(root)\")", identity: (root as NSString).lastPathComponent.lowercased(),
                  scratch: root + "/.build/external-package")
    }

    /// By version, as every Swift package depends on another: SwiftPM
    /// refuses a dependency required by version whose targets carry unsafeFlags.
    func testANewPackageDependsOnItByVersion() throws {
        let root = LocketBinary.repositoryRoot
        guard ProcessInfo.processInfo.environment["LOCKET_PACKAGE_CHECK"] == "1" else {
            throw XCTSkip("a package outside the repository is built against this checkout by make package-check (a debug build of the engine)")
        }
        // A clone of HEAD, tagged as a release would be: kept, so SwiftPM's checkout of it is incremental.
        let clone = root + "/.build/package-check/locket"
        if !FileManager.default.fileExists(atPath: clone + "/.git") {
            try git(["clone", "--quiet", "--no-hardlinks", root, clone])
        }
        let head = try git(["-C", root, "rev-parse", "HEAD"]).out.trimmingCharacters(in: .whitespacesAndNewlines)
        try git(["-C", clone, "fetch", "--quiet", root, head])
        try git(["-C", clone, "checkout", "--quiet", "--detach", head])
        try git(["-C", clone, "tag", "--force", "0.1.0", head])
        try check(dependency: ".package(url: \"file://\(clone)\", from: \"0.1.0\")", identity: "locket",
                  scratch: root + "/.build/external-package-version")
    }

    @discardableResult
    private func git(_ arguments: [String]) throws -> RunResult {
        let run = Spawn.run("/usr/bin/git", arguments, environment: ProcessInfo.processInfo.environment, input: .devNull, timeout: 300)
        guard run.status == 0 else { throw UnexpectedOutput("git \(arguments.joined(separator: " ")): \(run.summary)") }
        return run
    }

    private func check(dependency: String, identity: String, scratch: String) throws {
        guard ProcessInfo.processInfo.environment["LOCKET_PACKAGE_CHECK"] == "1" else {
            throw XCTSkip("a package outside the repository is built against this checkout by make package-check (a debug build of the engine)")
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        guard let swift = path.split(separator: ":").map({ "\($0)/swift" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("no swift on PATH")
        }
        let package = sandbox.root + "/client"
        try FileManager.default.createDirectory(atPath: package + "/Sources/KeychainClient", withIntermediateDirectories: true)
        try Self.manifest.replacingOccurrences(of: "DEPENDENCY", with: dependency).replacingOccurrences(of: "IDENTITY", with: identity)
            .write(toFile: package + "/Package.swift", atomically: true, encoding: .utf8)
        try Self.program.write(toFile: package + "/Sources/KeychainClient/main.swift", atomically: true, encoding: .utf8)
        // The developer's own environment (SwiftPM's caches, the toolchain), not the sandbox's.
        let build = Spawn.run(swift, ["build", "--package-path", package, "--scratch-path", scratch], environment: ProcessInfo.processInfo.environment,
                              input: .devNull, timeout: 900)
        XCTAssertEqual(build.status, 0, build.summary)
        guard build.status == 0 else { return }
        // A debug build of the engine on a loaded machine can outlast the
        // session's auto-lock (300 s; 407 s seen): unlocked again, as the
        // program's user would before running it.
        try unlock()
        // Its Secure Enclave key is made in a TPM (SPEC §21): a swtpm of the test's own, and
        // locket-tpm beside the program, where the build tree has it. The program looks
        // beside its real path (/proc/self/exe): SwiftPM's scratch/debug is a symbolic link.
        let tpm = try useSoftwareTPM()
        let program = URL(fileURLWithPath: scratch + "/debug/KeychainClient").resolvingSymlinksInPath().path
        let helpers = URL(fileURLWithPath: program).deletingLastPathComponent().path
        try? FileManager.default.removeItem(atPath: helpers + "/locket-tpm")
        do {
            try FileManager.default.copyItem(atPath: try SoftwareTPM.helperPath(), toPath: helpers + "/locket-tpm")
        } catch let unavailable as TestUnavailable {
            throw XCTSkip(unavailable.reason)
        }
        var environment = sandbox.environment
        environment["LOCKET_TPM"] = tpm.tcti
        let run = Spawn.run(program, [], environment: environment, input: .devNull, timeout: 60)
        XCTAssertEqual(run.out, "ok s3cret 1\n", run.summary)
    }
}
