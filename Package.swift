// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "locket",
    products: [
        .executable(name: "locket", targets: ["locket"]),
        .library(name: "LocketCore", targets: ["LocketCore"]),
        .library(name: "LocketCLI", targets: ["LocketCLI"]),
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // What Swift cannot call directly: variadic syscall(2) for the kernel keyring,
        // SQLite's SQLITE_TRANSIENT sentinel, termios password prompts, prctl.
        .target(name: "CLocketShim"),
        .target(name: "LocketCore", dependencies: ["CSodium", "CSQLite", "CLocketShim"]),
        .target(name: "LocketCLI", dependencies: ["LocketCore", "CLocketShim"]),
        .executableTarget(name: "locket", dependencies: ["LocketCLI"]),
        .testTarget(name: "LocketCoreTests", dependencies: ["LocketCore", "CSQLite"]),
        .testTarget(name: "LocketCLITests", dependencies: ["LocketCLI", "LocketCore"]),
    ]
)
