import Foundation
import Glibc

/// The package the acceptance suite generates (SPEC §19, issue 37): the
/// libraries of `shared/compat/` as their authors published them, each a
/// target whose files are the originals (a symbolic link to their folder:
/// nothing copied, nothing changed), and their own XCTest suites. Its
/// manifest is what a user writes, plus the one line docs/SECURITY-MODULE.md
/// gives for code that imports only Foundation (or XCTest) and uses the
/// Security names.
///
/// It is built against the engine this test run's debug build already made:
/// the Security module's interfaces from its `Modules` directory and the
/// objects SwiftPM linked into `CompatAcceptanceBuild` (which depends on the
/// Security module for that), given on the command line. So the acceptance suite
/// compiles the three libraries and their tests, never the engine again.
///
/// Its own target (Glibc and Foundation only), so that make test's debug
/// build can build the package ahead (`CompatAcceptanceBuild`, started as
/// soon as it is linked, beside the test bundle's build) and
/// `CompatAcceptanceTests` finds it built: its own build call is then
/// SwiftPM finding nothing to do.
public struct CompatPackage {
    /// One library of `shared/compat/`.
    public struct Library: Sendable {
        public var name: String
        /// The folder under `shared/compat/`.
        public var folder: String
        public var sources: String
        public var sourceExcludes: [String]
        public var tests: String
        public var testExcludes: [String]
        /// Its targets use Security names with only Foundation or XCTest imported.
        public var implicitSecurity: (library: Bool, tests: Bool)
        public var testModule: String { name + "Tests" }
    }

    /// Why there is nothing to build on this checkout.
    public static let unavailable = "no shared/compat beside the repository (or LOCKET_COMPAT_DIR)"

    /// This checkout (the directory above Tests/).
    public static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // CompatAcceptancePackage, Tests, file
        return url.path
    }()

    /// Where the libraries are: `shared/compat/` beside the repository or
    /// above it (a clone next to `shared`, or a worktree under it), or
    /// LOCKET_COMPAT_DIR.
    public static func compatDirectory(from root: String) -> String? {
        if let given = ProcessInfo.processInfo.environment["LOCKET_COMPAT_DIR"], !given.isEmpty { return given }
        var url = URL(fileURLWithPath: root)
        while url.path != "/" {
            url.deleteLastPathComponent()
            let candidate = url.appendingPathComponent("shared/compat").path
            if FileManager.default.fileExists(atPath: candidate + "/README.md") { return candidate }
        }
        return nil
    }

    public let root: String
    public let compat: String
    /// The debug build's bin path (where the test bundle and SecurityTestHost are).
    public let bin: String
    public var directory: String { root + "/.build/compat-acceptance" }
    public var packageDirectory: String { directory + "/package" }
    public var scratch: String { directory + "/build" }
    public var testBundle: String { scratch + "/debug/CompatAcceptancePackageTests.xctest" }
    /// SwiftPM's list of what it linked into CompatAcceptanceBuild: the engine's objects.
    public var engineLinkList: String { bin + "/CompatAcceptanceBuild.product/Objects.LinkFileList" }

    public init(root: String, compat: String, bin: String) {
        self.root = root
        self.compat = compat
        self.bin = bin
    }

    /// A failure to set the package up (a file that can't be written or read).
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The build: `swift` and its arguments, run in the caller's environment.
    public struct Command: Sendable {
        public var swift: String
        public var arguments: [String]
    }

    /// The manifest: what a user of the libraries writes, and the one line
    /// (`implicitSecurity`) for code that reads the Security names through Foundation.
    public func manifest(_ libraries: [Library]) -> String {
        func list(_ items: [String]) -> String { "[" + items.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }
        var targets: [String] = []
        for library in libraries {
            let settings = { (implicit: Bool) in implicit ? ", swiftSettings: securityThroughFoundation" : "" }
            targets.append("""
                    .target(name: "\(library.name)", path: "Sources/\(library.name)", exclude: \(list(library.sourceExcludes))\(settings(library.implicitSecurity.library))),
                    .testTarget(name: "\(library.testModule)", dependencies: ["\(library.name)"], path: "Tests/\(library.testModule)",
                                exclude: \(list(library.testExcludes))\(settings(library.implicitSecurity.tests))),
                """)
        }
        return """
            // swift-tools-version:5.9
            import PackageDescription

            // docs/SECURITY-MODULE.md: code that imports Foundation (or XCTest) and uses the Security names.
            let securityThroughFoundation: [SwiftSetting] = [.unsafeFlags(["-Xfrontend", "-import-module", "-Xfrontend", "Security"], .when(platforms: [.linux]))]

            let package = Package(
                name: "CompatAcceptance",
                targets: [
            \(targets.joined(separator: "\n"))
                ]
            )

            """
    }

    /// Takes the package's lock (several tests may build at once, and make
    /// test's build ahead of them): a descriptor to close when done. Kept
    /// across exec when the build replaces the process that took it.
    public func lock(acrossExec: Bool = false) throws -> Int32 {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let lock = open(directory + "/lock", O_RDWR | O_CREAT | (acrossExec ? 0 : O_CLOEXEC), 0o600)
        guard lock >= 0 else { throw Failure(description: "can't open \(directory)/lock") }
        while flock(lock, LOCK_EX) != 0 && errno == EINTR {}
        return lock
    }

    /// Writes the package (links to the libraries' folders) and returns the
    /// command that builds it. Under the lock.
    public func prepare(_ libraries: [Library]) throws -> Command {
        let files = FileManager.default
        try files.createDirectory(atPath: packageDirectory + "/Sources", withIntermediateDirectories: true)
        try files.createDirectory(atPath: packageDirectory + "/Tests", withIntermediateDirectories: true)
        for library in libraries {
            try link(packageDirectory + "/Sources/" + library.name, to: compat + "/" + library.folder + "/" + library.sources)
            try link(packageDirectory + "/Tests/" + library.testModule, to: compat + "/" + library.folder + "/" + library.tests)
        }
        let manifest = manifest(libraries)
        if (try? String(contentsOfFile: packageDirectory + "/Package.swift", encoding: .utf8)) != manifest {
            try manifest.write(toFile: packageDirectory + "/Package.swift", atomically: true, encoding: .utf8)
        }
        let objects = try engineObjects()
        let list = directory + "/engine.LinkFileList"
        let listed = objects.map { "\"\($0)\"" }.joined(separator: "\n") + "\n"
        if (try? String(contentsOfFile: list, encoding: .utf8)) != listed { try listed.write(toFile: list, atomically: true, encoding: .utf8) }
        // SwiftPM does not see the engine's objects as inputs: a test bundle
        // older than any of them is linked again.
        let bundleTime = modificationTime(testBundle)
        if bundleTime == nil || objects.contains(where: { (modificationTime($0) ?? 0) > bundleTime! }) { unlink(testBundle) }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        guard let swift = path.split(separator: ":").map({ "\($0)/swift" }).first(where: files.isExecutableFile(atPath:)) else {
            throw Failure(description: "no swift on PATH")
        }
        // As make test builds its own (the Makefile's DEBUG_FLAGS): no debug
        // information, each module by one frontend, the index store (SwiftPM finds the
        // tests through it) without the system modules. The Clang modules
        // (Glibc, Foundation's, the engine's C modules) from the debug build's
        // module cache, not built again for this package: 20 CPU-s instead of
        // 29 (issue 38).
        let cores = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return Command(swift: swift, arguments: ["build", "--build-tests", "--package-path", packageDirectory, "--scratch-path", scratch,
                                 "-Xswiftc", "-gnone", "-Xswiftc", "-wmo", "-Xswiftc", "-num-threads", "-Xswiftc", "\(cores)",
                                 "-Xswiftc", "-index-ignore-system-modules",
                                 "-Xswiftc", "-module-cache-path", "-Xswiftc", bin + "/ModuleCache"]
                                + engineFlags(list: list))
    }

    /// The engine's objects as SwiftPM linked them into CompatAcceptanceBuild, without the program's own.
    func engineObjects() throws -> [String] {
        let text = try String(contentsOfFile: engineLinkList, encoding: .utf8)
        return text.split(separator: "\n").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"' ")) }
            .filter { !$0.isEmpty && !$0.contains("/CompatAcceptanceBuild.build/") && !$0.contains("/CompatAcceptancePackage.build/") }
    }

    /// The flags that find the engine's modules (Swift and C) and link its objects.
    func engineFlags(list: String) -> [String] {
        var flags = ["-Xswiftc", "-I", "-Xswiftc", bin + "/Modules"]
        let files = FileManager.default
        for target in (try? files.contentsOfDirectory(atPath: root + "/Sources"))?.sorted() ?? [] {
            let generated = bin + "/" + target + ".build/module.modulemap"
            let own = root + "/Sources/" + target + "/module.modulemap"
            if files.fileExists(atPath: generated) {
                flags += ["-Xcc", "-fmodule-map-file=" + generated, "-Xcc", "-I", "-Xcc", root + "/Sources/" + target + "/include"]
            } else if files.fileExists(atPath: own) {
                flags += ["-Xcc", "-fmodule-map-file=" + own]
            }
        }
        flags += ["-Xlinker", "@" + list]
        for library in ["sodium", "crypto", "sqlite3"] { flags += ["-Xlinker", "-l" + library] }
        return flags
    }

    private func link(_ path: String, to target: String) throws {
        if let existing = try? FileManager.default.destinationOfSymbolicLink(atPath: path), existing == target { return }
        unlink(path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
    }

    private func modificationTime(_ path: String) -> Double? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
    }
}
