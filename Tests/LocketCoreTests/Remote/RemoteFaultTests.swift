import Foundation
import LocketCore
import LocketRemote
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Many writers, killed clients, a restarted server: nothing lost, nothing
/// half-written (issue 17 item 3, at the connection layer).
final class RemoteFaultTests: PostgresTestCase {
    /// A new database with the two tables, in the run's server or in `server`.
    func database(in server: PostgresServer? = nil) throws -> (PostgresServer, String) {
        let server = try server ?? running()
        let name = try server.makeDatabase()
        let connection = try server.connect(database: name)
        try connection.execute("CREATE TABLE counter(id int PRIMARY KEY, n bigint NOT NULL)")
        try connection.execute("INSERT INTO counter VALUES (1, 0)")
        // Each transaction writes a pair; a half-written one would leave an odd count.
        try connection.execute("CREATE TABLE pairs(txn text NOT NULL, half int NOT NULL, PRIMARY KEY (txn, half))")
        return (server, name)
    }

    /// Two writers read-modify-write the same row under SERIALIZABLE: every
    /// conflict is retried inside `transaction`, and no increment is lost.
    func testConcurrentWritersLoseNothing() throws {
        let (server, name) = try database()
        let rounds = 150
        // Per writer: transactions that gave up, and runs of the body (a retry runs it again).
        nonisolated(unsafe) let errors = UnsafeMutableBufferPointer<Int>.allocate(capacity: 2)
        nonisolated(unsafe) let runs = UnsafeMutableBufferPointer<Int>.allocate(capacity: 2)
        errors.initialize(repeating: 0)
        runs.initialize(repeating: 0)
        defer { errors.deallocate(); runs.deallocate() }
        // Both connect (a helper each, slow on a loaded machine) before either
        // writes, or one could finish its rounds before the other starts.
        let ready = DispatchGroup()
        ready.enter(); ready.enter()
        // The first round is made to collide, whatever the machine's load:
        // each writer has read the counter before either updates it, so one
        // update must fail to serialize and its transaction run again.
        let haveRead = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
        DispatchQueue.concurrentPerform(iterations: 2) { writer in
            let connection = try? server.connect(database: name)
            ready.leave()
            ready.wait()
            guard let connection else { errors[writer] = -1; haveRead[writer].signal(); return }
            for round in 0..<rounds {
                do {
                    try connection.transaction(isolation: .serializable) { transaction in
                        runs[writer] += 1
                        let n = try transaction.execute("SELECT n FROM counter WHERE id = 1").first?[0].int ?? -1
                        if round == 0 && runs[writer] == 1 {
                            haveRead[writer].signal()
                            _ = haveRead[1 - writer].wait(timeout: .now() + 60)
                        }
                        try transaction.execute("UPDATE counter SET n = $1 WHERE id = 1", [.int(n + 1)])
                        try transaction.execute("INSERT INTO pairs VALUES ($1, 0), ($1, 1)", [.text("w\(writer)-\(round)")])
                    }
                } catch {
                    errors[writer] += 1
                }
            }
        }
        XCTAssertEqual(Array(errors), [0, 0], "a transaction gave up")
        XCTAssertGreaterThan(runs[0] + runs[1], 2 * rounds, "no transaction was run again: the retry was not exercised")
        let check = try server.connect(database: name)
        XCTAssertEqual(try check.execute("SELECT n FROM counter WHERE id = 1").first?[0].int, Int64(2 * rounds))
        XCTAssertEqual(try check.execute("SELECT count(*) FROM pairs").first?[0].int, Int64(4 * rounds))
    }

    /// locket killed mid-transaction: its end of the stream closes, the
    /// helper rolls back and exits. Shown both ways: locket's end closed
    /// (what the kernel does when locket dies) and the helper itself killed.
    func testAClientKilledMidTransactionLeavesNothing() throws {
        let (server, name) = try database()
        for killHelper in [false, true] {
            let connection = try server.connect(database: name)
            let helper = try XCTUnwrap(connection.helperProcessID)
            struct Abandon: Error {}
            XCTAssertThrowsError(try connection.transaction { transaction in
                try transaction.execute("INSERT INTO pairs VALUES ('killed', 0)")
                try transaction.execute("UPDATE counter SET n = n + 1000 WHERE id = 1")
                if killHelper {
                    kill(helper, SIGKILL)
                } else {
                    // Stop the helper the way locket's death would: the stream ends.
                    connection.close()
                }
                throw Abandon()
            })
            // Whatever the helper was doing, the server must end the transaction.
            var waited = 0
            while kill(helper, 0) == 0 && waited < 500 {
                var status: Int32 = 0
                _ = waitpid(helper, &status, WNOHANG)
                usleep(10_000)
                waited += 1
            }
            let check = try server.connect(database: name)
            XCTAssertEqual(try check.execute("SELECT count(*) FROM pairs WHERE txn = 'killed'").first?[0].int, 0)
            XCTAssertEqual(try check.execute("SELECT n FROM counter").first?[0].int, 0)
        }
    }

    /// The helper's own EOF handling, without RemoteConnection's cleanup:
    /// a raw helper gets BEGIN and an INSERT, then its stdin closes.
    func testTheHelperRollsBackOnEndOfInput() throws {
        let (server, name) = try database()
        let helper = try RawHelper(path: try Postgres.helperPath())
        try helper.handshake()
        try helper.connect(server.socketParameters(database: name))
        try helper.execute("BEGIN")
        try helper.execute("INSERT INTO pairs VALUES ('eof', 0)")
        XCTAssertEqual(helper.closeAndWait(), 0)
        let check = try server.connect(database: name)
        XCTAssertEqual(try check.execute("SELECT count(*) FROM pairs WHERE txn = 'eof'").first?[0].int, 0)
    }

    /// The server restarts while a writer runs: each transaction either
    /// commits whole or fails with a clear error, and the writer carries on
    /// once the server is back.
    func testAServerRestartMidRunIsSurvivedWithoutAPartialWrite() throws {
        // Its own server: the shared one is never stopped under other tests.
        let (server, name) = try database(in: try privateServer())
        let connection = try server.connect(database: name)
        var committed = 0, failed: [KeychainError] = []
        for round in 0..<60 {
            if round == 20 { try server.stopServer(mode: "immediate") }
            if round == 30 { try server.start() }
            do {
                try connection.transaction { transaction in
                    try transaction.execute("INSERT INTO pairs VALUES ($1, 0)", [.text("r\(round)")])
                    try transaction.execute("SELECT pg_sleep(0.001)")
                    try transaction.execute("INSERT INTO pairs VALUES ($1, 1)", [.text("r\(round)")])
                }
                committed += 1
            } catch let error as KeychainError {
                failed.append(error)
            }
        }
        XCTAssertGreaterThanOrEqual(committed, 49, "the writer went on after the restart")
        XCTAssertFalse(failed.isEmpty, "the rounds while the server was down failed")
        for error in failed {
            XCTAssertTrue([.notAvailable, .io].contains(error.code), "\(error)")
        }
        let check = try server.connect(database: name)
        XCTAssertEqual(try check.execute("SELECT count(*) FROM (SELECT txn FROM pairs GROUP BY txn HAVING count(*) <> 2) odd").first?[0].int, 0,
                       "a transaction was half-written")
        XCTAssertEqual(try check.execute("SELECT count(DISTINCT txn) FROM pairs").first?[0].int, Int64(committed))
    }
}
