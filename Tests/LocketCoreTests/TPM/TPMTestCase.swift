import Foundation
import LocketCore
import XCTest

/// A test with TPMs of its own (swtpm on loopback, `SoftwareTPM`) and
/// clients of them through the helper under test. Skips, naming what to
/// install, where swtpm or the helper is missing.
class TPMTestCase: XCTestCase {
    private var started: [SoftwareTPM] = []
    private var clients: [TPMClient] = []
    /// A private directory for the files openssl reads and writes.
    private(set) var fixture: KeysFixture!

    override func setUpWithError() throws {
        fixture = try KeysFixture()
    }

    override func tearDown() {
        for client in clients { client.close() }
        for tpm in started { tpm.stop() }
        fixture = nil
    }

    /// A new TPM (its own seeds: another device than any other).
    func softwareTPM() throws -> SoftwareTPM {
        do {
            let tpm = try SoftwareTPM()
            started.append(tpm)
            return tpm
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
