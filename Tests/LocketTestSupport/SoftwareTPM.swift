import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TPM 2.0 of the test's own (SPEC §21): Debian's swtpm on loopback, with
/// a private state directory and free ports, started powered on (Startup
/// CLEAR sent by swtpm itself), stopped and removed when the fixture goes.
/// Every instance has its own seeds: a second one is another TPM.
public final class SoftwareTPM {
    /// The command port (the control channel is the next one, as tpm2-tss's swtpm TCTI expects).
    public let port: Int
    public let stateDirectory: String
    public let process: BackgroundProcess
    private var stopped = false

    /// The TCTI configuration for LOCKET_TPM, TPM2OPENSSL_TCTI and TPM2TOOLS_TCTI.
    public var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }
    public var pid: pid_t { process.pid }

    /// Debian's swtpm (`make test-deps` installs it); a skip where it is missing.
    public static func executable() throws -> String {
        guard let path = executableOnPath("swtpm") else {
            throw TestUnavailable("swtpm is not installed (Debian package swtpm; make test-deps installs it)")
        }
        return path
    }

    /// The helper under test: LOCKET_TPM_HELPER (make test sets the release
    /// build's), else the one built beside this test bundle.
    public static func helperPath() throws -> String {
        if let path = ProcessInfo.processInfo.environment["LOCKET_TPM_HELPER"], !path.isEmpty { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent("locket-tpm").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw TestUnavailable("locket-tpm is not built next to the tests: run `swift build --product locket-tpm` (make test does)")
    }

    public init() throws {
        let swtpm = try Self.executable()
        stateDirectory = NSTemporaryDirectory() + "locket-swtpm-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Two adjacent free ports; another process may take one between the
        // probe and swtpm's bind, so a failed start is tried again on others.
        var attempt = 0
        while true {
            attempt += 1
            let port = try Self.freePortPair()
            let process = try BackgroundProcess(swtpm, [
                "socket", "--tpm2", "--tpmstate", "dir=\(stateDirectory)",
                "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                "--flags", "not-need-init,startup-clear",
            ], environment: ["PATH": "/usr/bin:/bin"])
            if Loopback.waitForListener(port: port, timeout: 10) && !process.hasExited {
                self.port = port
                self.process = process
                return
            }
            process.terminate()
            if attempt == 3 {
                try? FileManager.default.removeItem(atPath: stateDirectory)
                throw TestUnavailable("swtpm did not start on 127.0.0.1:\(port): \(process.err)")
            }
        }
    }

    deinit { stop() }

    /// Kills swtpm (SIGKILL: as a TPM that vanishes) and removes its state.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        kill(process.pid, SIGCONT)
        process.terminate()
        try? FileManager.default.removeItem(atPath: stateDirectory)
    }

    /// Stops answering without closing its socket (SIGSTOP), as a TPM that hangs.
    public func pause() { kill(process.pid, SIGSTOP) }
    public func resume() { kill(process.pid, SIGCONT) }

    private static func freePortPair() throws -> Int {
        for _ in 0..<20 {
            let port = try Loopback.freePort()
            guard port < 65535 else { continue }
            if let next = try? bindable(port + 1), next { return port }
        }
        throw TestUnavailable("no two adjacent free ports on 127.0.0.1")
    }

    private static func bindable(_ port: Int) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
