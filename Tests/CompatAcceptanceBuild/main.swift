// Test only: builds the acceptance package of shared/compat's libraries
// (CompatPackage) ahead of the tests, linking the engine's objects from its
// own link list. make test's debug build starts it as soon as it is
// linked, beside the test bundle's build (which
// leaves part of the machine's cores idle), so that CompatAcceptanceTests
// finds the package built: its own build call, under the same lock, is then
// SwiftPM finding nothing to do, and a failed build fails it the same way
// again, with the compiler's errors. Exit status: SwiftPM's; 0 with the
// reason on stdout when there is nothing to build here (the test skips).
import CompatAcceptancePackage
import Foundation
import Glibc

func say(_ line: String, to file: FileHandle = .standardOutput) { file.write(Data((line + "\n").utf8)) }

let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
guard let compat = CompatPackage.compatDirectory(from: CompatPackage.repositoryRoot) else {
    say("skipped: \(CompatPackage.unavailable)")
    exit(0)
}
let package = CompatPackage(root: CompatPackage.repositoryRoot, compat: compat, bin: bin)
guard FileManager.default.fileExists(atPath: package.engineLinkList) else {
    say("skipped: no \(package.engineLinkList) to link the engine from")
    exit(0)
}
do {
    // Held by SwiftPM, which replaces this process, until the build ends.
    _ = try package.lock(acrossExec: true)
    let command = try package.prepare(CompatPackage.libraries)
    say(([command.swift] + command.arguments).joined(separator: " "))
    let argv = ([command.swift] + command.arguments).map { strdup($0) } + [nil]
    execv(command.swift, argv)
    perror(command.swift)
    exit(127)
} catch {
    say("\(error)", to: .standardError)
    exit(1)
}
