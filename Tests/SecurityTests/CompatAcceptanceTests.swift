import CompatAcceptancePackage
import Foundation
import Glibc
import LocketCore
import LocketTestSupport
import XCTest

/// SPEC §19's promise measured on other people's code (issue 37): the most
/// used keychain wrappers, taken from their own repositories with their own
/// XCTest suites (`shared/compat/`, never edited, never copied), build
/// against the Security module and pass their own tests against a keychain
/// of their own. What their tests need of an iOS app is given as Linux gives
/// it: the bundle identifier (an Info.plist beside the test program, which
/// is where Foundation's `Bundle.main` reads it) and the entitlements
/// (LOCKET_ENTITLEMENTS, SPEC §6). The tests that can't pass here are
/// listed with their reasons (`expected`), and each must still fail: a
/// listed test that passes is reported, so the list stays true.
final class CompatAcceptanceTests: XCTestCase {
    /// The three libraries (CompatPackage's), plus what their tests assume of
    /// the app that hosts them.
    struct Case {
        var library: CompatPackage.Library
        var bundleIdentifier: String
        /// The host app's entitlements, as its code signature would carry them; nil: the keychain's owner.
        var entitlements: String?
        /// Tests that can't pass on Linux, by `Class.test`, and why.
        var expected: [String: String]
    }

    static let keychainSwift = Case(
        library: CompatPackage.keychainSwift,
        bundleIdentifier: "com.marketplacer.KeychainSwiftDemo", entitlements: nil, expected: [:])

    static let keychainAccess = Case(
        library: CompatPackage.keychainAccess,
        bundleIdentifier: "com.kishikawakatsumi.KeychainAccess.TestHost",
        // Lib/TestHost/TestHost.entitlements upstream, with the application identifier signing adds.
        entitlements: """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
                <key>application-identifier</key>
                <string>27AEDK3C9F.com.kishikawakatsumi.KeychainAccess.TestHost</string>
                <key>keychain-access-groups</key>
                <array>
                    <string>$(AppIdentifierPrefix)com.kishikawakatsumi.KeychainAccess.TestHost</string>
                    <string>$(AppIdentifierPrefix)shared</string>
                </array>
            </dict>
            </plist>

            """,
        expected: [
            "KeychainAccessTests.testAllKeys":
                "expects each item's value from allItems(), which the library asks for only when built for iOS (`#if os(iOS)`); on every other platform, Linux as macOS, it asks for attributes only",
            "KeychainAccessTests.testStringConversionError":
                "`catch let error as NSError` takes the library's Swift error only where Objective-C bridges errors to NSError (Apple's platforms); the same test's `catch Status.conversionError` passes",
        ])

    static let simpleKeychain = Case(
        library: CompatPackage.simpleKeychain,
        bundleIdentifier: "com.auth0.SimpleKeychain.TestHost", entitlements: nil,
        expected: Dictionary(uniqueKeysWithValues: ["testGetAllQueryContainsBaseQuery", "testGetOneQueryContainsBaseQuery", "testSetQueryContainsBaseQuery"].map {
            ("SimpleKeychainTests.\($0)",
             "compares two dictionaries with NSDictionary.isEqual(to:), which swift-corelibs-foundation answers false for equal dictionaries holding an NSString value (kSecClassGenericPassword: Apple's CFString constants are objects); `NSDictionary(dictionary: d).isEqual(to: d)` is false there for d = [\"k\": NSString(\"v\")]")
        }))

    func testKeychainSwiftPassesItsOwnTests() throws { try check(Self.keychainSwift) }
    func testKeychainAccessPassesItsOwnTests() throws { try check(Self.keychainAccess) }
    func testSimpleKeychainPassesItsOwnTests() throws { try check(Self.simpleKeychain) }

    private func check(_ library: Case) throws {
        let root = LocketBinary.repositoryRoot
        guard let compat = CompatPackage.compatDirectory(from: root) else {
            throw XCTSkip(CompatPackage.unavailable)
        }
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let package = CompatPackage(root: root, compat: compat, bin: bin)
        guard FileManager.default.fileExists(atPath: package.engineLinkList) else {
            throw XCTSkip("this test bundle's build has no CompatAcceptanceBuild to link the engine from (swift build --build-tests)")
        }
        let build = try buildPackage(package)
        XCTAssertEqual(build.status, 0, "the package of shared/compat's libraries did not build:\n" + build.summary)
        guard build.status == 0 else { return }

        let outcome = try run(library, package)
        let listed = outcome.listed
        XCTAssertFalse(listed.isEmpty, "no test of \(library.library.name) was listed")
        for test in listed {
            let result = outcome.results[test]
            if let reason = library.expected[test] {
                XCTAssertEqual(result, "failed", "\(test) is listed as unable to pass (\(reason)) but \(result ?? "did not run"): update the list")
            } else {
                XCTAssertEqual(result, "passed", "\(library.library.name)'s own test \(test) \(result ?? "did not run (a crash before it?)")\n"
                                                 + outcome.failures(of: test))
            }
        }
        for test in library.expected.keys where !listed.contains(test) { XCTFail("\(test) is listed but is not one of the suite's tests") }
        if outcome.run.status != 0 && outcome.results.count < listed.count {
            XCTFail("the suite stopped early (\(outcome.run.summary.suffix(2000)))")
        }
        // What its wall-clock limits (keychain-swift's ConcurrencyTests waits
        // 30 s) had to spare beside make test's other workers (--heavy).
        if let slowest = outcome.seconds.max(by: { $0.value < $1.value }) {
            let total = outcome.seconds.values.reduce(0, +)
            print("\(library.library.name): \(outcome.results.count) tests in \(String(format: "%.1f", total)) s, "
                  + "the slowest \(slowest.key) in \(String(format: "%.1f", slowest.value)) s")
        }
    }

    /// Builds the package under its lock: after make test's debug build
    /// (which built it ahead: CompatAcceptanceBuild), SwiftPM finds nothing
    /// to do; a build that failed there fails here again, with its errors.
    /// Once a class: the package holds all three libraries, so each test's
    /// build was the same command, and a SwiftPM run that finds nothing to
    /// do still plans the package (about a CPU-second each; issue 38).
    /// Each test still checks the outcome.
    private func buildPackage(_ package: CompatPackage) throws -> RunResult {
        if let built = Self.built { return built }
        let lock = try package.lock()
        defer { close(lock) }
        let command = try package.prepare(CompatPackage.libraries)
        let built = Spawn.run(command.swift, command.arguments, environment: ProcessInfo.processInfo.environment, input: .devNull, timeout: 850)
        Self.built = built
        return built
    }

    /// The package's build, made by the class's first test (XCTest runs a class's tests one after another).
    nonisolated(unsafe) private static var built: RunResult?

    struct Outcome {
        var listed: [String]
        /// "passed", "failed" or "skipped" by `Class.test`.
        var results: [String: String]
        /// Each test's wall time as XCTest gave it, by `Class.test`.
        var seconds: [String: Double]
        var run: RunResult

        /// The lines of the run that name `test`'s failures.
        func failures(of test: String) -> String {
            let name = test.split(separator: ".").last.map(String.init) ?? test
            return run.out.split(separator: "\n").filter { $0.contains(": error: ") && $0.contains(name) }.joined(separator: "\n")
        }
    }

    /// Runs `library`'s suite in a host of its own (the test program linked
    /// into a folder with the app's Info.plist) against a new keychain.
    private func run(_ library: Case, _ package: CompatPackage) throws -> Outcome {
        let files = FileManager.default
        let host = package.directory + "/hosts/" + library.library.name
        try files.createDirectory(atPath: host, withIntermediateDirectories: true)
        let program = host + "/" + library.library.name + "Tests.xctest"
        unlink(program)
        guard Glibc.link(package.testBundle, program) == 0 else { throw UnexpectedOutput("can't link \(package.testBundle) into \(host)") }
        try """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict><key>CFBundleIdentifier</key><string>\(library.bundleIdentifier)</string></dict></plist>

            """.write(toFile: host + "/Info.plist", atomically: true, encoding: .utf8)

        let listing = Spawn.run(program, ["--list-tests"], environment: ProcessInfo.processInfo.environment, input: .devNull, timeout: 60)
        let prefix = library.library.testModule + "."
        // Typed step by step: as one chain the expression took the type checker over a second.
        let lines: [Substring] = listing.out.split(separator: "\n")
        let names: [Substring] = lines.filter { (line: Substring) -> Bool in line.hasPrefix(prefix) }
        let listed: [String] = names.map { (name: Substring) -> String in
            String(name.dropFirst(prefix.count)).replacingOccurrences(of: "/", with: ".")
        }
        let classNames: Set<Substring> = Set(listed.map { (name: String) -> Substring in name.split(separator: ".")[0] })
        let classes: [String] = classNames.sorted().map { (name: Substring) -> String in prefix + name }

        // A keychain on tmpfs where there is one: the suites write thousands of
        // items (keychain-swift's concurrency test), and a sync to disk each
        // time is the disk's speed, not the module's.
        let sandbox = try CompatSandbox()
        defer { sandbox.remove() }
        var environment = sandbox.environment
        try Keychain.create(at: sandbox.loginKeychain, password: try SecureBytes(copying: Array("correct horse".utf8)),
                            kdf: .weakForTests, environment: Environment(environment))
        if let entitlements = library.entitlements {
            let path = sandbox.root + "/host.entitlements"
            try entitlements.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o600)
            environment["LOCKET_ENTITLEMENTS"] = path
        }
        let run = Spawn.run(program, [classes.joined(separator: ",")], environment: environment, input: .devNull, timeout: 600)
        var results: [String: String] = [:], seconds: [String: Double] = [:]
        for line in run.out.split(separator: "\n") where line.hasPrefix("Test Case '") {
            let parts = line.dropFirst("Test Case '".count).split(separator: "'", maxSplits: 1)
            guard parts.count == 2 else { continue }
            for verdict in ["passed", "failed", "skipped"] where parts[1].hasPrefix(" \(verdict) (") {
                results[String(parts[0])] = verdict
                seconds[String(parts[0])] = Double(parts[1].dropFirst(" \(verdict) (".count).prefix(while: { $0 != " " }))
            }
        }
        return Outcome(listed: listed, results: results, seconds: seconds, run: run)
    }
}

/// A private HOME and XDG tree on tmpfs (/dev/shm) where there is one, else in /tmp.
private final class CompatSandbox {
    let root: String
    var loginKeychain: String { root + "/data/locket/login.keychain" }

    init() throws {
        let base = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : "/tmp"
        var template = Array("\(base)/locket-compat.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        root = String(cString: made)
        for dir in ["data", "state", "run"] {
            guard mkdir(root + "/" + dir, 0o700) == 0 else { throw POSIXError(.EIO) }
        }
    }

    /// The sandbox's variables over the process's PATH (the suite runs no tool of the developer's).
    var environment: [String: String] {
        ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": root,
         "XDG_DATA_HOME": root + "/data", "XDG_STATE_HOME": root + "/state", "XDG_RUNTIME_DIR": root + "/run",
         "LOCKET_SESSION": "dir"]
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}
