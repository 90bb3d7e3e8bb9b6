import Foundation
@testable import LocketCore
import LocketSystem
import XCTest

/// The files replaced whole outside the keychain that must survive a power
/// loss (a remote device's trust record, the offline cache): the new file is
/// synced before its rename and the directory after, so the name never ends
/// up on an empty or missing file (issue 30's noticed gap). The session's
/// files live in memory and are not synced.
final class DurableWriteTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "locket-durable-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        XCTAssertEqual(mkdir(directory, 0o700), 0)
    }

    override func tearDown() {
        systemCallFailureTestHook = nil
        try? FileManager.default.removeItem(atPath: directory)
        super.tearDown()
    }

    /// The calls made through the wrapper while `body` runs, by name.
    private func calls(_ body: () throws -> Void) rethrows -> [String] {
        nonisolated(unsafe) var names: [String] = []
        systemCallFailureTestHook = { name in names.append("\(name)"); return nil }
        defer { systemCallFailureTestHook = nil }
        try body()
        return names.filter { ["fsync", "renameat", "open"].contains($0) }
    }

    func testAReplacedFileIsSyncedBeforeItsRenameAndItsDirectoryAfter() throws {
        let path = directory + "/remote-1.trust"
        let names = try calls { try [UInt8]("new".utf8).withUnsafeBytes { try FileIO.writeAtomically(path, $0) } }
        XCTAssertEqual(names, ["fsync", "renameat", "open", "fsync"], "the file, the rename, then its directory")
        XCTAssertEqual(try FileIO.readSmall(path, limit: 16), Array("new".utf8))
    }

    func testAFailedSyncLeavesTheOldFile() throws {
        let path = directory + "/offline.cache"
        try [UInt8]("old".utf8).withUnsafeBytes { try FileIO.writeAtomically(path, $0) }
        systemCallFailureTestHook = { "\($0)" == "fsync" ? EIO : nil }
        XCTAssertThrowsError(try [UInt8]("new".utf8).withUnsafeBytes { try FileIO.writeAtomically(path, $0) })
        systemCallFailureTestHook = nil
        XCTAssertEqual(try FileIO.readSmall(path, limit: 16), Array("old".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), ["offline.cache"], "a temporary file was left")
    }

    func testASessionFileInMemoryIsNotSynced() throws {
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(dir) }
        let names = try calls {
            try [UInt8]("s".utf8).withUnsafeBytes { try FileIO.writeAtomically("slot", in: dir, $0, path: directory + "/slot", durable: false) }
        }
        XCTAssertEqual(names, ["renameat"])
    }
}
