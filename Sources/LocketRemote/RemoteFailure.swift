import LocketCore
import LocketSupport
import LocketWire

/// What went wrong on the way to PostgreSQL, before it is turned into a
/// KeychainError: the SQLSTATE decides retries and the OSStatus.
enum RemoteFailure: Error {
    /// read_only_sql_transaction: what the helper reports for a standby, and the server for a write it refuses.
    static let standby = "25006"

    /// The server (or libpq) reported an error.
    case server(sqlstate: String, message: String, constraint: String, connectionLost: Bool)
    /// The helper could not connect; `sqlstate` 25006 when the server was a standby.
    case connect(sqlstate: String, message: String)
    /// The helper died, or its stream broke.
    case helperGone
    /// The helper sent something this side doesn't understand (or refused what we sent).
    case protocolViolation(String)

    /// A serialization failure or deadlock: the transaction may simply be run again.
    var retryable: Bool {
        if case .server(let sqlstate, _, _, false) = self { return sqlstate == "40001" || sqlstate == "40P01" }
        return false
    }

    /// The connection is gone: a new one is needed. An error without a
    /// SQLSTATE is never the server's (it names every error it reports) but
    /// libpq's own about its socket, whatever flag an older helper sent (issue 44).
    var connectionLost: Bool {
        switch self {
        case .server(let sqlstate, _, _, let lost): lost || sqlstate.isEmpty
        case .helperGone: true
        default: false
        }
    }

    /// The KeychainError a caller sees. The message names the SQLSTATE and,
    /// where it helps, the constraint, but never the server's own text about
    /// data (which may quote a value): only errors about locket's SQL itself
    /// (class 42) and connection failures (which name hosts, not values) carry it.
    var keychainError: KeychainError {
        switch self {
        case .connect(let sqlstate, let message):
            if sqlstate == Self.standby {
                return KeychainError(.notAvailable, "could not connect to the PostgreSQL server: \(message)", reason: .remoteStandby)
            }
            let code: KeychainError.Code = message.contains(occurrenceOf: "password authentication failed") ? .authFailed : .notAvailable
            return KeychainError(code, "could not connect to the PostgreSQL server: \(message)")
        case .helperGone:
            return KeychainError(.io, "the PostgreSQL helper stopped unexpectedly; nothing was committed by the open transaction")
        case .protocolViolation(let why):
            return KeychainError(.io, "the PostgreSQL helper sent an unexpected reply: \(why)")
        case .server(let sqlstate, let message, let constraint, _):
            let lost = connectionLost
            let named = constraint.isEmpty ? "" : ", constraint \(constraint)"
            let status = "(SQLSTATE \(sqlstate.isEmpty ? "none" : sqlstate)\(named))"
            if lost {
                return KeychainError(.io, "the connection to the PostgreSQL server was lost; the open transaction was not committed: nothing of it was applied \(status)")
            }
            switch sqlstate.prefix(2) {
            case "23" where sqlstate == "23505":
                return KeychainError(.duplicateItem, "the database already holds a row with that key \(status)")
            case "23": return KeychainError(.param, "the database refused a row that breaks its constraints \(status)")
            case "22": return KeychainError(.param, "the database refused a value \(status)")
            case "28": return KeychainError(.authFailed, "the database refused the login \(status)")
            case "40": return KeychainError(.io, "the transaction kept conflicting with other writers; nothing was committed \(status)")
            case "25" where sqlstate == Self.standby:
                return KeychainError(.notAvailable, "the PostgreSQL server takes no writes: it is a read-only standby, or read-only by its settings \(status)",
                                     reason: .remoteStandby)
            case "42": return KeychainError(.io, "the database refused a statement: \(message) \(status)")
            case "08", "57": return KeychainError(.notAvailable, "the PostgreSQL server is not available \(status)")
            case "0A" where message.contains(occurrenceOf: "hot standby"):
                return KeychainError(.notAvailable, "the PostgreSQL server is a read-only standby, not the primary \(status)", reason: .remoteStandby)
            default: return KeychainError(.io, "the database reported an error \(status)")
            }
        }
    }
}

extension RemoteFailure {
    /// A broken stream means the helper is gone; anything else it sent was malformed.
    static func helperFailure(_ failure: Wire.Failure) -> RemoteFailure {
        switch failure {
        case .endOfStream, .truncated, .system: .helperGone
        case .tooLarge: .protocolViolation("a frame over the size limit")
        case .malformed(let why): .protocolViolation(why)
        }
    }
}
