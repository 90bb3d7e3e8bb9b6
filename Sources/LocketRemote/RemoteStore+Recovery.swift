import LocketCore
import LocketSupport

/// `keychain recover` (issue 42, docs/REMOTE.md "Replication and failover"):
/// a device that refuses a history older than, or other than, the one it
/// saw (a failover that lost acknowledged writes, a restore of the
/// database) verifies the server's chains as a new device does (the
/// membership from its first epoch, the newest state), compares them with
/// what it kept (its trust record's journal, its own audit chain's newest
/// entries) to say what was lost, and, once the user agrees, keeps the
/// server's history from then on with every revocation it kept carried over.
extension RemoteStore {
    /// What the comparison found.
    struct RecoveryFindings {
        /// Links this device saw that the server no longer holds, oldest first.
        var lostEpochs: [RemoteJournal.Link] = []
        var lostStates: [RemoteJournal.Link] = []
        /// The oldest link this device remembers is lost too: older ones may be.
        var lostBeyondJournal = false
        /// This device's own audit entries the server no longer holds (as far
        /// as it remembers them), and how many entries of its chain are gone.
        var lostReads: [OwnAuditRecord.Entry] = []
        var lostReadCount: Int64 = 0
        /// Other devices' audit chains this device had checked up to `kept`, now shorter or other.
        var lostAudit: [(device: Int64, kept: Int64)] = []
        /// Revocations this device kept that the server's membership lost.
        var lostRevocations: [KeptRevocation] = []
        /// Devices approved in what this device saw and not in what the server shows; and grants of a group.
        var lostApprovals: [Int64] = []
        var lostGrants: [(group: String, device: Int64)] = []
        var keptView: String?
        var serverView = ""
        /// This device's own chain as it will keep it.
        var ownAudit = OwnAuditRecord()

        var isEmpty: Bool {
            lostEpochs.isEmpty && lostStates.isEmpty && lostReadCount == 0 && lostAudit.isEmpty && lostRevocations.isEmpty
        }
    }

    /// In place of `verifyRoster`/`verifyState` while recovering: the
    /// server's history verified, `recovery` found, `working` made the
    /// record this device keeps if the user agrees (`applyingRecovery`).
    func verifyForRecovery(_ keychainID: [UInt8]) throws {
        let kept = trust
        var fresh = RemoteTrust()
        fresh.revocations = kept.revocations
        // The membership as a new device verifies it: every epoch from the first.
        var current: SignedRoster?
        var epochs: [Int64: [UInt8]] = [:]
        for row in try execute("SELECT epoch, body, signature FROM locket.roster ORDER BY epoch", []) {
            let signed = try SignedRoster(body: row[1].bytes ?? [], signature: row[2].bytes ?? [])
            try signed.verify(after: current, keychainID: keychainID)
            fresh.note(signed, after: current)
            epochs[signed.roster.epoch] = signed.hash
            current = signed
        }
        guard let roster = current else { throw KeychainError(.decode, "\(location.url) has no signed membership: the database was altered") }
        // The newest state (as a new device takes it), and those at the numbers this device remembers.
        let numbers = kept.journal.states.map(\.number) + (kept.state.map { [$0.sequence] } ?? [])
        var states: [Int64: [UInt8]] = [:]
        var newest: SignedState?
        for row in try execute("""
            SELECT seq, body, signature FROM locket.states WHERE seq = ANY($1::text::bigint[])
            OR seq = (SELECT max(seq) FROM locket.states) ORDER BY seq
            """, [Self.intArray(numbers)]) {
            let signed = try SignedState(body: row[1].bytes ?? [], signature: row[2].bytes ?? [])
            states[signed.sequence] = signed.hash
            newest = signed
        }
        guard let newest else { throw KeychainError(.decode, "\(location.url) has no signed state of its items: the database was altered") }
        try newest.verify(after: nil, roster: roster.roster)
        guard newest.rosterEpoch == roster.roster.epoch else {
            throw KeychainError(.decode, "\(location.url)'s newest state was written under membership epoch \(newest.rosterEpoch), not the newest (\(roster.roster.epoch)): the database was altered")
        }
        var found = RecoveryFindings()
        found.serverView = RemoteView(epoch: roster.roster.epoch, rosterHash: roster.hash, sequence: newest.sequence, stateHash: newest.hash).text
        if let keptRoster = kept.roster, let keptState = kept.state {
            found.keptView = RemoteView(epoch: keptRoster.roster.epoch, rosterHash: keptRoster.hash, sequence: keptState.sequence,
                                        stateHash: keptState.hash).text
        }
        (found.lostEpochs, found.lostBeyondJournal) = Self.lost(kept.journal.epochs, pinned: kept.roster.map {
            RemoteJournal.Link(number: $0.roster.epoch, hash: $0.hash, signer: $0.roster.signer, notes: [], refs: [], moreRefs: 0)
        }, held: epochs)
        let (lostStates, statesBeyond) = Self.lost(kept.journal.states, pinned: kept.state.map {
            RemoteJournal.Link(number: $0.sequence, hash: $0.hash, signer: $0.writer, notes: [], refs: [], moreRefs: 0)
        }, held: states)
        found.lostStates = lostStates
        found.lostBeyondJournal = found.lostBeyondJournal || statesBeyond
        found.lostRevocations = fresh.revocations.filter { $0.isLost(in: roster.roster) }
        if let seen = kept.roster?.roster {
            for device in seen.devices where device.revokedAt == 0 {
                // Absent, or its id now another device's (an id handed out again after the failover).
                if roster.roster.device(device.id)?.encryptionKey != device.encryptionKey { found.lostApprovals.append(device.id) }
            }
            for group in seen.groups {
                for member in group.members where !found.lostApprovals.contains(member) && roster.roster.isApproved(member)
                    && roster.roster.group(group.name)?.members.contains(member) != true {
                    found.lostGrants.append((group.name, member))
                }
            }
        }
        try compareAudit(kept, into: &fresh, &found)
        // What this device keeps: the server's history, the links of its own it still holds, every revocation.
        fresh.journal.states = kept.journal.states.filter { states[$0.number] == $0.hash && $0.number < newest.sequence }
        fresh.note(newest)
        fresh.roster = roster
        fresh.state = newest
        recovery = found
        working = fresh
        verifiedRoster = roster
        verifiedState = newest
        if linearRoot { try upgradeTree(newest) } else { itemTree = ItemTree(root: newest.root) }
    }

    /// The links of `journal` (and `pinned`, the newest this device kept)
    /// whose number the server holds with another hash, or not at all; and
    /// whether the oldest one remembered is among them.
    private static func lost(_ journal: [RemoteJournal.Link], pinned: RemoteJournal.Link?,
                             held: [Int64: [UInt8]]) -> ([RemoteJournal.Link], Bool) {
        var links = journal
        if let pinned, !links.contains(where: { $0.number == pinned.number }) { links.append(pinned) }
        let lost = links.filter { held[$0.number] != $0.hash }
        let beyond = links.first.map { first in held[first.number] != first.hash && first.number > 1 } ?? false
        return (lost, beyond)
    }

    /// This device's own audit chain against what it kept (the entries the
    /// server no longer holds, and the newest it does, to keep from now on);
    /// other devices' chains it had checked, kept where the server still has them.
    private func compareAudit(_ kept: RemoteTrust, into fresh: inout RemoteTrust, _ found: inout RecoveryFindings) throws {
        guard let device else { return }
        let rows = try execute("""
            SELECT seq, item, body, signature FROM locket.audit WHERE device = $1
            AND (seq = ANY($2::text::bigint[]) OR seq = (SELECT max(seq) FROM locket.audit WHERE device = $1)) ORDER BY seq
            """, [.int(device.id), Self.intArray(ownAudit.recent.map(\.sequence))])
        var items: [Int64: [UInt8]] = [:]
        for row in rows { if let seq = row[0].int { items[seq] = row[1].bytes ?? [] } }
        found.lostReads = ownAudit.recent.filter { items[$0.sequence] != $0.item }
        let newest = rows.last
        let serverSequence = newest?[0].int ?? 0
        let keptSequence = ownAudit.head?.sequence ?? 0
        found.lostReadCount = max(Int64(found.lostReads.count), keptSequence - serverSequence)
        found.ownAudit = OwnAuditRecord(head: nil, recent: ownAudit.recent.filter { items[$0.sequence] == $0.item })
        if let newest, let body = newest[2].bytes, let signature = newest[3].bytes {
            let entry = try SignedAuditEntry(body: body, signature: signature)
            found.ownAudit.head = RemoteTrust.AuditHead(sequence: entry.sequence, hash: entry.hash)
        }
        guard !kept.auditHeads.isEmpty else { return }
        let heads = kept.auditHeads.sorted { $0.key < $1.key }
        var now: [Int64: RemoteTrust.AuditHead] = [:]
        for row in try execute("""
            SELECT device, body, signature FROM locket.audit
            WHERE (device, seq) IN (SELECT * FROM unnest($1::text::bigint[], $2::text::bigint[]))
            """, [Self.intArray(heads.map(\.key)), Self.intArray(heads.map(\.value.sequence))]) {
            guard let id = row[0].int, let entry = try? SignedAuditEntry(body: row[1].bytes ?? [], signature: row[2].bytes ?? []) else { continue }
            now[id] = RemoteTrust.AuditHead(sequence: entry.sequence, hash: entry.hash)
        }
        for (id, head) in heads {
            if now[id] == head { fresh.auditHeads[id] = head } else { found.lostAudit.append((id, head.sequence)) }
        }
    }

    /// Once the user agreed and the server's history is kept: this device's own chain from where the server holds it.
    func keepRecoveredAudit() {
        guard let found = recovery, let device, let keychainID else { return }
        ownAudit = found.ownAudit
        ownAuditChecked = true
        try? ownAudit.save(keychainID: keychainID, device: device, environment: environment)
    }
}
