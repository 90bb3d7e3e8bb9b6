import Glibc
import LocketCore

/// Transactions on a `RemoteConnection`: the isolation asked for, serialization
/// failures retried (queued on an advisory lock), one reconnection when the
/// connection is lost before COMMIT, and reads in autocommit.
extension RemoteConnection {
    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// How a transaction body talks to the server.
    public struct Transaction {
        let connection: RemoteConnection

        /// Runs one statement inside the transaction; its rows.
        @discardableResult
        public func execute(_ sql: String, _ parameters: [RemoteValue] = []) throws -> [RemoteRow] {
            try connection.run(sql, parameters)
        }
    }

    /// How many times a transaction runs at most when it keeps meeting serialization failures.
    public static let maximumAttempts = 16

    /// Taken (session level) from a transaction's second attempt on: writers
    /// all advance the one newest state link, so those that collided queue
    /// here instead of colliding again (docs/REMOTE.md has the measurement).
    static let collidedWritersLock: Int64 = 0x6c6f_636b_6574

    /// Runs `body` in one transaction at `isolation` and commits it. On a
    /// serialization failure or deadlock (40001, 40P01) it rolls back, pauses
    /// and runs `body` again (at most `maximumAttempts` times, queued on
    /// `collidedWritersLock`), so `body` must do nothing it can't repeat. A
    /// connection lost before COMMIT is made again once; lost during COMMIT,
    /// the outcome is unknown (errSecIO). `body`'s own errors roll back.
    public func transaction<R>(isolation: Isolation = .serializable, _ body: (Transaction) throws -> R) throws -> R {
        precondition(!inTransaction, "transactions don't nest")
        var reconnected = false
        var attempt = 0
        var queued = false
        defer { if queued, isConnected { _ = try? run("SELECT pg_advisory_unlock($1)", [.int(Self.collidedWritersLock)]) } }
        while true {
            attempt += 1
            var committing = false
            do {
                if !isConnected { try connect() }
                if attempt > 1 && !queued {
                    _ = try run("SELECT pg_advisory_lock($1)", [.int(Self.collidedWritersLock)])
                    queued = true
                }
                inTransaction = true
                defer { inTransaction = false }
                try run("BEGIN ISOLATION LEVEL \(isolation.rawValue)", [])
                let result: R
                do {
                    result = try body(Transaction(connection: self))
                } catch let failure as RemoteFailure {
                    throw failure
                } catch {
                    _ = try? run("ROLLBACK", [])
                    throw error
                }
                committing = true
                try run("COMMIT", [])
                return result
            } catch let failure as RemoteFailure {
                if failure.connectionLost {
                    disconnect()
                    queued = false  // a session lock ends with its session
                    if committing {
                        throw KeychainError(.io, "the connection to the PostgreSQL server was lost during COMMIT: the change may or may not have been applied")
                    }
                    guard !reconnected else { throw failure.keychainError }
                    reconnected = true
                    continue
                }
                if reconnected, case .connect = failure {
                    // The write was under way when its connection went; COMMIT was never sent.
                    throw KeychainError(failure.keychainError.code, """
                        the connection to the PostgreSQL server was lost before the change was committed, and could not be made again: \
                        the change was not applied (\(failure.keychainError.message))
                        """)
                }
                // The server aborted the transaction; end it on our side too.
                _ = try? run("ROLLBACK", [])
                guard failure.retryable, attempt < Self.maximumAttempts else { throw failure.keychainError }
                pause(attempt)
            }
        }
    }

    /// Runs `body`'s statements outside a transaction (autocommit: each
    /// statement sees its own snapshot), for reads that need no more. A
    /// connection lost on the way is made again once and `body` run again,
    /// as `transaction` does.
    public func autocommit<R>(_ body: (Transaction) throws -> R) throws -> R {
        precondition(!inTransaction, "autocommit reads don't run inside a transaction")
        var reconnected = false
        while true {
            do {
                if !isConnected { try connect() }
                return try body(Transaction(connection: self))
            } catch let failure as RemoteFailure {
                guard failure.connectionLost else { throw failure.keychainError }
                disconnect()
                guard !reconnected else { throw failure.keychainError }
                reconnected = true
            }
        }
    }

    /// Full jitter (up to 2^attempt ms, at most 250): collided writers part.
    private func pause(_ attempt: Int) {
        let cap = min(250_000, 1_000 << min(attempt, 8))
        usleep(UInt32(Int.random(in: cap / 4...cap)))
    }
}
