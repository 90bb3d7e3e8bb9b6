/// `shared/compat/`'s three libraries, as their own manifests declare them
/// (keychain-swift leaves out ClearTests.swift itself). What their tests
/// assume of the app that hosts them is CompatAcceptanceTests' (`Case`).
extension CompatPackage {
    public static let keychainSwift = Library(
        name: "KeychainSwift", folder: "keychain-swift", sources: "Sources",
        sourceExcludes: ["Info.plist", "KeychainSwift.h", "PrivacyInfo.xcprivacy"],
        tests: "Tests/KeychainSwiftTests",
        testExcludes: ["ClearTests.swift", "Info.plist", "KeychainSwiftTests-Bridging-Header.h", "macOS Tests/Info.plist"],
        implicitSecurity: (library: false, tests: true))

    public static let keychainAccess = Library(
        name: "KeychainAccess", folder: "KeychainAccess", sources: "Lib/KeychainAccess",
        sourceExcludes: ["Info.plist", "KeychainAccess.h"],
        tests: "Lib/KeychainAccessTests",
        // Safari's shared web credentials: API that exists on iOS only (compat/README.md).
        testExcludes: ["Info.plist", "SharedCredentialTests.swift"],
        implicitSecurity: (library: false, tests: true))

    public static let simpleKeychain = Library(
        name: "SimpleKeychain", folder: "SimpleKeychain", sources: "SimpleKeychain", sourceExcludes: ["Info.plist"],
        tests: "SimpleKeychainTests", testExcludes: ["Info.plist"],
        // SimpleKeychainError.swift imports only Foundation and uses errSec codes.
        implicitSecurity: (library: true, tests: true))

    /// The package holds all three: one build, whichever suite runs first.
    public static let libraries = [keychainSwift, keychainAccess, simpleKeychain]
}
