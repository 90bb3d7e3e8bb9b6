import Glibc
import LocketSupport

/// `enable` and `disable`: locket's files written, and what was at their
/// paths before set aside and put back. The record of what was set aside is
/// `paths.state/record` (one line per path: the path, then `absent`, `file
/// NAME` with NAME its copy in `paths.state`, or `link TARGET`), written
/// before anything is moved, so an `enable` killed half-way is still undone
/// by `disable`.
extension ProviderActivation {
    /// What `enable` or `disable` did to one path.
    public enum Change: Sendable, Equatable {
        case wrote(String)
        /// Not locket's, moved aside (enable --force) to be put back by disable.
        case setAside(String)
        case removed(String)
        case putBack(String)
        /// Changed by someone else since `enable`: left as it is.
        case leftAlone(String, why: String)
    }

    /// Writes `files(command:)`. A path that holds something not locket's is
    /// refused (errSecDuplicateItem, nothing written) unless `force`, which
    /// sets it aside first.
    public func enable(command: [String], force: Bool) throws -> [Change] {
        let files = files(command: command)
        var record = try readRecord()
        // Every refusal before anything changes.
        for file in files where !force {
            if case .other(let kind) = Self.state(of: file.path) {
                throw KeychainError(.duplicateItem, "\(file.path) is already there and is not locket's (\(kind)); nothing was changed",
                                    reason: .notLocketsFile(path: file.path))
            }
        }
        try FileIO.makeDirectories(paths.state)
        var changes: [Change] = []
        for file in files {
            switch Self.state(of: file.path) {
            case .other:
                // What is there now is what disable puts back: a file that
                // replaced locket's since an earlier enable supersedes what
                // that enable set aside.
                let earlier = record[file.path]
                record[file.path] = try setAside(file.path, record: record)
                if case .file(let name)? = earlier { unlink(paths.state + "/" + name) }
                changes.append(.setAside(file.path))
            case .absent, .locket:
                guard record[file.path] == nil else { continue }
                record[file.path] = .absent
            }
            try writeRecord(record)
        }
        for file in files {
            try FileIO.makeDirectories(FileIO.directory(of: file.path))
            try Array(file.contents.utf8).withUnsafeBytes { try FileIO.writeAtomically(file.path, $0) }
            changes.append(.wrote(file.path))
        }
        return changes
    }

    /// Removes locket's files and puts back what `enable` set aside. A path
    /// changed since (not locket's any more) is left as it is, its original
    /// kept in the record for a later `disable`.
    public func disable() throws -> [Change] {
        var record = try readRecord()
        // Files of the switch the record lacks (it was removed) are still locket's by their marker.
        var targets = Array(record.keys).sorted()
        for file in files(command: ["locket"]) where record[file.path] == nil {
            targets.append(file.path)
        }
        var changes: [Change] = []
        for path in targets {
            switch Self.state(of: path) {
            case .locket:
                try nothingOrErrno("unlink") { unlink(path) }.get { KeychainError(.io, "cannot remove \(path): \($0)") }
                changes.append(.removed(path))
            case .other(let kind):
                if case .absent? = record[path] {
                    changes.append(.leftAlone(path, why: "\(kind) not locket's, made since enable"))
                    record[path] = nil
                } else if record[path] != nil {
                    changes.append(.leftAlone(path, why: "\(kind) not locket's; what enable set aside stays in \(self.paths.state)"))
                }
                continue
            case .absent:
                break
            }
            guard let original = record[path] else { continue }
            try putBack(original, at: path)
            if original != .absent { changes.append(.putBack(path)) }
            record[path] = nil
            try writeRecord(record)
        }
        if record.isEmpty {
            unlink(recordPath)
            rmdir(self.paths.state)
        }
        return changes
    }

    // MARK: - The record

    enum Original: Equatable {
        case absent
        case file(String)
        case link(String)
    }

    private var recordPath: String { paths.state + "/record" }

    func readRecord() throws -> [String: Original] {
        guard let bytes = try FileIO.readSmall(recordPath, limit: 1 << 20) else { return [:] }
        var record: [String: Original] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 2, fields[0].hasPrefix("/") else {
                throw KeychainError(.decode, "\(recordPath) is damaged: remove it once the files it names are as they should be")
            }
            switch (fields[1], fields.count == 3 ? fields[2] : nil) {
            case ("absent", _): record[fields[0]] = .absent
            case ("file", let name?) where !name.contains("/"): record[fields[0]] = .file(name)
            case ("link", let target?): record[fields[0]] = .link(target)
            default: throw KeychainError(.decode, "\(recordPath) is damaged: remove it once the files it names are as they should be")
            }
        }
        return record
    }

    private func writeRecord(_ record: [String: Original]) throws {
        var text = ""
        for (path, original) in record.sorted(by: { $0.key < $1.key }) {
            switch original {
            case .absent: text += "\(path)\tabsent\n"
            case .file(let name): text += "\(path)\tfile\t\(name)\n"
            case .link(let target): text += "\(path)\tlink\t\(target)\n"
            }
        }
        try Array(text.utf8).withUnsafeBytes { try FileIO.writeAtomically(recordPath, $0) }
    }

    /// Moves what is at `path` into the state directory (copied when it is
    /// on another file system); a link is recorded by its target.
    private func setAside(_ path: String, record: [String: Original]) throws -> Original {
        guard !path.contains("\n") && !path.contains("\t") else { throw KeychainError(.param, "\(path): a path with a tab or a line break") }
        var st = stat()
        try nothingOrErrno("lstat") { lstat(path, &st) }.get { KeychainError(.io, "cannot examine \(path): \($0)") }
        if st.st_mode & S_IFMT == S_IFLNK {
            guard let target = readLink(path), !target.contains("\n") else { throw KeychainError(.io, "cannot read the link \(path)") }
            try nothingOrErrno("unlink") { unlink(path) }.get { KeychainError(.io, "cannot set aside \(path): \($0)") }
            return .link(target)
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw KeychainError(.io, "\(path) is \(PrivateFile.kindName(st.st_mode)); locket sets aside only files and links")
        }
        var n = record.count
        while FileIO.exists(paths.state + "/saved.\(n)") { n += 1 }
        let name = "saved.\(n)"
        let saved = paths.state + "/" + name
        if rename(path, saved) != 0 {
            guard errno == EXDEV, let bytes = try FileIO.readSmall(path, limit: 1 << 24) else {
                throw KeychainError(.io, "cannot set aside \(path): \(Errno(errno))")
            }
            try bytes.withUnsafeBytes { try FileIO.writeNew(saved, $0) }
            chmod(saved, st.st_mode & 0o7777)
            try nothingOrErrno("unlink") { unlink(path) }.get { KeychainError(.io, "cannot set aside \(path): \($0)") }
        }
        return .file(name)
    }

    /// Puts `original` back at `path`, where nothing is now.
    private func putBack(_ original: Original, at path: String) throws {
        switch original {
        case .absent:
            return
        case .link(let target):
            try FileIO.makeDirectories(FileIO.directory(of: path))
            try nothingOrErrno("symlink") { symlink(target, path) }.get { KeychainError(.io, "cannot put back the link \(path): \($0)") }
        case .file(let name):
            let saved = paths.state + "/" + name
            try FileIO.makeDirectories(FileIO.directory(of: path))
            if rename(saved, path) != 0 {
                var st = stat()
                guard errno == EXDEV, stat(saved, &st) == 0, let bytes = try FileIO.readSmall(saved, limit: 1 << 24) else {
                    throw KeychainError(.io, "cannot put back \(path) from \(saved): \(Errno(errno))")
                }
                try bytes.withUnsafeBytes { try FileIO.writeNew(path, $0) }
                chmod(path, st.st_mode & 0o7777)
                unlink(saved)
            }
        }
    }
}
