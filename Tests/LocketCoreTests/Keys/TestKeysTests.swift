import Foundation
@testable import LocketTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// The run's throwaway keys (`TestKeys`) that the key and agent suites copy
// instead of making their own: each copy private and its owner's alone,
// distinct keys under distinct names in one directory, and the run's
// directory refused when it is not this user's own private one.
final class TestKeysTests: XCTestCase {
    func testCopiesArePrivateDistinctByNameAndTheirOwnersAlone() throws {
        let first = try KeysFixture(), second = try KeysFixture(), third = try KeysFixture()
        try TestKeys.genpkey("p256", to: first.path("ca.key"))
        try TestKeys.genpkey("p256", to: first.path("leaf.key"))
        let ca = try first.read("ca.key")
        XCTAssertTrue(String(decoding: ca, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        XCTAssertNotEqual(try first.read("leaf.key"), ca, "two names in one directory are two keys")
        try TestKeys.genpkey("p256", to: first.path("ca.key"))
        XCTAssertEqual(try first.read("ca.key"), ca, "a name asked for again is the same key")
        var info = stat()
        XCTAssertEqual(lstat(first.path("ca.key"), &info), 0)
        XCTAssertEqual(info.st_mode & 0o7777, 0o600)
        XCTAssertEqual(info.st_uid, geteuid())

        // Damaging a copy (as a test re-encrypting or rewriting its key does) leaves the run's key whole.
        try first.write("ca.key", Array("damaged".utf8))
        try TestKeys.genpkey("p256", to: second.path("mine.key"))
        XCTAssertEqual(try second.read("mine.key"), ca, "the run's first p256 key, as made")

        // ssh-keygen's pair: the private key and its public line, both copied.
        try TestKeys.sshKeygen(["-t", "ed25519"], comment: "test-keys", to: third.path("id"))
        XCTAssertTrue(String(decoding: try third.read("id"), as: UTF8.self).hasPrefix("-----BEGIN OPENSSH PRIVATE KEY-----"))
        XCTAssertTrue(String(decoding: try third.read("id.pub"), as: UTF8.self).hasSuffix(" test-keys\n"))
    }

    func testTheRunsDirectoryMustBeThisUsersPrivateOne() throws {
        let run = try TestRun.directory()
        XCTAssertTrue(run.hasPrefix("/tmp/locket-run-\(geteuid())-"), run)
        var info = stat()
        XCTAssertEqual(lstat(run, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
        let f = try KeysFixture()
        XCTAssertTrue(try TestRun.privateDirectory(f.path("made")))
        XCTAssertFalse(try TestRun.privateDirectory(f.path("made")), "already there and private")
        XCTAssertEqual(mkdir(f.path("shared"), 0o700), 0)
        XCTAssertEqual(chmod(f.path("shared"), 0o770), 0)
        XCTAssertThrowsError(try TestRun.privateDirectory(f.path("shared")), "a directory others can write")
        XCTAssertEqual(symlink(f.path("made"), f.path("link")), 0)
        XCTAssertThrowsError(try TestRun.privateDirectory(f.path("link")), "a link to a private directory")
        XCTAssertTrue(FileManager.default.createFile(atPath: f.path("file"), contents: Data()))
        XCTAssertThrowsError(try TestRun.privateDirectory(f.path("file")), "a file")
    }
}
