import LocketCore
import LocketSupport

/// The checks every online transaction makes before anything is read or
/// written (docs/REMOTE.md "What each key proves", "Freshness"): the signed
/// membership from the epoch this device last verified to the newest, the
/// signed state chain from the link it last saw to the newest, whose root
/// each row read is then proven against (RemoteStore+Tree). What it
/// verified is kept (`RemoteTrust`) once the transaction commits.
extension RemoteStore {
    /// Before the body of each attempt. Nothing to check before the keychain
    /// is open (its identity unknown) or offline (the snapshot is this device's).
    func verifyOnBegin() throws {
        verifiedRoster = nil
        verifiedState = nil
        itemTree = nil
        expectations = [:]
        upgradedTree = false
        changedItems = false
        working = trust
        guard offline == nil, let keychainID else { return }
        if recovering { return try verifyForRecovery(keychainID) }
        let chains = try readChains()
        let roster = try verifyRoster(keychainID, chains.roster)
        try verifyState(roster, chains.states)
        try checkOwnAudit()
    }

    /// The membership's links from the one this device kept, and the
    /// state's from the one it saw (before it saw one, the newest alone),
    /// as (body, signature) in order: one statement, not one per chain,
    /// since every transaction starts with them and each statement is a
    /// round trip to the server and back (issue 38).
    private func readChains() throws -> (roster: [SignedLink], states: [SignedLink]) {
        var parameters: [RemoteValue] = [.int(working.roster?.roster.epoch ?? 1)]
        let states: String
        if let pinned = working.state {
            states = "SELECT 1, seq, body, signature FROM locket.states WHERE seq >= $2"
            parameters.append(.int(pinned.sequence))
        } else {
            states = "(SELECT 1, seq, body, signature FROM locket.states ORDER BY seq DESC LIMIT 1)"
        }
        let rows = try execute("""
            SELECT 0, epoch, body, signature FROM locket.roster WHERE epoch >= $1
            UNION ALL \(states)
            ORDER BY 1, 2
            """, parameters)
        var roster: [SignedLink] = [], chain: [SignedLink] = []
        for row in rows {
            let link = (body: row[2].bytes ?? [], signature: row[3].bytes ?? [])
            if row[0].int == 0 { roster.append(link) } else { chain.append(link) }
        }
        return (roster, chain)
    }

    /// One link of a signed chain as its row holds it.
    typealias SignedLink = (body: [UInt8], signature: [UInt8])

    /// After the commit: what this transaction verified or wrote is what this
    /// device now trusts (while recovering, only once the user agreed).
    func saveTrust() throws {
        guard !recovering || applyingRecovery, working != trust, let device, let keychainID else { return }
        trust = working
        do {
            try trust.save(keychainID: keychainID, device: device, environment: environment)
        } catch let error as KeychainError {
            throw KeychainError(.io, "the change was applied, but this device's trust record could not be kept: \(error.message)")
        }
    }

    /// The newest signed membership, verified link by link from the one this device kept.
    private func verifyRoster(_ keychainID: [UInt8], _ rows: [SignedLink]) throws -> SignedRoster {
        let pinned = working.roster
        var current: SignedRoster? = nil
        for row in rows {
            let signed = try SignedRoster(body: row.body, signature: row.signature)
            if let pinned, current == nil {
                guard signed == pinned else {
                    throw KeychainError(.decode, "\(location.url) shows another membership at epoch \(pinned.roster.epoch) than this device verified: the database was altered, or another history replaced it (a failover, a restore)",
                                        reason: .remoteRolledBack)
                }
            } else {
                try signed.verify(after: current, keychainID: keychainID)
                if device != nil { working.note(signed, after: current) }
            }
            current = signed
        }
        guard let current else {
            if let pinned {
                throw KeychainError(.decode, "\(location.url) was rolled back: its membership is older than epoch \(pinned.roster.epoch), which this device verified",
                                    reason: .remoteRolledBack)
            }
            throw KeychainError(.decode, "\(location.url) has no signed membership: the database was altered")
        }
        verifiedRoster = current
        if device != nil {
            working.roster = current
            try checkRevocationsKept(current.roster)
        }
        return current
    }

    /// A revocation this device performed or saw stays: a membership in
    /// which that device is approved again (the revocation lost in a
    /// failover or a restore) is refused until it is revoked again, except
    /// by the transaction that revokes it (issue 42).
    func checkRevocationsKept(_ roster: Roster) throws {
        guard !rekeying, let lost = working.revocations.first(where: { $0.isLost(in: roster) }) else { return }
        let who = lost.device == device?.id ? "this device, revoked" : "device \(lost.device), whose revocation this device saw"
        throw KeychainError(.decode, """
            \(who) at epoch \(lost.epoch), is approved again in the membership \(location.url) shows (epoch \(roster.epoch)): \
            the revocation was lost (a failover or a restore of the database), and this device refuses the keychain until it is revoked again
            """, reason: .revocationLost(device: lost.device))
    }

    /// The newest signed state, verified from the one this device kept: the
    /// root of the item tree every row read is proven against.
    private func verifyState(_ roster: SignedRoster, _ rows: [SignedLink]) throws {
        let pinned = working.state
        var current: SignedState? = nil
        for row in rows {
            let signed = try SignedState(body: row.body, signature: row.signature)
            if let pinned, current == nil {
                guard signed == pinned else {
                    throw KeychainError(.decode, "\(location.url) shows another state of its items at \(pinned.sequence) than this device saw: the database was altered, or another history replaced it (a failover, a restore)",
                                        reason: .remoteRolledBack)
                }
            } else {
                try signed.verify(after: current, roster: roster.roster)
                if device != nil { working.note(signed) }
            }
            current = signed
        }
        guard let current else {
            if let pinned {
                throw KeychainError(.decode, "\(location.url) was rolled back: the state of its items is older than \(pinned.sequence), which this device saw",
                                    reason: .remoteRolledBack)
            }
            throw KeychainError(.decode, "\(location.url) has no signed state of its items: the database was altered")
        }
        // Every change of the membership writes a state in its transaction.
        guard current.rosterEpoch == roster.roster.epoch else {
            throw KeychainError(.decode, "\(location.url)'s newest state was written under membership epoch \(current.rosterEpoch), not the newest (\(roster.roster.epoch)): the database was altered")
        }
        verifiedState = current
        if linearRoot {
            try upgradeTree(current)
        } else {
            itemTree = ItemTree(root: current.root)
        }
        if device != nil { working.state = verifiedState }
    }

    /// The device that writes must be approved in the verified membership.
    func approvedDevice(_ what: String) throws -> (DeviceIdentity, SignedRoster) {
        guard let device else {
            throw KeychainError(.interactionNotAllowed, "this machine is not enrolled in \(location.url)", reason: .notEnrolled)
        }
        guard let roster = verifiedRoster, roster.roster.isApproved(device.id) else {
            throw KeychainError(.interactionNotAllowed, "this device is not approved in \(location.url)'s signed membership: \(what) needs an approved device")
        }
        return (device, roster)
    }

    /// The next state, signed by this device, at the end of a transaction that changed an item or the membership.
    func advanceState() throws {
        guard let keychainID else { return }
        let (device, roster) = try approvedDevice("a change")
        let next = try SignedState.sign(after: verifiedState, keychainID: keychainID, rosterEpoch: roster.roster.epoch,
                                        root: try commitTree(), by: device)
        try insertState(next)
        verifiedState = next
        working.state = next
        working.note(next, refs: writtenRefs)
        changedItems = false
    }

    /// One link of the state chain. Reading its key first makes a concurrent
    /// writer's insert a serialization failure (retried), not a unique violation.
    func insertState(_ state: SignedState) throws {
        _ = try execute("SELECT 1 FROM locket.states WHERE seq = $1", [.int(state.sequence)])
        try execute("INSERT INTO locket.states(seq, body, signature) VALUES ($1, $2, $3)",
                    [.int(state.sequence), .bytes(state.body), .bytes(state.signature)])
    }

    /// The next membership epoch, signed by this device; the state follows at the end of the transaction.
    func publish(_ roster: Roster) throws {
        let (device, current) = try approvedDevice("changing the membership")
        var next = roster
        next.epoch = current.roster.epoch + 1
        next.previous = current.hash
        next.signer = device.id
        let signed = try SignedRoster.sign(next, by: device)
        try insertRoster(signed)
        verifiedRoster = signed
        working.note(signed, after: current)
        working.roster = signed
        changedItems = true
    }

    func insertRoster(_ roster: SignedRoster) throws {
        _ = try execute("SELECT 1 FROM locket.roster WHERE epoch = $1", [.int(roster.roster.epoch)])
        try execute("INSERT INTO locket.roster(epoch, body, signature) VALUES ($1, $2, $3)",
                    [.int(roster.roster.epoch), .bytes(roster.body), .bytes(roster.signature)])
    }
}
