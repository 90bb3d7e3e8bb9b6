import LocketCore
import LocketSupport

/// `keychain recover` (issue 42, docs/REMOTE.md "Replication and failover"):
/// what brings back a device that refuses a remote keychain whose server
/// lost writes it had acknowledged (a failover, a restore of the database).
/// It opens the keychain without refusing that history
/// (`Keychain.openForRecovery`), says what was lost (`recoveryPlan`), and
/// once the user agrees (`recover`) accepts the server's header and history
/// on this device, with every revocation it kept carried over and re-applied
/// where this device can.
extension RemoteAdmin {
    /// What a recovery found, and once applied what it did.
    public struct Recovery: Sendable {
        /// A link of the membership or of the items' state this device saw that the server no longer holds.
        public struct LostLink: Sendable, Equatable {
            public let number: Int64
            /// The device that signed it.
            public let signer: Int64
            /// An epoch: what it changed ("revoked device 3").
            public let changes: [String]
            /// A state this device wrote: the references of the items it changed (at most 32; `moreItems` the rest).
            public let items: [[UInt8]]
            public let moreItems: Int64
        }

        /// A revocation this device kept that the server's membership lost.
        public struct Revocation: Sendable, Equatable {
            public enum Outcome: Sendable, Equatable {
                /// Not applied yet (the plan).
                case pending
                /// Applied again at this membership epoch.
                case reapplied(epoch: Int64)
                /// Not applied here; the device refuses the keychain until it is (the message says why).
                case failed(String)
            }
            public let device: Int64
            /// The epoch that revoked it in the history this device saw.
            public let epoch: Int64
            /// The groups whose keys it still holds, when it is no longer in the membership at all.
            public let staleGroups: [String]
            public internal(set) var outcome: Outcome
        }

        /// An entry of this device's audit chain the server no longer holds.
        public struct LostRead: Sendable, Equatable {
            public let sequence: Int64
            public let item: [UInt8]
        }

        public let url: String
        /// This device's id.
        public let device: Int64
        public let lostMembership: [LostLink]
        public let lostStates: [LostLink]
        /// Older links than this device remembers may be lost too.
        public let lostBeyondKnown: Bool
        /// This device's reads (audit entries) the server no longer holds, and how many entries in all.
        public let lostReads: [LostRead]
        public let lostReadCount: Int64
        /// Other devices whose audit chains this device had checked up to `kept` and the server no longer holds so far.
        public let lostAudit: [(device: Int64, kept: Int64)]
        public internal(set) var revocations: [Revocation]
        /// Devices approved in what this device saw, not in what the server shows.
        public let lostApprovals: [Int64]
        /// Groups granted to approved devices in what this device saw, not in what the server shows.
        public let lostGrants: [(group: String, device: Int64)]
        /// The header's generation this device saw and the server's, when the server's is older.
        public let header: (seen: UInt64, server: UInt64)?
        /// This device's view before (`keychain verify`'s form) and the server's.
        public let keptView: String?
        public let serverView: String
        /// Why this device's trust record could not be read, if it could not (its revocations are then unknown).
        public let trustDamage: String?

        /// Whether anything was lost: nothing to do otherwise.
        public var isNeeded: Bool {
            !lostMembership.isEmpty || !lostStates.isEmpty || lostReadCount > 0 || !lostAudit.isEmpty || !revocations.isEmpty
                || header != nil || trustDamage != nil
        }
    }

    /// What was lost, as far as this device knows it; nothing is changed.
    public func recoveryPlan() throws -> Recovery {
        let remote = try recoveringStore()
        guard remote.device != nil else {
            throw KeychainError(.interactionNotAllowed, "this machine is not a device of \(remote.location.url): it has nothing to recover", reason: .notEnrolled)
        }
        try remote.transaction { _ in }
        return try report(remote)
    }

    /// Accepts the server's history on this device (the owner's act, with
    /// the keychain's password, as `restore --accept-rollback` for the
    /// header): its header, its membership and state, its audit chains, each
    /// revocation this device kept carried over; then re-applies each
    /// revocation the server lost, where this device can (approved, holding
    /// the groups). The report says what it did; a revocation it could not
    /// re-apply leaves this device refusing the keychain until it is.
    public func recover(password: SecureBytes) throws -> Recovery {
        let remote = try recoveringStore()
        let header = try headerRollback()
        try keychain.session.acceptRollback(password: password)
        remote.applyingRecovery = true
        defer { remote.applyingRecovery = false }
        try remote.transaction { _ in }
        remote.keepRecoveredAudit()
        var outcome = try report(remote, header: header)
        remote.recovering = false
        for index in outcome.revocations.indices {
            let revocation = outcome.revocations[index]
            do {
                let epoch = revocation.staleGroups.isEmpty
                    ? try rekey(revoking: revocation.device, groups: [])
                    : try rekey(revoking: nil, groups: Set(revocation.staleGroups))
                outcome.revocations[index].outcome = .reapplied(epoch: epoch)
            } catch let error as KeychainError {
                outcome.revocations[index].outcome = .failed(error.message)
            }
        }
        return outcome
    }

    private func recoveringStore() throws -> RemoteStore {
        guard store.recovering else {
            throw KeychainError(.param, "the keychain was not opened for recovery (Keychain.openForRecovery)")
        }
        return store
    }

    /// The header's generation this device saw, and the server's, when the server's is older.
    private func headerRollback() throws -> (seen: UInt64, server: UInt64)? {
        guard keychain.isRolledBack, let seen = try grant.generationSeen() else { return nil }
        return (seen, keychain.generation)
    }

    private func report(_ remote: RemoteStore, header: (seen: UInt64, server: UInt64)?? = nil) throws -> Recovery {
        guard let found = remote.recovery, let device = remote.device else { throw KeychainError(.io, "the server's history was not read") }
        func links(_ lost: [RemoteJournal.Link]) -> [Recovery.LostLink] {
            lost.map { Recovery.LostLink(number: $0.number, signer: $0.signer, changes: $0.notes, items: $0.refs, moreItems: $0.moreRefs) }
        }
        let headerInfo = try header ?? headerRollback()
        let roster = remote.verifiedRoster?.roster
        let revocations = found.lostRevocations.map { kept in
            let present = roster?.device(kept.device).map { $0.signingKey == kept.signingKey } ?? false
            return Recovery.Revocation(device: kept.device, epoch: kept.epoch,
                                             staleGroups: present ? [] : (roster.map(kept.staleGroups) ?? []), outcome: .pending)
        }
        return Recovery(url: remote.location.url, device: device.id, lostMembership: links(found.lostEpochs), lostStates: links(found.lostStates),
                              lostBeyondKnown: found.lostBeyondJournal,
                              lostReads: found.lostReads.map { Recovery.LostRead(sequence: $0.sequence, item: $0.item) },
                              lostReadCount: found.lostReadCount, lostAudit: found.lostAudit, revocations: revocations,
                              lostApprovals: found.lostApprovals, lostGrants: found.lostGrants,
                              header: headerInfo, keptView: found.keptView, serverView: found.serverView,
                              trustDamage: remote.trustDamage)
    }
}
