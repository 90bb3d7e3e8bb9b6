import Foundation

// Issue 30 item 2: every crash state a power loss could leave, built from
// the files as they were before a recorded command and its disk operations.
//
// The model (docs/RELIABILITY.md, "Power loss"):
// - A crash point is the instant before a sync returns (every operation
//   before it was issued; the sync may or may not have done its work), and
//   the end, after every process exited: nothing can be lost between two
//   syncs that is not also lost just before the second.
// - Data: a write to a file is on disk for sure once a later fsync or
//   fdatasync of that file returned; any other write issued before the crash
//   may or may not be, each on its own (page write-back has no order), and
//   one of them may be torn: only some of its 512-byte sectors written.
//   Later writes are laid over earlier ones only where both were kept, so a
//   later write kept and an earlier one lost is a state too (pessimistic:
//   the page cache would often write both or neither).
// - Metadata (create, link, rename, unlink, ftruncate, mkdir, rmdir) is kept
//   in the order it was issued, a prefix of it (a journaling file system
//   commits it in order). "Strict" (POSIX): a name is on disk for sure only
//   after an fsync of its directory, a file's size after an fsync or
//   fdatasync of the file. "ext4" (data=ordered, the default): any fsync, and
//   an fdatasync of a file whose size changed, commits the journal, that is
//   every metadata operation before it; a rename over an existing file
//   (auto_da_alloc) commits only with the renamed file's data. Every ext4
//   state is a strict state: the states are enumerated under strict rules
//   and each is marked whether ext4 could leave it.
// - The state files in XDG_RUNTIME_DIR (the session) are on a tmpfs: a
//   power loss empties them, as a reboot does.

/// One state a power loss could leave.
struct CrashState: Hashable {
    /// Operations before this index were issued (a sync at it had not returned).
    var point: Int
    /// How many of the metadata operations issued reached the disk (a prefix).
    var metadata: Int
    /// The writes kept beyond those a sync made sure of (operation indices).
    var writes: Set<Int>
    /// One of them kept only in part: the sectors kept (by index in the write).
    var torn: Torn?
    /// Whether ext4 (data=ordered) could leave it too, not only a strict POSIX file system.
    var ext4: Bool

    struct Torn: Hashable {
        var operation: Int
        var sectors: [Bool]
    }
}

final class PowerLossReplayer {
    static let sector = 512

    let recording: PowerLossRecording
    private let operations: [DiskOperation]
    /// The position of each metadata operation among them (by operation index).
    private let metadataOrdinal: [Int: Int]
    /// What a crash at each crash point must have kept.
    private var required: [Int: Requirements] = [:]

    /// What a crash must have kept: the writes a sync made sure of, and how
    /// many metadata operations (a prefix) under strict and under ext4 rules.
    private struct Requirements {
        var writes: Set<Int> = []
        var metadata = 0
        var ext4Metadata = 0
    }

    init(_ recording: PowerLossRecording) {
        self.recording = recording
        operations = recording.operations.map(\.operation)
        var ordinal: [Int: Int] = [:]
        var current = Requirements()
        var unsynced: [Int: [Int]] = [:]
        var lastTruncate: [Int: Int] = [:]
        var lastName: [String: Int] = [:]
        for (index, operation) in operations.enumerated() {
            if operation.isSync { required[index] = current }
            switch operation {
            case .write(let inode, _, _):
                unsynced[inode, default: []].append(index)
            case .truncate(let inode, _):
                lastTruncate[inode] = ordinal.count
            case .sync(let inode, let dataOnly, let sizeChanged):
                current.writes.formUnion(unsynced.removeValue(forKey: inode) ?? [])
                if let truncate = lastTruncate[inode] { current.metadata = max(current.metadata, truncate + 1) }
                if !dataOnly || sizeChanged { current.ext4Metadata = ordinal.count }
            case .syncDirectory(let directory):
                if let name = lastName[directory] { current.metadata = max(current.metadata, name + 1) }
                current.ext4Metadata = ordinal.count
            default:
                break
            }
            for name in Self.names(operation) { lastName[Self.parent(name)] = ordinal.count }
            if operation.isMetadata { ordinal[index] = ordinal.count }
            current.ext4Metadata = max(current.ext4Metadata, current.metadata)
        }
        required[operations.count] = current
        metadataOrdinal = ordinal
    }

    /// Every sync, then the end.
    var crashPoints: [Int] { operations.indices.filter { operations[$0].isSync } + [operations.count] }

    /// The programs (argv after the executable) that had exited before `point`, with their status.
    func exited(before point: Int) -> [(program: [String], status: Int32?)] {
        recording.operations[..<point].compactMap {
            if case .exit(_, let status, let program) = $0.operation, !program.isEmpty { return (program, status) }
            return nil
        }
    }

    /// The states a power loss at `point` could leave: all of them when
    /// there are at most `budget`, else `budget` drawn at random (the two
    /// extremes always among them). Returns how many there are in all.
    func states(at point: Int, budget: Int, random: inout ReliabilityRandom) -> (total: Double, states: [CrashState]) {
        let required = self.required[point]!
        let issuedMetadata = (0..<point).filter { operations[$0].isMetadata }.count
        let optional = (0..<point).filter { index in
            if case .write = operations[index] { return !required.writes.contains(index) }
            return false
        }
        let prefixes = Array(required.metadata...issuedMetadata)
        // The last write issued, torn: each proper, non-empty subset of its sectors.
        let last = optional.last
        let sectors = last.map { sectorRanges(of: $0).count } ?? 0
        let tornVariants = sectors > 1 ? min(62, (1 << min(sectors, 20)) - 2) : 0
        let whole = Double(prefixes.count) * pow(2, Double(optional.count))
        let total = whole + Double(prefixes.count) * Double(tornVariants)
        func make(_ metadata: Int, _ writes: Set<Int>, _ torn: CrashState.Torn?) -> CrashState {
            var state = CrashState(point: point, metadata: metadata, writes: writes, torn: torn, ext4: false)
            state.ext4 = ext4Allows(state, required: required)
            return state
        }
        var out: [CrashState] = []
        if total <= Double(budget) {
            for metadata in prefixes {
                for mask in 0..<(1 << optional.count) {
                    out.append(make(metadata, Set(optional.indices.filter { mask & (1 << $0) != 0 }.map { optional[$0] }), nil))
                }
                if let last, tornVariants > 0 {
                    let all = Set(optional)
                    for mask in tornMasks(sectors, tornVariants, &random) {
                        out.append(make(metadata, all, CrashState.Torn(operation: last, sectors: mask)))
                    }
                }
            }
            return (total, out)
        }
        var seen: Set<CrashState> = []
        for state in [make(prefixes.first!, [], nil), make(prefixes.last!, Set(optional), nil)] where seen.insert(state).inserted {
            out.append(state)
        }
        var attempts = 0
        while out.count < budget && attempts < budget * 20 {
            attempts += 1
            let metadata = prefixes[Int(random.next() % UInt64(prefixes.count))]
            let writes = Set(optional.filter { _ in random.next() & 1 == 1 })
            var torn: CrashState.Torn?
            if random.next() % 4 == 0, let victim = writes.sorted().randomElement(using: &random) {
                // Sorted: a Set's order changes from run to run, and LOCKET_SEED must replay the same states.
                let count = sectorRanges(of: victim).count
                if count > 1 {
                    torn = CrashState.Torn(operation: victim, sectors: tornMasks(count, 1, &random)[0])
                }
            }
            let state = make(metadata, writes, torn)
            if seen.insert(state).inserted { out.append(state) }
        }
        return (total, out)
    }

    /// `count` distinct proper non-empty subsets of `sectors` sectors (all of them when that many exist).
    private func tornMasks(_ sectors: Int, _ count: Int, _ random: inout ReliabilityRandom) -> [[Bool]] {
        if sectors < 7 {
            return (1..<((1 << sectors) - 1)).prefix(count).map { mask in (0..<sectors).map { mask & (1 << $0) != 0 } }
        }
        var out: [[Bool]] = []
        while out.count < count {
            let mask = (0..<sectors).map { _ in random.next() & 1 == 1 }
            if mask.contains(true) && mask.contains(false) && !out.contains(mask) { out.append(mask) }
        }
        return out
    }

    private func ext4Allows(_ state: CrashState, required: Requirements) -> Bool {
        guard state.metadata >= required.ext4Metadata else { return false }
        // auto_da_alloc: a rename over an existing file is committed with the renamed file's data.
        for (index, ordinal) in metadataOrdinal where index < state.point && ordinal < state.metadata {
            guard case .rename(_, _, let inode?, true) = operations[index] else { continue }
            for earlier in 0..<index {
                guard case .write(inode, _, _) = operations[earlier] else { continue }
                if !required.writes.contains(earlier) && (!state.writes.contains(earlier) || state.torn?.operation == earlier) { return false }
            }
        }
        return true
    }

    /// The byte ranges of a write split at the file's 512-byte sector boundaries.
    private func sectorRanges(of index: Int) -> [Range<Int>] {
        guard case .write(_, let offset, let bytes) = operations[index] else { return [] }
        var out: [Range<Int>] = []
        var start = offset
        while start < offset + bytes.count {
            let end = min(offset + bytes.count, (start / Self.sector + 1) * Self.sector)
            out.append((start - offset)..<(end - offset))
            start = end
        }
        return out
    }

    /// The files `state` leaves: the files before, with what it kept laid over them in the order issued.
    func tree(for state: CrashState) -> FileTree {
        let required = self.required[state.point]!
        var contents: [Int: [UInt8]] = [:]
        var names: [String: Int] = recording.inodes
        for (path, inode) in recording.inodes { contents[inode] = recording.before.files[path]! }
        var directories = recording.before.directories
        for index in 0..<state.point {
            let operation = operations[index]
            if operation.isMetadata && metadataOrdinal[index]! >= state.metadata { continue }
            switch operation {
            case .write(let inode, let offset, let bytes):
                guard required.writes.contains(index) || state.writes.contains(index) else { continue }
                var ranges = [0..<bytes.count]
                if let torn = state.torn, torn.operation == index {
                    ranges = zip(sectorRanges(of: index), torn.sectors).filter { $0.1 }.map { $0.0 }
                }
                var content = contents[inode] ?? []
                for range in ranges {
                    if content.count < offset + range.upperBound {
                        content += [UInt8](repeating: 0, count: offset + range.upperBound - content.count)
                    }
                    content.replaceSubrange((offset + range.lowerBound)..<(offset + range.upperBound), with: bytes[range])
                }
                contents[inode] = content
            case .truncate(let inode, let size):
                var content = contents[inode] ?? []
                if content.count > size { content.removeSubrange(size...) } else { content += [UInt8](repeating: 0, count: size - content.count) }
                contents[inode] = content
            case .create(let path, let inode):
                names[path] = inode
                contents[inode] = contents[inode] ?? []
            case .link(let inode, let path):
                names[path] = inode
            case .rename(let from, let to, let inode, _):
                if let inode {
                    names[from] = nil
                    names[to] = inode
                } else {
                    directories.remove(from)
                    directories.insert(to)
                    for (path, inode) in names where path.hasPrefix(from + "/") {
                        names[path] = nil
                        names[to + path.dropFirst(from.count)] = inode
                    }
                }
            case .unlink(let path):
                names[path] = nil
            case .makeDirectory(let path):
                directories.insert(path)
            case .removeDirectory(let path):
                directories.remove(path)
            default:
                break
            }
        }
        // A file whose directory is not there has no name.
        var tree = FileTree(directories: directories)
        for (path, inode) in names where directories.contains(Self.parent(path)) || recording.roots.contains(Self.parent(path)) {
            tree.files[path] = contents[inode] ?? []
        }
        return tree
    }

    /// Every operation kept, as the command left the files: must equal `recording.after`.
    var completed: FileTree {
        let end = operations.count
        let writes = Set((0..<end).filter { if case .write = operations[$0] { return true } else { return false } })
        return tree(for: CrashState(point: end, metadata: metadataOrdinal.count, writes: writes, torn: nil, ext4: true))
    }

    static func parent(_ path: String) -> String { String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }

    /// The names a metadata operation changes.
    static func names(_ operation: DiskOperation) -> [String] {
        switch operation {
        case .create(let path, _), .link(_, let path), .unlink(let path), .makeDirectory(let path), .removeDirectory(let path): return [path]
        case .rename(let from, let to, _, _): return [from, to]
        default: return []
        }
    }
}
