import Foundation
import LocketCore
import LocketTestSupport
import XCTest

/// SPEC §19's "done when": a new package outside the repository, depending
/// on this checkout by path and on its Security product only on Linux (the
/// condition that keeps Apple's framework on Apple's platforms), compiles a
/// file written with nothing but Apple's spellings, and the program works on
/// a keychain. Built in `.build/external-package` (kept: a second run is
/// incremental). A clean clone pays a whole debug build of the engine for
/// it (45 s of CPU here, a sixth of `make test`'s build): it runs in `make
/// package-check` (LOCKET_PACKAGE_CHECK=1), and `make test` says so.
final class ExternalPackageTests: SecurityTestCase {
    static let manifest = """
    // swift-tools-version:5.9
    import PackageDescription

    let package = Package(
        name: "KeychainClient",
        dependencies: [.package(path: "CHECKOUT")],
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
        guard ProcessInfo.processInfo.environment["LOCKET_PACKAGE_CHECK"] == "1" else {
            throw XCTSkip("a package outside the repository is built against this checkout by make package-check (a debug build of the engine)")
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        guard let swift = path.split(separator: ":").map({ "\($0)/swift" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("no swift on PATH")
        }
        let root = LocketBinary.repositoryRoot
        let package = sandbox.root + "/client"
        try FileManager.default.createDirectory(atPath: package + "/Sources/KeychainClient", withIntermediateDirectories: true)
        let identity = (root as NSString).lastPathComponent.lowercased()
        try Self.manifest.replacingOccurrences(of: "CHECKOUT", with: root).replacingOccurrences(of: "IDENTITY", with: identity)
            .write(toFile: package + "/Package.swift", atomically: true, encoding: .utf8)
        try Self.program.write(toFile: package + "/Sources/KeychainClient/main.swift", atomically: true, encoding: .utf8)
        let scratch = root + "/.build/external-package"
        // The developer's own environment (SwiftPM's caches, the toolchain), not the sandbox's.
        let build = Spawn.run(swift, ["build", "--package-path", package, "--scratch-path", scratch], environment: ProcessInfo.processInfo.environment,
                              input: .devNull, timeout: 900)
        XCTAssertEqual(build.status, 0, build.summary)
        guard build.status == 0 else { return }
        let run = Spawn.run(scratch + "/debug/KeychainClient", [], environment: sandbox.environment, input: .devNull, timeout: 60)
        XCTAssertEqual(run.out, "ok s3cret 1\n", run.summary)
    }
}
