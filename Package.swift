// swift-tools-version:6.0
import PackageDescription

// No unsafeFlags here: a package that depends on locket by version
// (`.package(url:from:)`) is refused any (SPEC §19). The compiler flags the
// release executables need for their start-up (the metadata accessors of
// issue 7, the static link, the order file) are given by the Makefile's
// build commands (RELEASE_FLAGS), and debug builds' line tables only by
// make test's (DEBUG_FLAGS).

let package = Package(
    name: "locket",
    products: [
        .executable(name: "locket", targets: ["locket"]),
        .library(name: "LocketCore", targets: ["LocketCore"]),
        .library(name: "LocketCLI", targets: ["LocketCLI", "LocketCLIBackends"]),
        .library(name: "LocketSupport", targets: ["LocketSupport"]),
        // The PostgreSQL helper (SPEC §17): libpq can't go into the static
        // `locket`, so remote keychains talk to it through a socket pair.
        .executable(name: "locket-postgres", targets: ["locket-postgres"]),
        // The TPM helper (SPEC §21): libtss2 is shared-only on Debian, so
        // Secure Enclave keys and TPM-bound keychains go through it.
        .executable(name: "locket-tpm", targets: ["locket-tpm"]),
        // The Secret Service provider (SPEC §18): libdbus-1 only ever in its
        // own process, so `find` pays nothing for it.
        .executable(name: "locket-secret-service", targets: ["locket-secret-service"]),
        // What each fuzz target does with one input, for fuzz/ and the tests.
        .library(name: "LocketFuzzTargets", targets: ["LocketFuzzTargets"]),
        // Apple's keychain API for Swift on Linux (SPEC §19): modules
        // `Security` and `LocalAuthentication` (its LAContext). A package
        // that also builds on Apple's platforms depends on it only on Linux:
        // .product(name: "Security", package: "locket", condition: .when(platforms: [.linux]))
        .library(name: "Security", targets: ["Security", "LocalAuthentication"]),
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // OpenSSL's libcrypto: X.509, PKCS#12, RSA and NIST curves (SPEC §1, §12).
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // What Swift cannot call directly, split by what may see it (the
        // layering table LayeringTests checks):
        // CLocketSystem holds variadic syscall(2) for the kernel keyring, prctl
        // and rlimit, termios password prompts, execvpe, pipe2 and signal
        // forwarding, and never includes sqlite3.h; CLocketSQLite holds SQLite's
        // SQLITE_TRANSIENT sentinel and the "locket" VFS, for the engine only.
        .target(name: "CLocketSystem"),
        .target(name: "CLocketSQLite"),
        // The one system-call wrapper (errno read once, EINTR retried once, a
        // typed Errno, a failure hook for tests) and the one spawner. Glibc
        // only: the PostgreSQL helper's wire protocol uses it too.
        .target(name: "LocketSystem"),
        // Bytes and small system helpers both layers use: hex, big-endian
        // integers, percent-encoding, base64, the clock, wipe; LocketSystem re-exported.
        .target(name: "LocketSupport", dependencies: ["CSodium", "LocketSystem"]),
        // libpq, for the helper only: Debian ships no static libpgcommon/libpgport
        // and libpq needs GSSAPI and LDAP, so it is linked dynamically there.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // The frames `locket` and `locket-postgres` exchange; Glibc and LocketSystem only.
        .target(name: "LocketWire", dependencies: ["LocketSystem"]),
        .executableTarget(name: "locket-postgres", dependencies: ["LocketWire", "CLibPQ"]),
        // The TPM helper (SPEC §21): Debian ships libtss2 as shared libraries
        // only, so ESAPI, the TCTI loader and the marshalling are linked into
        // locket-tpm alone (CLocketTPM: the TSS calls, in C), never into `locket`.
        .target(name: "CLocketTPM", linkerSettings: [.linkedLibrary("tss2-esys"), .linkedLibrary("tss2-tctildr"),
                                                     .linkedLibrary("tss2-mu"), .linkedLibrary("tss2-rc"),
                                                     .linkedLibrary("tss2-sys")]),
        .executableTarget(name: "locket-tpm", dependencies: ["LocketWire", "CLocketTPM"]),
        // libdbus-1 (its static archive) for the Secret Service provider, and
        // the two libsystemd functions that archive calls (CLocketDBus).
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .target(name: "CLocketDBus"),
        .target(name: "LocketSecretService", dependencies: ["LocketCore", "LocketSupport", "CDBus", "CLocketDBus", "CCrypto", "CLocketSystem"]),
        .executableTarget(name: "locket-secret-service", dependencies: ["LocketSecretService"]),
        .target(name: "LocketCore", dependencies: ["LocketSupport", "CSodium", "CSQLite", "CCrypto", "CLocketSQLite", "CLocketSystem", "LocketWire"],
                // The formats' documents live next to their code (the man page is made from them).
                exclude: ["Backup/BackupFormat.md", "Migration/Migration.md"]),
        // Asking at the controlling terminal (a no-echo password, the proofs of
        // access control): what the command line and the Security module share.
        // Keychains in PostgreSQL (SPEC §17): a module of its own over the
        // engine, which opens to it only what it declares `package`; the
        // engine can't name it. Its administration is `Keychain.remote`.
        .target(name: "LocketRemote", dependencies: ["LocketCore", "LocketSupport", "LocketWire", "CSodium"]),
        // "Which keychain": a path, a NAME, a URL or a registered remote,
        // opened by the storage it names; the one module that knows every storage.
        .target(name: "LocketLocator", dependencies: ["LocketCore", "LocketRemote", "LocketSupport"]),
        .target(name: "LocketTerminal", dependencies: ["LocketCore", "LocketSupport", "CLocketSystem"]),
        // The command line names no backend: which keychain `-k` names, and
        // what only a remote keychain has, it reaches through `Backends`,
        // which LocketCLIBackends makes (the locator, the remote commands),
        // so that it compiles beside LocketRemote and LocketLocator, not
        // after them: it is on make test's debug build's critical path (issue 38).
        .target(name: "LocketCLI", dependencies: ["LocketCore", "LocketSupport", "LocketTerminal", "CLocketSystem"]),
        .target(name: "LocketCLIBackends", dependencies: ["LocketCLI", "LocketCore", "LocketLocator", "LocketRemote", "LocketSupport"]),
        .executableTarget(name: "locket", dependencies: ["LocketCLI", "LocketCLIBackends"]),
        // SPEC §19: Apple's SecItem/SecKey/SecCertificate API over the engine,
        // Foundation's types standing in for Core Foundation's. Never in `locket`.
        // LocalAuthentication asks the engine whether presence can be proven here (canEvaluatePolicy).
        .target(name: "LocalAuthentication", dependencies: ["LocketCore", "LocketLocator", "LocketTerminal"]),
        .target(name: "Security", dependencies: ["LocketCore", "LocketLocator", "LocketSupport", "LocketTerminal", "LocalAuthentication", "CLocketSystem"]),
        // Test only: `locket ssh-agent` over keys in a directory, for the agent's
        // end-to-end tests until the keychain holds keys (issue 13).
        .executableTarget(name: "LocketAgentTestHost", dependencies: ["LocketCLI", "LocketCLIBackends", "LocketCore"], path: "Tests/AgentTestHost"),
        // What the test targets share (issue 12): the one process runner, the
        // sandbox, the in-process CLI runner. Not a product; never in `locket`.
        // Through LocketCLIBackends the test modules build after LocketCLI
        // (and its backends): LocketCLI is on the debug build's critical
        // path (then LocketCLITests, whose runner needs `Backends.all`), and llbuild,
        // which has no priorities, would otherwise compile LocketCoreTests
        // beside it and delay it (issue 38).
        .target(name: "LocketTestSupport", dependencies: ["LocketCLI", "LocketCLIBackends", "LocketCore", "LocketRemote", "LocketSystem", "CSQLite"],
                path: "Tests/LocketTestSupport"),
        // The fuzz targets' bodies: fuzz/run drives them with libFuzzer and
        // ASan; LocketCLITests replays every seed of fuzz/corpus through them.
        .target(name: "LocketFuzzTargets", dependencies: ["LocketCLI", "LocketCore"], path: "Tests/FuzzTargets"),
        .testTarget(name: "LocketCoreTests", dependencies: ["LocketCore", "LocketRemote", "LocketLocator", "LocketSupport", "LocketTestSupport", "LocketWire"]),
        .testTarget(name: "LocketSupportTests", dependencies: ["LocketSupport", "LocketSystem"]),
        .testTarget(name: "LocketCLITests", dependencies: ["LocketCLI", "LocketCLIBackends", "LocketCore", "LocketRemote", "LocketLocator", "LocketTestSupport", "LocketFuzzTargets",
                                                     "LocketSecretService"]),
        // Test only: a program using the Security module, for tests that need
        // one in a process of its own (beside the CLI, at a real terminal).
        .executableTarget(name: "SecurityTestHost", dependencies: ["Security"], path: "Tests/SecurityTestHost"),
        // make bench: in-process SecItemCopyMatching rate and memory (SPEC §19).
        .executableTarget(name: "locket-bench-secitem", dependencies: ["Security", "LocketCore"], path: "bench/SecItemBench"),
        // Test only: the acceptance package of shared/compat's libraries
        // (CompatAcceptanceTests), and the program make test's debug build
        // runs to build it beside the test bundle's build (Makefile BUILD_TESTS).
        .target(name: "CompatAcceptancePackage", path: "Tests/CompatAcceptancePackage"),
        // It links the engine it does not import (Security), so that its one
        // `swift build` call builds the engine, and its link list is the one
        // the package links the engine's objects from.
        .executableTarget(name: "CompatAcceptanceBuild", dependencies: ["CompatAcceptancePackage", "Security"], path: "Tests/CompatAcceptanceBuild"),
        .testTarget(name: "SecurityTests", dependencies: ["Security", "LocalAuthentication", "LocketCore", "LocketLocator", "LocketTestSupport",
                                                    "CompatAcceptancePackage"]),
    ]
)
