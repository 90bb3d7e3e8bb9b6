import Glibc
import LocketCore
import LocketSupport

extension Commands {
    /// `locket export --format backup`: every item the caller may see but
    /// the ThisDeviceOnly ones, streamed into a backup (BackupFormat.md).
    static func export(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        guard let format = invocation.value("format") else { throw UsageError(message: "export needs --format backup (or pem, der, openssh, pkcs12, tss2)", command: "export") }
        if ["pem", "der", "openssh", "pkcs12", "tss2"].contains(format) { return try exportKeyItem(format, invocation, context) }
        guard format == "backup" else { throw UsageError(message: "--format must be backup, pem, der, openssh, pkcs12 or tss2", command: "export") }
        for option in ["class", "label", "tag", "hash", "ref", "access-group"] where invocation.has(option) {
            throw UsageError(message: "--\(option) picks one item to export as pem, der, openssh, pkcs12 or tss2; a backup holds every item", command: "export")
        }
        for option in ["prompt", "application-password-stdin"] where invocation.has(option) {
            throw UsageError(message: "--\(option) is for a key or identity with access control; a backup leaves such items out", command: "export")
        }
        if invocation.has("force") && !invocation.has("out") {
            throw UsageError(message: "-f/--force needs -o/--out", command: "export")
        }
        let recipients = try invocation.all("recipient").map(BackupKeys.publicKey)
        if !recipients.isEmpty {
            for option in ["passphrase-stdin", "kdf"] where invocation.has(option) {
                throw UsageError(message: "--\(option) is for a passphrase backup, not one with --recipient", command: "export")
            }
        }
        let output = invocation.value("out")
        if let output, !invocation.has("force"), OutputFile.exists(output) {
            throw KeychainError(.param, "\(output) exists; locket does not replace it", hint: "add -f/--force to replace it")
        }
        if output == nil && Prompt.isTerminal(1) {
            throw KeychainError(.param, "a backup is binary and is not written to a terminal", hint: "add -o FILE, or redirect standard output")
        }
        let cost = try invocation.value("kdf").map { try KDFLevel.parse($0, command: "export").cost } ?? context.io.defaultKDF ?? .moderate
        let keychain = try context.openKeychain(keepsFileOpen: false)
        // Asked before anything is written: a mistyped passphrase leaves no file.
        let passphrase = recipients.isEmpty
            ? try Prompt.password(context, prompt: "Passphrase for the backup: ", confirm: true, fromStdin: invocation.has("passphrase-stdin"))
            : nil
        var leftOut = 0
        var nonExtractable = 0
        var damaged = 0
        var withAccessControl = 0
        var refused: [(ref: [UInt8], why: String)] = []
        func write(_ fd: Int32) throws {
            let writer = try passphrase.map { try BackupWriter(fd: fd, passphrase: $0, cost: cost) }
                ?? BackupWriter(fd: fd, recipients: recipients)
            try keychain.dump(returnData: true) { item in
                guard item.availability != .damaged else { damaged += 1; return }
                guard !item.accessible.thisDeviceOnly else { leftOut += 1; return }
                guard item.isExtractable else { nonExtractable += 1; return }
                // Their secrets open only with a proof a backup can't carry (SPEC §14).
                guard item.accessControl == nil else { withAccessControl += 1; return }
                guard let data = item.data else { damaged += 1; return }
                let record = BackupRecord(item: item, data: data)
                // One item stored before its sizes were checked must not cost the whole backup.
                if let why = record.whyNotBackedUp {
                    refused.append((item.persistentRef, why))
                    return
                }
                try writer.append(record)
            }
            guard damaged == 0 else {
                throw KeychainError(.decode, "\(damaged) item\(damaged == 1 ? "" : "s") could not be opened (altered or moved); no backup was written")
            }
            try writer.finish()
            if leftOut > 0 {
                context.warn("\(leftOut) ThisDeviceOnly item\(leftOut == 1 ? " was" : "s were") left out: \(leftOut == 1 ? "it never leaves" : "they never leave") this device")
            }
            if nonExtractable > 0 {
                context.warn("\(nonExtractable) non-extractable key\(nonExtractable == 1 ? " was" : "s were") left out: \(nonExtractable == 1 ? "it never leaves" : "they never leave") the keychain")
            }
            if withAccessControl > 0 {
                context.warn("\(withAccessControl) item\(withAccessControl == 1 ? " with access control was" : "s with access control were") left out")
            }
            for (ref, why) in refused.prefix(10) {
                context.warn("the item \(Hex.encode(ref)) was left out: \(why) (locket find --ref \(Hex.encode(ref)))")
            }
            if refused.count > 10 { context.warn("\(refused.count - 10) more items were left out for the same reasons") }
            context.err("locket: exported \(writer.count) item\(writer.count == 1 ? "" : "s")")
        }
        if let output {
            try OutputFile.stream(output, replace: invocation.has("force"), write)
        } else {
            context.out.flush()
            try write(1)
        }
        return 0
    }

    /// `locket import FILE` (a backup, told by its magic) or `import --from FORMAT FILE|DIR`.
    static func importItems(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        guard invocation.operands.count <= 1 else { throw UsageError(message: "import takes one FILE", command: "import") }
        let path = invocation.operands.first
        if let name = invocation.value("from") {
            guard let format = MigrationFormat(rawValue: name) else {
                throw UsageError(message: "--from must be one of " + MigrationFormat.allCases.map(\.rawValue).joined(with: ", "), command: "import")
            }
            for option in ["passphrase-stdin", "identity"] + keyFileOptions where invocation.has(option) {
                throw UsageError(message: "--\(option) is for a locket backup or a key file, not --from", command: "import")
            }
            return try migrate(format, path, invocation, context)
        }
        guard let path else { throw UsageError(message: "import needs a FILE (a locket backup), or --from FORMAT", command: "import") }
        let fd = try openInput(path, context)
        defer { if fd != context.io.stdin { close(fd) } }
        if invocation.has("format") {
            return try importKeyFile(try Prompt.readAll(fd, what: path, limit: KeyImport.maximumInputLength), path, invocation, context)
        }
        // The file's first bytes say what it is: a backup (its magic), else a key file (PKCS#12, PEM, DER, OpenSSH).
        var prefix = [UInt8](repeating: 0, count: BackupReader.magic.count)
        let got = path == "-" ? readPrefix(fd, &prefix) : pread(fd, &prefix, prefix.count, 0)
        if got == prefix.count && prefix == BackupReader.magic {
            for option in keyFileOptions where invocation.has(option) {
                throw UsageError(message: "--\(option) is for a key file; \(path) is a locket backup", command: "import")
            }
            return try restore(path == "-" ? try BackupReader(fd: fd, prefix: prefix) : try BackupReader(fd: fd), path, invocation, context)
        }
        let rest = try Prompt.readAll(fd, what: path, limit: KeyImport.maximumInputLength)
        let data = path == "-" ? try joined(Array(prefix.prefix(max(got, 0))), rest) : rest
        guard KeyImport.detectFormat(data) != nil else {
            throw KeychainError(.decode, "\(path) is not a locket backup or a key file (PKCS#12, PEM, DER, OpenSSH)",
                                hint: "for another tool's export, name its format with --from " + MigrationFormat.allCases.map(\.rawValue).joined(with: "|"))
        }
        return try importKeyFile(data, path, invocation, context)
    }

    /// Reads up to `prefix.count` bytes of standard input, which can't be peeked at.
    private static func readPrefix(_ fd: Int32, _ prefix: inout [UInt8]) -> Int {
        var got = 0
        while got < prefix.count,
              case .success(let n) = prefix.withUnsafeMutableBytes({ raw in valueOrErrno("read") { read(fd, raw.baseAddress! + got, raw.count - got) } }),
              n > 0 {
            got += n
        }
        return got
    }

    private static func joined(_ head: [UInt8], _ rest: SecureBytes) throws -> SecureBytes {
        let out = try SecureBytes(count: head.count + rest.count)
        out.withUnsafeMutableBytes { o in
            rest.withUnsafeBytes { r in
                for (i, b) in head.enumerated() { o[i] = b }
                if r.count > 0 { (o.baseAddress! + head.count).copyMemory(from: r.baseAddress!, byteCount: r.count) }
            }
        }
        return out
    }

    /// A backup into the keychain, in one transaction committed only after the backup verified whole.
    private static func restore(_ reader: BackupReader, _ path: String, _ invocation: Invocation, _ context: Context) throws -> Int32 {
        let keychain = try context.openKeychain(keepsFileOpen: false)
        switch reader.protection {
        case .passphrase:
            if invocation.has("identity") {
                throw KeychainError(.param, "\(path) is protected by a passphrase, not sealed to recipients", hint: "leave out --identity")
            }
            if path == "-" && invocation.has("passphrase-stdin") {
                throw UsageError(message: "--passphrase-stdin can't be used with a backup on standard input", command: "import")
            }
            // Standard input is the backup: a passphrase "read from stdin" would be the backup's own bytes.
            if path == "-" {
                throw KeychainError(.interactionNotAllowed, "the backup is on standard input, so its passphrase can't be read there",
                                    hint: "name the backup as a FILE; its passphrase then comes from the terminal, or from standard input with --passphrase-stdin")
            }
            let passphrase = try Prompt.password(context, prompt: "Passphrase of \(path): ", confirm: false,
                                                 fromStdin: invocation.has("passphrase-stdin"))
            try reader.open(passphrase: passphrase)
        case .recipients:
            guard let identity = invocation.value("identity") else {
                throw KeychainError(.param, "\(path) is sealed to recipients", hint: "name your X25519 secret key with --identity FILE")
            }
            try reader.open(secretKey: try BackupKeys.secretKey(identity))
        }
        var report = ImportReport()
        try keychain.importItems(updateExisting: invocation.has("update"), next: {
            guard let record = try reader.next() else { return nil }
            for code in record.skippedAttributeCodes {
                report.notes.append(("record \(reader.count)", "its attribute '\(code)' is unknown to this locket and was left out"))
            }
            return ImportedItem(record)
        }, outcome: { item, outcome in report.count(item, outcome) })
        report.print(context)
        return 0
    }

    /// Another tool's export: read whole (it is bounded), then added in one transaction.
    private static func migrate(_ format: MigrationFormat, _ path: String?, _ invocation: Invocation, _ context: Context) throws -> Int32 {
        // Secrets wait in a pool, not one guarded mapping each: a vault of
        // 100,000 logins would pass the kernel's limit on mappings.
        var items: [MigratedItem] = []
        let secrets = SecureBytesPool()
        var report = ImportReport()
        let collect: (MigrationEntry) throws -> Void = { entry in
            switch entry {
            case .item(let m):
                items.append(MigratedItem(itemClass: m.itemClass, attributes: m.attributes,
                                          creationDate: m.creationDate, modificationDate: m.modificationDate))
                try secrets.append(m.data)
                report.origins.append(m.origin)
            case .skipped(let skip):
                report.skipped.append((skip.origin, skip.reason))
            }
        }
        let keychain = try context.openKeychain(keepsFileOpen: false)
        if format == .pass {
            let directory = try path ?? PassStore.defaultDirectory(context.environment)
            let gpg = try GPGDecrypt(environment: context.environment) { output in
                context.err(String(decoding: output, as: UTF8.self).split(separator: "\n").map { "gpg: \($0)" }.joined(separator: "\n"))
            }
            try PassStore.read(directory: directory, decrypt: gpg.decrypt, collect)
        } else {
            guard let path else { throw UsageError(message: "import --from \(format.rawValue) needs the export FILE", command: "import") }
            let fd = try openInput(path, context)
            defer { if fd != context.io.stdin { close(fd) } }
            let input = try Prompt.readAll(fd, what: path, limit: Migration.maximumInputLength)
            try Migration.read(format, input, collect)
        }
        var index = 0
        var told = 0
        try keychain.importItems(updateExisting: invocation.has("update"), next: {
            guard index < items.count else { return nil }
            defer { index += 1 }
            let m = items[index]
            return ImportedItem(itemClass: m.itemClass, attributes: m.attributes, data: try secrets[index],
                                creationDate: m.creationDate, modificationDate: m.modificationDate)
        }, outcome: { item, outcome in
            // Outcomes come one per item, in order, but may trail `next` by a few items.
            report.count(item, outcome, origin: report.origins[told])
            told += 1
        })
        report.print(context)
        return 0
    }

    /// A migrated entry waiting for its transaction; its secret is in the pool.
    private struct MigratedItem {
        let itemClass: ItemClass
        let attributes: [Attribute: [UInt8]]
        let creationDate: Int64?
        let modificationDate: Int64?
    }

    /// FILE, or standard input for `-`; a FIFO with no writer fails rather than hangs.
    private static func openInput(_ path: String, _ context: Context) throws -> Int32 {
        if path == "-" { return context.io.stdin }
        let fd = try valueOrErrno("open") { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
            .get { KeychainError(.io, "cannot read \(Printable.clip(path, max: 256)): \($0)") }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw KeychainError(.param, "\(Printable.clip(path, max: 256)) is not a regular file")
        }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
        return fd
    }
}
