import Foundation
@testable import LocketCore
@testable import LocketRemote
import XCTest

/// A transaction that met a serialization failure queues on a session
/// advisory lock (`RemoteConnection.collidedWritersLock`) for its next
/// attempts, and lets it go when it ends, whatever the outcome
/// (docs/REMOTE.md "Freshness", the measurement behind it). The collision is
/// made, not hoped for: a second session commits a write to the row between
/// the first one's read and its write.
final class RemoteWriterQueueTests: PostgresTestCase {
    private let table = "queue"
    /// A database of this test's own: advisory locks are per database.
    private var database = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        database = try running().makeDatabase()
        let setup = try connect()
        try setup.execute("CREATE TABLE \(table)(k int8 PRIMARY KEY, v int8)")
        try setup.execute("INSERT INTO \(table) VALUES (1, 0)")
    }

    private func connect() throws -> RemoteConnection { try running().connect(database: database) }

    /// Whether another session holds the collided writers' lock now.
    private func lockIsHeld(_ observer: RemoteConnection) throws -> Bool {
        let rows = try observer.execute("SELECT pg_try_advisory_lock($1)", [.int(RemoteConnection.collidedWritersLock)])
        guard rows.first?[0].bool == true else { return true }
        try observer.execute("SELECT pg_advisory_unlock($1)", [.int(RemoteConnection.collidedWritersLock)])
        return false
    }

    /// Reads the row, has another session change it and commit, then writes
    /// it: the first attempt fails to serialize, the second runs queued.
    private func collide(_ writer: RemoteConnection, other: RemoteConnection, observer: RemoteConnection,
                         held: inout [Bool], then finish: (RemoteConnection.Transaction) throws -> Void) throws {
        var attempts = 0
        var seen: [Bool] = []
        defer { held = seen }
        try writer.transaction { transaction in
            attempts += 1
            seen.append(try lockIsHeld(observer))
            let value = try XCTUnwrap(transaction.execute("SELECT v FROM \(table) WHERE k = 1").first?[0].int)
            if attempts == 1 {
                try other.execute("UPDATE \(table) SET v = v + 100 WHERE k = 1")
            }
            try transaction.execute("UPDATE \(table) SET v = $1 WHERE k = 1", [.int(value + 1)])
            try finish(transaction)
        }
        XCTAssertEqual(attempts, 2, "the collision did not happen, or was retried more than once")
    }

    func testACollidedTransactionQueuesOnTheLockAndReleasesIt() throws {
        let (writer, other, observer) = (try connect(), try connect(), try connect())
        var held: [Bool] = []
        try collide(writer, other: other, observer: observer, held: &held) { _ in }
        XCTAssertEqual(held, [false, true], "attempt 1 must run unqueued, attempt 2 queued")
        XCTAssertFalse(try lockIsHeld(observer), "the lock outlived the transaction")
        XCTAssertEqual(try observer.execute("SELECT v FROM \(table) WHERE k = 1").first?[0].int, 101, "the retry did not see the other write")
    }

    func testTheLockIsReleasedWhenTheRetryFails() throws {
        let (writer, other, observer) = (try connect(), try connect(), try connect())
        var held: [Bool] = []
        struct Refused: Error {}
        // The first attempt fails at its UPDATE (40001): only the queued retry gets here.
        XCTAssertThrowsError(try collide(writer, other: other, observer: observer, held: &held) { _ in throw Refused() }) { XCTAssertTrue($0 is Refused, "\($0)") }
        XCTAssertEqual(held, [false, true])
        XCTAssertFalse(try lockIsHeld(observer), "a failed retry kept the lock")
        XCTAssertEqual(try observer.execute("SELECT v FROM \(table) WHERE k = 1").first?[0].int, 100, "the failed retry was committed")
        // The writer's session goes on: a next transaction runs unqueued.
        var queuedAtStart: Bool?
        try writer.transaction { _ in queuedAtStart = try lockIsHeld(observer) }
        XCTAssertEqual(queuedAtStart, false)
    }
}
