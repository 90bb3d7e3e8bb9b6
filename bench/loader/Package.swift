// swift-tools-version:6.0
// Bulk loader for the benchmarks (issue 7): fills a keychain through
// Keychain.addBatch, ~10 k items per transaction. Built only by bench/run.
import PackageDescription

let package = Package(
    name: "locket-bench-loader",
    dependencies: [.package(name: "locket", path: "../..")],
    targets: [
        .executableTarget(name: "locket-bench-load", dependencies: [
            .product(name: "LocketCore", package: "locket"),
        ], path: "Sources/locket-bench-load"),
    ]
)
