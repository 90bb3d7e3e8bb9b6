import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §11: a read-only command writes nothing to the keychain's files
/// (issue 12 item 5). Counted with strace: every system call that writes,
/// truncates, syncs, creates or removes, on the keychain or a companion.
final class ReadPathEndToEndTests: EndToEndCase {
    private var keychain: String { sandbox.loginKeychain }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "svc", "-a", "acct", secret: "secret-one")
        add("-s", "other", "-a", "acct", "-j", "note", secret: "secret-two")
    }

    /// The write-type system calls `locket ARGS` made on the keychain's
    /// files (strace -y names each descriptor's path).
    private func writesToKeychainFiles(_ arguments: [String], input: Input = .devNull,
                                       file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let strace = try SystemTool.require("strace", for: "counting the system calls of a read-only command")
        let log = sandbox.home + "/strace.log"
        defer { unlink(log) }
        let calls = "write,pwrite64,writev,pwritev,pwritev2,ftruncate,truncate,fsync,fdatasync,fallocate,"
            + "unlink,unlinkat,rename,renameat,renameat2,open,openat,creat,mkdir,link,linkat"
        let result = Spawn.run(strace, ["-f", "-y", "-qq", "-e", "trace=" + calls, "-o", log, binary] + arguments,
                               environment: sandbox.environment, input: input, timeout: Self.timeout)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        return text.split(separator: "\n").map(String.init).filter { call in
            guard call.contains(keychain) else { return false }
            // Opening the file and its WAL to read is fine; creating or truncating is a write.
            if call.contains("open") { return call.contains("O_CREAT") || call.contains("O_TRUNC") }
            return true
        }
    }

    func testFindDumpAndStatusWriteNothing() throws {
        // Start from a keychain at rest: the last write left an empty WAL.
        for arguments in [["find", "-s", "svc", "-a", "acct", "-w"], ["find", "-j", "note"], ["find", "--all"],
                          ["dump"], ["dump", "--data"], ["status"], ["--json", "status"]] {
            let writes = try writesToKeychainFiles(arguments)
            XCTAssertEqual(writes, [], "locket \(arguments.joined(separator: " ")) wrote to the keychain's files")
        }
        // ...and no -shm was made: the WAL's index is in memory.
        XCTAssertFalse(FileManager.default.fileExists(atPath: keychain + "-shm"))
    }

    func testTheCountSeesWrites() throws {
        // The control: a writing command is seen writing, so a zero above means something.
        let writes = try writesToKeychainFiles(["add", "-s", "new", "-a", "acct", "--data-file", "-"], input: .text("s"))
        XCTAssertTrue(writes.contains { $0.contains(" pwrite64(") || $0.contains(" write(") }, "\(writes)")
        XCTAssertTrue(writes.contains { $0.contains(" fsync(") || $0.contains(" fdatasync(") }, "\(writes)")
    }

    /// Writers set journal_size_limit (readers don't: it is one statement
    /// less per `find`): each write leaves the WAL checkpointed and empty,
    /// so the next command has nothing to recover. Empty in place (the VFS
    /// keeps its blocks): a zeroed header, which SQLite reads as no frames,
    /// and nothing after the last command's frames but zeros.
    func testEveryWriteLeavesAnEmptyWAL() throws {
        let wal = keychain + "-wal"
        // A large secret first: more frames than the commands after it write.
        addBytes("-s", "big", "-a", "acct", data: [UInt8](repeating: 0x62, count: 200_000))
        for arguments in [["add", "-s", "w1", "-a", "acct", "--data-file", "-"], ["update", "-s", "w1", "-a", "acct", "--data-file", "-"],
                          ["delete", "-s", "w1", "-a", "acct"], ["delete", "-s", "big", "-a", "acct"]] {
            let result = locket(arguments, input: .text("value"))
            XCTAssertEqual(result.status, 0, result.summary)
            var st = stat()
            XCTAssertEqual(lstat(wal, &st), 0, "the WAL is kept between commands")
            let bytes = try XCTUnwrap(FileManager.default.contents(atPath: wal).map { Array($0) })
            XCTAssertGreaterThan(bytes.count, 32, "locket \(arguments[0]) gave the WAL's blocks back: the next write commits them anew")
            XCTAssertLessThanOrEqual(bytes.count, 1 << 20, "locket \(arguments[0]) left a WAL larger than the VFS keeps")
            XCTAssertEqual(Array(bytes.prefix(32)), [UInt8](repeating: 0, count: min(32, bytes.count)),
                           "locket \(arguments[0]) left a WAL header SQLite would recover frames from")
            // Frames (a 24-byte header and a page each) up to the first zeroed one, then zeros only.
            var offset = 32
            while offset + 24 <= bytes.count && bytes[offset..<offset + 24].contains(where: { $0 != 0 }) { offset += 24 + 4096 }
            XCTAssertFalse(bytes[min(offset, bytes.count)...].contains { $0 != 0 }, "locket \(arguments[0]) left an older command's frames in the WAL")
        }
        XCTAssertEqual(String(decoding: secret("-s", "svc", "-a", "acct"), as: UTF8.self), "secret-one")
        XCTAssertEqual(ReliabilityDatabase.integrity(keychain), "ok")
    }

    /// The tail of zeros one large write leaves behind is zeroed once, by
    /// the write after it: later small writes zero only their header (and
    /// any frames of a larger write just before them), not the whole tail
    /// again, which the next write's first sync then had to flush.
    func testASmallWriteZeroesOnlyTheFramesBeforeIt() throws {
        let wal = keychain + "-wal"
        addBytes("-s", "big", "-a", "acct", data: [UInt8](repeating: 0x62, count: 200_000))
        add("-s", "small-1", "-a", "acct", secret: "one")
        let size = try XCTUnwrap(FileManager.default.contents(atPath: wal)?.count)
        XCTAssertGreaterThan(size, 150_000, "the large write did not grow the WAL")
        let calls = try writesToKeychainFiles(["add", "-s", "small-2", "-a", "acct", "--data-file", "-"], input: .text("two"))
        let mainSync = try XCTUnwrap(calls.lastIndex { $0.contains(keychain + ">") && $0.contains("sync(") }, "\(calls)")
        let emptying = calls[mainSync...].filter { $0.contains(keychain + "-wal>") && $0.contains("write") }
        let zeroed = emptying.compactMap { call in call.split(separator: "=").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
        XCTAssertEqual(zeroed.count, emptying.count, "\(emptying)")
        XCTAssertLessThan(zeroed.reduce(0, +), 32 + 8 * (24 + 4096), "the emptying rewrote the WAL's zero tail: \(emptying)")
        XCTAssertTrue(emptying.first?.contains(", 32, 0)") ?? false, "the header is not zeroed first: \(emptying)")
        XCTAssertEqual(String(decoding: secret("-s", "small-2", "-a", "acct"), as: UTF8.self), "two")
        XCTAssertEqual(ReliabilityDatabase.integrity(keychain), "ok")
    }

    /// SPEC §7: an acknowledged write is on disk. The order a write's system
    /// calls must keep: every frame synced before the checkpoint writes the
    /// database, the database synced after its last write, and the WAL
    /// emptied only after that. Three syncs in all (the WAL's header, the
    /// commit, the database): the VFS skips the checkpoint's second sync of
    /// a WAL nothing was written to since the commit's.
    func testAWriteSyncsItsFramesBeforeTheCheckpointAndEmptiesTheWALAfter() throws {
        let calls = try writesToKeychainFiles(["add", "-s", "durable", "-a", "acct", "--data-file", "-"], input: .text("s"))
        func isWAL(_ call: String) -> Bool { call.contains(keychain + "-wal>") }
        func isMain(_ call: String) -> Bool { call.contains(keychain + ">") }
        func isSync(_ call: String) -> Bool { call.contains("fsync(") || call.contains("fdatasync(") }
        func isWrite(_ call: String) -> Bool { call.contains("pwrite64(") || call.contains(" write(") }
        XCTAssertEqual(calls.filter(isSync).count, 3, calls.joined(separator: "\n"))
        let firstMainWrite = try XCTUnwrap(calls.firstIndex { isMain($0) && isWrite($0) }, "the checkpoint wrote nothing")
        let lastFrame = try XCTUnwrap(calls[..<firstMainWrite].lastIndex { isWAL($0) && isWrite($0) }, "no frame before the checkpoint")
        XCTAssertTrue(calls[lastFrame..<firstMainWrite].contains { isWAL($0) && isSync($0) },
                      "the database was written before the WAL's frames were synced: \(calls)")
        let lastMainWrite = try XCTUnwrap(calls.lastIndex { isMain($0) && isWrite($0) })
        let mainSync = try XCTUnwrap(calls[lastMainWrite...].firstIndex { isMain($0) && isSync($0) }, "the checkpoint's writes were not synced")
        XCTAssertFalse(calls[firstMainWrite..<mainSync].contains { isWAL($0) && isWrite($0) },
                       "the WAL was emptied before the database was synced: \(calls)")
        XCTAssertEqual(String(decoding: secret("-s", "durable", "-a", "acct"), as: UTF8.self), "s")
    }

    /// A keychain whose WAL was truncated to nothing (by a release before the
    /// VFS kept its blocks, or by hand) and one whose kept WAL holds a zeroed
    /// header both open, read and write as before.
    func testAnEmptiedOrTruncatedWALOpens() throws {
        let wal = keychain + "-wal"
        XCTAssertEqual(truncate(wal, 0), 0)
        XCTAssertEqual(try writesToKeychainFiles(["find", "-s", "svc", "-a", "acct", "-w"]), [])
        add("-s", "after-truncation", "-a", "acct", secret: "secret-three")
        XCTAssertEqual(try writesToKeychainFiles(["find", "-s", "after-truncation", "-a", "acct", "-w"]), [])
        XCTAssertEqual(String(decoding: secret("-s", "after-truncation", "-a", "acct"), as: UTF8.self), "secret-three")
        XCTAssertEqual(String(decoding: secret("-s", "svc", "-a", "acct"), as: UTF8.self), "secret-one")
    }

    func testAStaleSharedMemoryFileIsIgnoredThenRemovedByAWrite() throws {
        // What releases before exclusive locking left beside a keychain (garbage
        // here: it must never be read).
        let shm = keychain + "-shm"
        let junk = [UInt8](repeating: 0xa5, count: 32_768)
        XCTAssertTrue(FileManager.default.createFile(atPath: shm, contents: Data(junk), attributes: [.posixPermissions: 0o600]))
        XCTAssertEqual(try writesToKeychainFiles(["find", "-s", "svc", "-a", "acct", "-w"]), [])
        XCTAssertEqual(String(decoding: secret("-s", "svc", "-a", "acct"), as: UTF8.self), "secret-one")
        XCTAssertEqual(FileManager.default.contents(atPath: shm).map { Array($0) }, junk, "a read touched the stale -shm")
        add("-s", "third", "-a", "acct", secret: "secret-three")
        XCTAssertFalse(FileManager.default.fileExists(atPath: shm), "the first write did not remove the stale -shm")
        XCTAssertEqual(String(decoding: secret("-s", "third", "-a", "acct"), as: UTF8.self), "secret-three")
        XCTAssertEqual(ReliabilityDatabase.integrity(keychain), "ok")
    }
}
