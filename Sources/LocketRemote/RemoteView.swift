import LocketCore
import LocketSupport

/// A device's view of a remote keychain's chains (`keychain verify`,
/// docs/REMOTE.md "Freshness"): `m4-1a2b3c4d.s17-9f8e7d6c`, and the check of
/// another device's view against what the server shows (RemoteAdmin.verify).
struct RemoteView {
    let epoch: Int64
    let rosterHash: String
    let sequence: Int64
    let stateHash: String

    static let prefix = 8

    init(epoch: Int64, rosterHash: [UInt8], sequence: Int64, stateHash: [UInt8]) {
        self.epoch = epoch
        self.rosterHash = Hex.encode(rosterHash.prefix(RemoteView.prefix / 2))
        self.sequence = sequence
        self.stateHash = Hex.encode(stateHash.prefix(RemoteView.prefix / 2))
    }

    init?(_ text: String) {
        let parts = text.lowercased().split(separator: ".")
        guard parts.count == 2, parts[0].first == "m", parts[1].first == "s" else { return nil }
        let m = parts[0].dropFirst().split(separator: "-"), s = parts[1].dropFirst().split(separator: "-")
        guard m.count == 2, s.count == 2, let epoch = Int64(m[0]), let sequence = Int64(s[0]),
              m[1].count == RemoteView.prefix, s[1].count == RemoteView.prefix, Hex.decode(m[1]) != nil, Hex.decode(s[1]) != nil else { return nil }
        (self.epoch, rosterHash, self.sequence, stateHash) = (epoch, String(m[1]), sequence, String(s[1]))
    }

    var text: String { "m\(epoch)-\(rosterHash).s\(sequence)-\(stateHash)" }
}

extension RemoteStore {
    func view() throws -> String {
        guard let roster = verifiedRoster, let state = verifiedState else { throw KeychainError(.io, "the keychain's chains were not read") }
        return RemoteView(epoch: roster.roster.epoch, rosterHash: roster.hash, sequence: state.sequence, stateHash: state.hash).text
    }

    /// `other` must be a link of the verified chains (each link from it to
    /// the newest names the hash of the one before).
    func check(_ other: RemoteView) throws {
        guard let roster = verifiedRoster, let state = verifiedState else { throw KeychainError(.io, "the keychain's chains were not read") }
        if other.epoch > roster.roster.epoch || other.sequence > state.sequence {
            throw KeychainError(.decode, """
                \(location.url) shows membership epoch \(roster.roster.epoch) and state \(state.sequence), older than the other device saw \
                (\(other.epoch), \(other.sequence)): the database was rolled back, or this device is shown a fork
                """)
        }
        let rosters = try execute("SELECT body, signature FROM locket.roster WHERE epoch >= $1 ORDER BY epoch", [.int(other.epoch)])
            .map { try SignedRoster(body: $0[0].bytes ?? [], signature: $0[1].bytes ?? []) }
        let states = try execute("SELECT body, signature FROM locket.states WHERE seq >= $1 ORDER BY seq", [.int(other.sequence)])
            .map { try SignedState(body: $0[0].bytes ?? [], signature: $0[1].bytes ?? []) }
        guard let firstRoster = rosters.first, firstRoster.roster.epoch == other.epoch,
              let firstState = states.first, firstState.sequence == other.sequence,
              zip(rosters, rosters.dropFirst()).allSatisfy({ $1.roster.previous == $0.hash && $1.roster.epoch == $0.roster.epoch + 1 }),
              zip(states, states.dropFirst()).allSatisfy({ $1.previous == $0.hash && $1.sequence == $0.sequence + 1 }),
              rosters.last == roster, states.last == state else {
            throw KeychainError(.decode, "\(location.url) no longer holds the links between the other device's view and this one's: the database was altered")
        }
        let seen = RemoteView(epoch: firstRoster.roster.epoch, rosterHash: firstRoster.hash, sequence: firstState.sequence, stateHash: firstState.hash)
        guard seen.rosterHash == other.rosterHash, seen.stateHash == other.stateHash else {
            throw KeychainError(.decode, """
                the other device saw another history at membership epoch \(other.epoch) / state \(other.sequence) than \(location.url) shows this one: \
                the database was forked (one of the two devices was shown altered rows)
                """)
        }
    }
}
