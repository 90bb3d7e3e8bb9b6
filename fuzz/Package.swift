// swift-tools-version:6.0
// libFuzzer targets (issue 6). Built only by fuzz/run with -sanitize=fuzzer,
// so the main package's release build never sees them.
import PackageDescription

let targets = ["FuzzArguments", "FuzzEntitlements", "FuzzCredential", "FuzzReference", "FuzzRecords", "FuzzMask", "FuzzImports", "FuzzKeyFiles", "FuzzAgent"]

let package = Package(
    name: "locket-fuzz",
    dependencies: [.package(name: "locket", path: "..")],
    targets: [.target(name: "FuzzSupport", path: "Sources/FuzzSupport")] + targets.map { name in
        .executableTarget(name: name, dependencies: [
            "FuzzSupport",
            .product(name: "LocketFuzzTargets", package: "locket"),
        ], path: "Sources/\(name)")
    }
)
