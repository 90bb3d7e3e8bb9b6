import LocketCore
import LocketSupport

/// A revocation this device performed or verified (issue 42): kept in its
/// trust record whatever history the server shows later, so that a
/// failover or a restore that loses the revocation can't quietly approve
/// the device again. A membership in which the device is approved again
/// (same keys), or in which the groups it held still have the key it held,
/// is refused until it is revoked again (RemoteStore+Trust).
struct KeptRevocation: Equatable {
    /// A group the device held when it was revoked, at the generation whose key it held.
    struct HeldGroup: Equatable {
        let name: String
        let generation: Int64
    }

    let device: Int64
    let encryptionKey: [UInt8]
    let signingKey: [UInt8]
    /// The epoch that revoked it, in the history this device saw, and who signed that epoch.
    let epoch: Int64
    let signer: Int64
    /// nil: not known (a trust record kept before issue 42 names only the revoked keys).
    let groups: [HeldGroup]?

    /// Whether `roster` lets this device back in: it is approved there with
    /// the keys it had, or (absent there, its approval and revocation both
    /// lost) a group it held is still at the generation whose key it kept.
    func isLost(in roster: Roster) -> Bool {
        if let now = roster.device(device), now.encryptionKey == encryptionKey, now.signingKey == signingKey {
            return now.revokedAt == 0
        }
        return staleGroups(in: roster).isEmpty == false
    }

    /// The groups it held whose key in `roster` is still the one it held.
    func staleGroups(in roster: Roster) -> [String] {
        (groups ?? []).compactMap { held in roster.group(held.name).flatMap { $0.generation <= held.generation ? held.name : nil } }
    }
}

/// The newest links of each chain this device saw (issue 42), kept in its
/// trust record so that `keychain recover` can say which ones a server no
/// longer holds, who signed them, what a lost membership epoch changed, and
/// which items this device itself changed in a lost state (by reference:
/// names are sealed and stay so). Bounded: the newest `epochLimit` epochs
/// and `stateLimit` states.
struct RemoteJournal: Equatable {
    struct Link: Equatable {
        /// The epoch or the sequence number.
        let number: Int64
        let hash: [UInt8]
        /// The device that signed it.
        let signer: Int64
        /// An epoch: what it changed ("revoked device 3"). A state: nothing.
        var notes: [String]
        /// A state this device wrote: the references of the items it added,
        /// changed or deleted (at most `refLimit`; `moreRefs` counts the rest).
        var refs: [[UInt8]]
        var moreRefs: Int64
    }

    var epochs: [Link] = []
    var states: [Link] = []

    static let epochLimit = 64
    static let stateLimit = 256
    static let refLimit = 32

    mutating func record(epoch link: Link) { Self.append(link, to: &epochs, limit: Self.epochLimit) }
    mutating func record(state link: Link) { Self.append(link, to: &states, limit: Self.stateLimit) }

    private static func append(_ link: Link, to links: inout [Link], limit: Int) {
        // A link seen again (another command of this device) is the same link; a new one at that number replaces it (after a recovery).
        links.removeAll { $0.number >= link.number }
        links.append(link)
        if links.count > limit { links.removeFirst(links.count - limit) }
    }

    /// What `previous` -> `next` changed, in words for the recovery's report.
    static func changes(from previous: Roster?, to next: Roster) -> [String] {
        guard let previous else { return ["made the keychain"] }
        var notes: [String] = []
        for device in next.devices {
            let before = previous.device(device.id)
            if before == nil && device.revokedAt == 0 { notes.append("approved device \(device.id)") }
            if let before, before.revokedAt == 0, device.revokedAt != 0 { notes.append("revoked device \(device.id)") }
        }
        for group in next.groups {
            let name = Printable.clip(group.name)
            guard let before = previous.group(group.name) else { notes.append("made group \(name)"); continue }
            for member in group.members where !before.members.contains(member) && previous.device(member) != nil {
                notes.append("granted group \(name) to device \(member)")
            }
            if group.generation > before.generation && !notes.contains(where: { $0.hasPrefix("revoked") }) {
                notes.append("gave group \(name) a new key")
            }
        }
        return notes
    }

    func encode(into w: inout RecordWriter) {
        for links in [epochs, states] {
            w.int(Int64(links.count))
            for link in links {
                w.int(link.number)
                w.data(link.hash)
                w.int(link.signer)
                w.int(Int64(link.notes.count))
                for note in link.notes { w.string(note) }
                w.int(Int64(link.refs.count))
                for ref in link.refs { w.data(ref) }
                w.int(link.moreRefs)
            }
        }
    }

    static func decode(_ r: inout RecordReader) throws -> RemoteJournal {
        var journal = RemoteJournal()
        for index in 0..<2 {
            var links: [Link] = []
            for _ in 0..<(try r.count(limit: max(epochLimit, stateLimit))) {
                let number = try r.int(), hash = try r.data(exactly: 32), signer = try r.int()
                var notes: [String] = []
                for _ in 0..<(try r.count(limit: 1 << 12)) { notes.append(try r.string()) }
                var refs: [[UInt8]] = []
                for _ in 0..<(try r.count(limit: refLimit)) { refs.append(try r.data(limit: 64)) }
                links.append(Link(number: number, hash: hash, signer: signer, notes: notes, refs: refs, moreRefs: try r.int()))
            }
            if index == 0 { journal.epochs = links } else { journal.states = links }
        }
        return journal
    }
}

extension KeptRevocation {
    func encode(into w: inout RecordWriter) {
        w.int(device)
        w.data(encryptionKey)
        w.data(signingKey)
        w.int(epoch)
        w.int(signer)
        w.int(groups.map { Int64($0.count) } ?? -1)
        for group in groups ?? [] {
            w.string(group.name)
            w.int(group.generation)
        }
    }

    static func decode(_ r: inout RecordReader) throws -> KeptRevocation {
        let device = try r.int(), encryption = try r.data(exactly: 32), signing = try r.data(exactly: 32)
        let epoch = try r.int(), signer = try r.int()
        let count = try r.int()
        var groups: [HeldGroup]?
        if count >= 0 {
            guard count <= 1 << 16 else { throw KeychainError(.decode, "this device's trust record is malformed") }
            groups = try (0..<count).map { _ in HeldGroup(name: try r.string(), generation: try r.int()) }
        }
        return KeptRevocation(device: device, encryptionKey: encryption, signingKey: signing, epoch: epoch, signer: signer, groups: groups)
    }
}
