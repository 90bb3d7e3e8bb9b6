import XCTest

/// The power-loss model itself (PowerLossStraceLog and PowerLossReplayer),
/// on a made-up strace log: which operations it reads, which crash points
/// and states it makes of them, and the files each state leaves. The
/// end-to-end suites trust these; a replayer that made too few states would
/// pass everything.
final class PowerLossReplayerTests: XCTestCase {
    private let before = FileTree(directories: [], files: ["/r/f": Array("old!".utf8), "/r/g": Array("gone".utf8)])

    /// `f` rewritten in place and synced; `t` made, written, renamed over
    /// `g` (or to a new name); then 1,024 more bytes of `f` (three sectors).
    private func log(renameTo target: String = "g", syncDirectory: Bool = false) -> [String] {
        let x = String(repeating: "\\x58", count: 1024)
        return [
            #"7 openat(AT_FDCWD</r>, "/r/f", O_RDWR|O_CLOEXEC) = 3</r/f>"#,
            #"7 pwrite64(3</r/f>, "\x6e\x65\x77\x31", 4, 0) = 4"#,
            #"7 fdatasync(3</r/f> <unfinished ...>"#,
            #"8 write(1</dev/null>, "\x00", 1) = 1"#,
            #"7 <... fdatasync resumed>) = 0"#,
            #"7 openat(AT_FDCWD</r>, "/r/t", O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600) = 4</r/t>"#,
            #"7 write(4</r/t>, "\x41\x42", 2) = 2"#,
            #"7 renameat(AT_FDCWD</r>, "/r/t", AT_FDCWD</r>, "/r/\#(target)") = 0"#,
        ] + (syncDirectory ? [#"7 openat(AT_FDCWD</r>, "/r", O_RDONLY|O_DIRECTORY) = 5</r>"#, #"7 fsync(5</r>) = 0"#] : []) + [
            "7 pwrite64(3</r/f>, \"\(x)\", 1024, 4) = 1024",
            "7 +++ exited with 0 +++",
        ]
    }

    private func replay(_ lines: [String]) throws -> PowerLossReplayer {
        var parser = StraceLog(before: before, roots: ["/r"])
        for line in lines { try parser.feed(line) }
        let result = RunResult(status: 0, signal: nil, stdout: [], stderr: [], timedOut: false, duration: 0, arguments: [])
        return PowerLossReplayer(PowerLossRecording(roots: ["/r"], before: before, inodes: parser.initialInodes,
                                                    operations: parser.operations, after: FileTree(), result: result))
    }

    func testTheLogBecomesTheOperationsInOrder() throws {
        let replayer = try replay(log())
        let operations = replayer.recording.operations.map(\.operation)
        XCTAssertEqual(operations.count, 7, replayer.recording.operations.map(\.summary).joined(separator: "\n"))
        XCTAssertEqual(operations[0], .write(inode: 0, offset: 0, bytes: Array("new1".utf8)))
        XCTAssertEqual(operations[1], .sync(inode: 0, dataOnly: true, sizeChanged: false))
        XCTAssertEqual(operations[2], .create(path: "/r/t", inode: 2))
        XCTAssertEqual(operations[4], .rename(from: "/r/t", to: "/r/g", inode: 2, replaces: true))
        XCTAssertEqual(operations[5], .write(inode: 0, offset: 4, bytes: Array(repeating: 0x58, count: 1024)))
        XCTAssertEqual(replayer.crashPoints, [1, 7])
        XCTAssertEqual(replayer.completed.files, ["/r/f": Array("new1".utf8) + Array(repeating: 0x58, count: 1024), "/r/g": Array("AB".utf8)])
    }

    func testEveryStateBeforeASyncAndAfterIt() throws {
        let replayer = try replay(log())
        var random = ReliabilityRandom(seed: 1)
        // Before the sync returned: the in-place write kept or not (one sector: never torn).
        let first = replayer.states(at: 1, budget: 1_000, random: &random)
        XCTAssertEqual(first.total, 2)
        XCTAssertEqual(Set(first.states.map { replayer.tree(for: $0).files["/r/f"]! }), [Array("old!".utf8), Array("new1".utf8)])
        // After it: "new1" always; the create and the rename a prefix (3), the two later
        // writes each kept or not (4), plus the last one torn in 6 ways per prefix.
        let end = replayer.states(at: 7, budget: 1_000, random: &random)
        XCTAssertEqual(end.total, 30)
        XCTAssertEqual(Set(end.states).count, 30)
        let trees = end.states.map { replayer.tree(for: $0) }
        XCTAssertTrue(trees.allSatisfy { $0.files["/r/f"]!.prefix(4) == Array("new1".utf8)[...] })
        XCTAssertEqual(Set(trees.map { $0.files["/r/g"] }), [Array("gone".utf8), Array("AB".utf8), []])
        XCTAssertTrue(trees.contains { $0.files["/r/t"] == Array("AB".utf8) && $0.files["/r/g"] == Array("gone".utf8) })
        // A torn last write: sectors 1 and 3 of it, the middle one still the zeros the file grew with.
        let torn = try XCTUnwrap(end.states.first { $0.torn?.sectors == [true, false, true] && $0.metadata == 2 })
        let f = replayer.tree(for: torn).files["/r/f"]!
        XCTAssertEqual(f.count, 1028)
        XCTAssertEqual(Array(f[4..<512]), Array(repeating: 0x58, count: 508))
        XCTAssertEqual(Array(f[512..<1024]), Array(repeating: 0, count: 512))
        XCTAssertEqual(Array(f[1024..<1028]), Array(repeating: 0x58, count: 4))
        // ext4's auto_da_alloc: a rename over `g` kept without the data of `t` is not an ext4 state.
        for state in end.states where state.metadata == 2 {
            XCTAssertEqual(state.ext4, state.writes.contains(3) && state.torn?.operation != 3, "\(state)")
        }
    }

    func testADirectorySyncKeepsTheNamesBeforeIt() throws {
        let replayer = try replay(log(renameTo: "new", syncDirectory: true))
        var random = ReliabilityRandom(seed: 2)
        let end = replayer.states(at: replayer.recording.operations.count, budget: 1_000, random: &random)
        XCTAssertFalse(end.states.isEmpty)
        for state in end.states {
            let tree = replayer.tree(for: state)
            XCTAssertNil(tree.files["/r/t"])
            XCTAssertNotNil(tree.files["/r/new"], "\(state)")
            XCTAssertEqual(tree.files["/r/g"], Array("gone".utf8))
        }
    }

    func testASampleIsSeededAndKeepsTheExtremes() throws {
        let replayer = try replay(log())
        var a = ReliabilityRandom(seed: 9), b = ReliabilityRandom(seed: 9)
        let one = replayer.states(at: 7, budget: 5, random: &a)
        let two = replayer.states(at: 7, budget: 5, random: &b)
        XCTAssertEqual(one.states, two.states)
        XCTAssertEqual(one.states.count, 5)
        XCTAssertEqual(one.total, 30)
        XCTAssertTrue(one.states.contains { $0.writes.isEmpty && $0.metadata == 0 })
        XCTAssertTrue(one.states.contains { $0.writes == [3, 5] && $0.metadata == 2 && $0.torn == nil })
    }

    func testAWriteItCannotModelFailsTheRecording() {
        var parser = StraceLog(before: before, roots: ["/r"])
        XCTAssertThrowsError(try parser.feed(#"7 writev(3</r/f>, [{iov_base="\x41", iov_len=1}], 1) = 1"#))
    }
}
