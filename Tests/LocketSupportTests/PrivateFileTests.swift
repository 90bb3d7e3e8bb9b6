import Foundation
import Glibc
import LocketSystem
import XCTest

/// The one private-file type (issue 38 point 3): what it refuses, that it
/// never waits on a FIFO, and that its descriptor is closed on every path.
final class PrivateFileTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        var template = Array((NSTemporaryDirectory() + "/locket-private-file.XXXXXX").utf8CString)
        directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
        super.tearDown()
    }

    /// A new file in the test's directory holding `text`, with `mode`.
    private func file(_ name: String, _ text: String = "secret", mode: mode_t = 0o600) -> String {
        let path = directory + "/" + name
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        XCTAssertEqual(chmod(path, mode), 0)
        return path
    }

    /// The descriptors this process has open.
    private func openDescriptors() -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [])
    }

    private func failure(_ path: String, in directory: Int32 = AT_FDCWD, access: Int32 = O_RDONLY, creating: mode_t? = nil,
                         rule: PrivateFile.Rule) -> PrivateFile.Failure? {
        do {
            _ = try PrivateFile(path, in: directory, access: access, creating: creating, rule: rule)
            return nil
        } catch {
            return error
        }
    }

    func testItReadsThisUsersPrivateFileWhole() throws {
        let path = file("key", "0123456789")
        let file = try PrivateFile(path, rule: .privateFile)
        XCTAssertEqual(file.size, 10)
        let read = try file.closeAfter { file in
            var bytes = [UInt8](repeating: 0, count: 10)
            let n = try bytes.withUnsafeMutableBytes { try file.read(into: $0).get() }
            return String(decoding: bytes[..<n], as: UTF8.self)
        }
        XCTAssertEqual(read, "0123456789")
    }

    func testAGroupOrOtherWritableFileIsRefused() {
        for mode: mode_t in [0o620, 0o602, 0o666] {
            let path = file("open-\(String(mode, radix: 8))", mode: mode)
            XCTAssertEqual(failure(path, rule: .privateFile), .refused(.mode(mode)), String(mode, radix: 8))
            XCTAssertEqual(failure(path, rule: .unwritableFile), .refused(.mode(mode)), String(mode, radix: 8))
        }
        // Readable by others is refused only where nobody else may read it.
        let readable = file("readable", mode: 0o644)
        XCTAssertEqual(failure(readable, rule: .privateFile), .refused(.mode(0o644)))
        XCTAssertNil(failure(readable, rule: .unwritableFile))
        XCTAssertNil(failure(readable, rule: .ownFile))
    }

    func testAnotherUsersFileIsRefused() throws {
        let path: String
        let owner: uid_t
        if geteuid() == 0 {
            // As root (CI): a file given to nobody.
            path = file("theirs")
            owner = 65534
            XCTAssertEqual(chown(path, owner, 65534), 0)
        } else {
            // As a user: root's, which only a rule that lets root own it accepts.
            path = "/etc/passwd"
            owner = 0
        }
        XCTAssertEqual(failure(path, rule: .privateFile), .refused(.owner(owner)))
        XCTAssertEqual(failure(path, rule: .ownFile), .refused(.owner(owner)))
        if owner == 0 {
            XCTAssertNil(failure(path, rule: PrivateFile.Rule(kind: S_IFREG, rootMayOwn: true, ownerOnly: 0o022)))
        } else {
            XCTAssertEqual(failure(path, rule: PrivateFile.Rule(kind: S_IFREG, rootMayOwn: true, ownerOnly: 0o022)), .refused(.owner(owner)))
        }
    }

    func testASymbolicLinkIsNotFollowedUnlessAsked() {
        let target = file("target")
        let link = directory + "/link"
        XCTAssertEqual(symlink(target, link), 0)
        XCTAssertEqual(failure(link, rule: .privateFile), .symbolicLink)
        XCTAssertEqual(failure(link, access: O_RDWR, creating: 0o600, rule: .privateFile), .symbolicLink, "nor when creating")
        XCTAssertEqual(try PrivateFile(link, followingLinks: true, rule: .privateFile).size, 6)
        // A directory through a link is refused the same way.
        let linkedDirectory = directory + "/linked-dir"
        XCTAssertEqual(symlink(directory, linkedDirectory), 0)
        XCTAssertEqual(failure(linkedDirectory, rule: .ownDirectory), .symbolicLink)
    }

    func testAFIFOIsRefusedAtOnceNotWaitedOn() {
        let fifo = directory + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        // No writer and no reader exists: a blocking open would wait forever.
        let started = Date()
        XCTAssertEqual(failure(fifo, rule: .privateFile), .refused(.kind(S_IFIFO)))
        XCTAssertEqual(failure(fifo, access: O_RDWR, rule: .privateFile), .refused(.kind(S_IFIFO)))
        XCTAssertEqual(failure(fifo, access: O_WRONLY | O_APPEND, creating: 0o600, rule: .privateFile), .unreadable(Errno(ENXIO)),
                       "a FIFO nobody reads can't be opened for writing without waiting")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }

    func testKindsAreJudged() throws {
        let path = file("plain")
        XCTAssertEqual(failure(path, rule: .privateDirectory), .refused(.kind(S_IFREG)))
        XCTAssertEqual(chmod(directory, 0o700), 0)
        XCTAssertNil(failure(directory, rule: .privateDirectory))
        XCTAssertEqual(failure(directory, rule: .privateFile), .refused(.kind(S_IFDIR)))
        XCTAssertEqual(chmod(directory, 0o755), 0)
        XCTAssertEqual(failure(directory, rule: .privateDirectory), .refused(.mode(0o755)))
        XCTAssertNil(failure(directory, rule: .ownDirectory))
        XCTAssertEqual(failure(directory + "/missing", rule: .privateFile), .missing)
    }

    func testAFileIsOpenedInADirectoryAndCreatedWithItsMode() throws {
        let dir = try PrivateFile(directory, rule: .ownDirectory)
        let made = try PrivateFile("made", in: dir.descriptor, access: O_RDWR, creating: 0o600, rule: .privateFile)
        XCTAssertEqual(made.status.st_mode & 0o777, 0o600)
        try [UInt8]("abc".utf8).withUnsafeBytes { try made.write($0, at: 0).get() }
        var back = [UInt8](repeating: 0, count: 3)
        XCTAssertTrue(back.withUnsafeMutableBytes { made.readWhole(into: $0) })
        XCTAssertEqual(back, Array("abc".utf8))
        let closed = made.close()
        XCTAssertNoThrow(try closed.get())
        _ = dir.close()
        XCTAssertEqual(try String(contentsOfFile: directory + "/made", encoding: .utf8), "abc")
    }

    func testTheDescriptorIsClosedOnEveryPath() throws {
        struct Thrown: Error {}
        let good = file("good")
        let open = file("open", mode: 0o666)
        let fifo = directory + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let link = directory + "/link"
        XCTAssertEqual(symlink(good, link), 0)
        let before = openDescriptors()
        for _ in 0..<3 {
            // Refused after open: mode, kind, owner (as root, a file given away).
            _ = failure(open, rule: .privateFile)
            _ = failure(fifo, rule: .privateFile)
            _ = failure(good, rule: .privateDirectory)
            _ = failure(link, rule: .privateFile)
            // Opened: closed by close(), by closeAfter when the body returns and when it throws, and when dropped.
            _ = try PrivateFile(good, rule: .privateFile).close()
            XCTAssertEqual(try PrivateFile(good, rule: .privateFile).closeAfter { $0.size }, 6)
            XCTAssertThrowsError(try PrivateFile(good, rule: .privateFile).closeAfter { _ throws(Thrown) in throw Thrown() })
            do {
                let dropped = try PrivateFile(good, rule: .privateFile)
                XCTAssertGreaterThan(dropped.descriptor, 2)
            }
            func opened() throws(PrivateFile.Failure) -> Int {
                let file = try PrivateFile(good, rule: .privateFile)
                return file.size
            }
            XCTAssertEqual(try opened(), 6)
        }
        XCTAssertEqual(openDescriptors(), before, "a descriptor was left open")
    }
}
