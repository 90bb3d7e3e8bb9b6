import Glibc
import LocketSupport

/// A pass (password-store) directory: one gpg-encrypted file per entry,
/// decrypted by the caller (LocketCLI runs the user's gpg as `pass show`
/// does). Mapping rules in Migration.md, "pass".
public enum PassStore {
    /// `PASSWORD_STORE_DIR`, else `~/.password-store`, as pass finds its store.
    public static func defaultDirectory(_ environment: Environment) throws -> String {
        if let dir = try environment["PASSWORD_STORE_DIR"], !dir.isEmpty { return dir }
        guard let home = try environment["HOME"], home.hasPrefix("/") else {
            throw KeychainError(.param, "HOME is not set to an absolute path, and neither is PASSWORD_STORE_DIR")
        }
        return home + "/.password-store"
    }

    /// Walks `directory` (sorted, depth first, hidden names such as `.git`
    /// and `.gpg-id` left out), calls `decrypt` with the full path of each
    /// `NAME.gpg` file, and calls `body` with what each becomes. A file
    /// `decrypt` fails on (it throws an errSecDecode KeychainError whose
    /// message is the reason) is a skipped entry; any other error stops the
    /// walk (gpg can't be run at all); so is a symbolic link, which is not
    /// followed. Duplicates are skipped as in `Migration.read`. errSecParam
    /// when `directory` is not a directory.
    public static func read(directory: String, decrypt: (String) throws -> SecureBytes,
                            _ body: (MigrationEntry) throws -> Void) throws {
        var st = stat()
        guard stat(directory, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw KeychainError(.param, "\(directory) is not a pass store (not a directory)")
        }
        var deduplicator = Migration.Deduplicator()
        var base = directory
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        try walk(base, relative: "", depth: 0) { relative, full in
            let name = String(relative.dropLast(4))
            let content: SecureBytes
            do {
                content = try decrypt(full)
            } catch let error as KeychainError where error.code == .decode {
                try body(.skipped(MigrationSkip(origin: name, reason: error.message)))
                return
            }
            for entry in try entry(name: name, content: content).entries() { try body(deduplicator.check(entry)) }
        } skipped: { relative, reason in
            try body(.skipped(MigrationSkip(origin: relative, reason: reason)))
        }
    }

    private static func walk(_ base: String, relative: String, depth: Int, file: (String, String) throws -> Void,
                             skipped: (String, String) throws -> Void) throws {
        let path = relative.isEmpty ? base : base + "/" + relative
        guard depth < 64 else { return try skipped(relative, "the directory is nested too deeply") }
        let opened = pointerOrErrno("opendir") { opendir(path) }
        guard case .success(let dir) = opened else {
            return try skipped(relative.isEmpty ? "." : relative, "the directory can't be read: \(opened.error!)")
        }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        closedir(dir)
        for name in names.sorted() {
            let child = relative.isEmpty ? name : relative + "/" + name
            var st = stat()
            guard lstat(base + "/" + child, &st) == 0 else { continue }
            switch st.st_mode & S_IFMT {
            case S_IFDIR:
                try walk(base, relative: child, depth: depth + 1, file: file, skipped: skipped)
            case S_IFREG where name.hasSuffix(".gpg") && name.count > 4:
                try file(child, base + "/" + child)
            case S_IFLNK where name.hasSuffix(".gpg"):
                try skipped(String(child.dropLast(4)), "it is a symbolic link, which locket does not follow")
            default:
                continue
            }
        }
    }

    /// What one decrypted entry becomes: `name` is its path in the store
    /// without `.gpg` (`web/github.com/alice`).
    static func entry(name: String, content: SecureBytes) throws -> Login {
        var login = Login(origin: name)
        login.title = Array(name.utf8)
        try content.withUnsafeBytes { r in
            var lines: [Range<Int>] = []
            var i = 0
            while i <= r.count {
                var j = i
                while j < r.count, r[j] != 0x0a { j += 1 }
                var end = j
                if end > i, r[end - 1] == 0x0d { end -= 1 }
                lines.append(i..<end)
                if j >= r.count { break }
                i = j + 1
            }
            login.password = try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: r[lines[0]]))
            var rest = Array(lines.dropFirst())
            while let last = rest.last, last.isEmpty { rest.removeLast() }
            let otpauth = Array("otpauth://".utf8)
            for range in rest {
                let line = UnsafeRawBufferPointer(rebasing: r[range])
                if line.starts(with: otpauth), login.totp == nil {
                    login.totp = try SecureBytes(copying: line)
                    continue
                }
                if let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0, colon < 32 {
                    let key = String(decoding: line[..<colon], as: UTF8.self).lowercased().trimmingSpaces
                    var valueStart = colon + 1
                    while valueStart < line.count, line[valueStart] == 0x20 || line[valueStart] == 0x09 { valueStart += 1 }
                    let value = UnsafeRawBufferPointer(rebasing: line[valueStart...])
                    if ["login", "user", "username"].contains(key), login.username.isEmpty {
                        login.username = Array(value)
                        continue
                    }
                    if ["url", "website"].contains(key), login.urls.isEmpty {
                        login.urls = [Array(value)]
                        continue
                    }
                    if ["otpauth", "totp", "otp"].contains(key), login.totp == nil, value.starts(with: otpauth) {
                        login.totp = try SecureBytes(copying: value)
                        continue
                    }
                }
                login.comment.append(Array(line))
            }
        }
        let components = name.split(separator: "/", omittingEmptySubsequences: false)
        if !login.username.isEmpty {
            login.service = Array(name.utf8)
        } else if components.count >= 2 {
            login.service = Array(components.dropLast().joined(separator: "/").utf8)
            login.username = Array(components.last!.utf8)
        } else {
            login.service = Array(name.utf8)
        }
        return login
    }
}
