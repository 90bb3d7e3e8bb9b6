import Foundation
import LocketCore
import XCTest

/// A test with TPMs (swtpm on loopback, `SoftwareTPM`) and clients of them
/// through the helper under test. Skips, naming what to install, where
/// swtpm or the helper is missing.
///
/// A class's tests share its TPMs (`sharedTPM`), started by the first test
/// that asks and stopped after the class's last: make test runs these
/// classes a class per process (`--by-class` in the Makefile). What a test
/// leaves in a shared TPM must not matter to the next: its helpers are
/// closed after it (nothing stays loaded), and a test that kills, hangs or
/// locks out its TPM, or counts from a fresh one, takes one of its own
/// (`softwareTPM`).
class TPMTestCase: XCTestCase {
    private var started: [SoftwareTPM] = []
    private var clients: [TPMClient] = []
    /// A private directory for the files openssl reads and writes.
    private(set) var fixture: KeysFixture!
    /// Each class's shared TPMs, by class and index (one process runs one class, or under swift test all of them).
    nonisolated(unsafe) private static var shared: [ObjectIdentifier: [Int: Result<SoftwareTPM, Error>]] = [:]

    override func setUpWithError() throws {
        fixture = try KeysFixture()
    }

    override func tearDown() {
        for client in clients { client.close() }
        clients = []
        for tpm in started { tpm.stop() }
        started = []
        fixture = nil
    }

    override class func tearDown() {
        for case .success(let tpm) in (shared.removeValue(forKey: ObjectIdentifier(self)) ?? [:]).values { tpm.stop() }
        super.tearDown()
    }

    /// A new TPM of this test's own (its own seeds: another device than any other).
    func softwareTPM() throws -> SoftwareTPM {
        let tpm = try Self.start()
        started.append(tpm)
        return tpm
    }

    /// The class's TPM number `index` (0, or 1 for another device), started
    /// by the first test that asks; a skip for every test if it can't be.
    func sharedTPM(_ index: Int = 0) throws -> SoftwareTPM {
        let key = ObjectIdentifier(Self.self)
        if Self.shared[key, default: [:]][index] == nil {
            Self.shared[key, default: [:]][index] = Result { try Self.start() }
        }
        return try Self.shared[key]![index]!.get()
    }

    private static func start() throws -> SoftwareTPM {
        do {
            return try SoftwareTPM()
        } catch let unavailable as TestUnavailable {
            throw XCTSkip(unavailable.reason)
        }
    }

    func helperPath() throws -> String {
        do { return try SoftwareTPM.helperPath() } catch let unavailable as TestUnavailable { throw XCTSkip(unavailable.reason) }
    }

    /// A client of `tpm`, as `locket` would make one from `LOCKET_TPM`.
    func client(_ tpm: SoftwareTPM, timeout: Double = 20) throws -> TPMClient {
        let environment = Environment(["LOCKET_TPM": tpm.tcti])
        let client = try TPMClient(environment: environment, helper: try helperPath(), timeout: timeout)
        clients.append(client)
        return client
    }

    /// Runs one of tpm2-tools against `tpm` (the test then lets go of it:
    /// swtpm serves one connection at a time); a skip where they are missing.
    @discardableResult
    func tpm2Tool(_ name: String, _ arguments: [String], on tpm: SoftwareTPM) throws -> ToolResult {
        guard Tools.find(name) != nil else {
            throw XCTSkip("\(name) is not installed (Debian package tpm2-tools; make test-deps installs it)")
        }
        return try Tools.must(name, arguments, environment: ["TPM2TOOLS_TCTI": tpm.tcti])
    }

    func password(_ text: String) throws -> TPMAuthorization {
        try TPMAuthorization(password: try SecureBytes(copying: Array(text.utf8)))
    }

    /// Writes `bytes` to a file of the fixture's directory; its path.
    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) -> String {
        let path = fixture.dir + "/" + name
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
        return path
    }

    func read(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: fixture.dir + "/" + name)))
    }

    /// Whether process `pid` is gone (reaped: kill(2) finds no such process).
    func isGone(_ pid: pid_t) -> Bool { kill(pid, 0) != 0 && errno == ESRCH }
}
