import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

extension Commands {
    /// `locket exec [--env NAME=REF]... [--env-file FILE]... [--file NAME=REF]... [--mask] [--github-env] -- COMMAND [ARG]...`
    static func exec(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let githubEnv = invocation.has("github-env")
        guard let program = invocation.operands.first else {
            guard githubEnv else { throw UsageError(message: "no command to run", command: "exec") }
            for option in ["file", "mask"] where invocation.has(option) {
                throw UsageError(message: "--\(option) needs a command to run", command: "exec")
            }
            return try execVariables(invocation, context, run: nil)
        }
        return try execVariables(invocation, context, run: program)
    }

    /// Where a variable's value comes from. Inherited values are bytes, handed
    /// on as they are; an inherited `locket:` value that is not UTF-8 is a
    /// reference that fails if it is still wanted once every source is read.
    private enum Source {
        case plain([UInt8])
        case reference(String?)
    }

    /// The variables exec sets, lowest precedence first: the environment
    /// (`locket:REF` values resolved), each --env-file in order, then --env;
    /// a later one replaces an earlier one of the same name.
    private struct Plan {
        private(set) var order: [[UInt8]] = []
        private(set) var sources: [[UInt8]: (source: Source, inherited: Bool)] = [:]

        mutating func set(_ name: [UInt8], _ source: Source, inherited: Bool = false) {
            if sources[name] == nil { order.append(name) }
            sources[name] = (source, inherited)
        }

        mutating func set(_ name: String, _ source: Source) { set(Array(name.utf8), source) }

        mutating func remove(_ name: String) {
            sources[Array(name.utf8)] = nil
            order.removeAll { $0 == Array(name.utf8) }
        }
    }

    private static func execVariables(_ invocation: Invocation, _ context: Context, run program: String?) throws -> Int32 {
        if invocation.has("github-env") { try GitHubActions.checkEnvironmentFile(context.environment) }
        // Also when no secret is read (and the keychain not opened).
        SecretFiles.removeAbandoned(context.environment)
        var plan = Plan()
        let marker = Array("locket:".utf8)
        for variable in context.io.environment.all {
            // A name that is not text is no name locket can report; it is handed on as it is.
            if variable.value.starts(with: marker), variable.nameText != nil {
                plan.set(variable.name, .reference(String(validating: variable.value.dropFirst(marker.count), as: UTF8.self)), inherited: true)
            } else {
                plan.set(variable.name, .plain(variable.value), inherited: true)
            }
        }
        for path in invocation.all("env-file") {
            for entry in try readEnvFile(path) {
                plan.set(entry.name, entry.value.hasPrefix("locket:") ? .reference(String(entry.value.dropFirst("locket:".count)))
                                                                       : .plain(Array(entry.value.utf8)))
            }
        }
        for assignment in invocation.all("env") {
            let (name, reference) = try splitAssignment(assignment, option: "--env")
            plan.set(name, .reference(reference))
        }
        var fileReferences: [(name: String, reference: String)] = []
        for assignment in invocation.all("file") {
            let (name, reference) = try splitAssignment(assignment, option: "--file")
            if invocation.all("env").contains(where: { $0.hasPrefix(name + "=") }) {
                throw UsageError(message: "\(name) is given by both --env and --file", command: "exec")
            }
            fileReferences.removeAll { $0.name == name }
            fileReferences.append((name, reference))
            plan.remove(name)
        }

        // Every reference resolves before anything starts; one failure starts nothing.
        let resolver = SecretResolver(context)
        resolver.prefetch(plan.order.compactMap { name -> String? in
            if case .reference(let text)? = plan.sources[name]?.source { return text }
            return nil
        } + fileReferences.map(\.reference))
        var secrets: [(name: String, value: SecureBytes)] = []
        var plain: [Environment.Variable] = []
        var exported: [(name: String, value: SecureBytes)] = []
        for nameBytes in plan.order {
            guard let (source, inherited) = plan.sources[nameBytes] else { continue }
            let name = String(decoding: nameBytes, as: UTF8.self)
            switch source {
            case .plain(let value):
                plain.append(Environment.Variable(name: nameBytes, value: value))
                if !inherited { exported.append((name, try SecureBytes(copying: value))) }
            case .reference(let text):
                guard let reference = text else { throw KeychainError(.param, "\(name) is not valid UTF-8") }
                let data = try resolve(name, reference, resolver)
                guard !data.withUnsafeBytes({ $0.contains(0) }) else {
                    throw KeychainError(.param, "\(name): the secret contains a NUL byte, which an environment variable can't hold",
                                        hint: "use --file \(name)=\(reference) to get it in a file")
                }
                secrets.append((name, data))
                exported.append((name, data))
            }
        }
        var fileSecrets: [(name: String, secret: SecureBytes)] = []
        for (name, reference) in fileReferences { fileSecrets.append((name, try resolve(name, reference, resolver))) }

        // The runner learns every injected value before anything could print one.
        if GitHubActions.isRunner(context.environment) {
            let masks = try GitHubActions.maskCommands(secrets.map(\.value) + fileSecrets.map(\.secret))
            context.out.flush()
            masks.withUnsafeBytes { if $0.count > 0 { context.io.write(1, $0) } }
        }
        if invocation.has("github-env") { try GitHubActions.appendToEnvironmentFile(exported, context.environment) }
        guard let program else { return 0 }

        let argv = CStringArray(invocation.operands)
        defer { argv.free() }
        let mask = invocation.has("mask")
        guard !fileSecrets.isEmpty else {
            let block = EnvironmentBlock(plain: plain, secrets: secrets)
            defer { block.wipe() }
            guard mask else {
                // Without a filter or files locket has nothing left to do: become
                // the command, so signals, the exit status and the terminal are its own.
                locket_prepare_exec()
                let failure = nothingOrErrno("execvpe") { locket_execvpe(program, argv.pointers, block.pointers) }.error
                return execFailure(program, context, failure ?? Errno(ENOEXEC))
            }
            return try runChild(program, argv: argv, environment: block, masking: secrets.map(\.value), context)
        }
        // Signals wait until the forwarders are in place: one arriving between
        // making the files and starting the command would leave them behind.
        var previous = sigset_t()
        blockForwardedSignals(&previous)
        let files: SecretFiles
        do {
            files = try SecretFiles(fileSecrets, environment: context.environment)
        } catch {
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            throw error
        }
        defer { files.remove() }
        let paths = files.paths.map { Environment.Variable(name: Array($0.name.utf8), value: Array($0.path.utf8)) }
        let block = EnvironmentBlock(plain: plain + paths, secrets: secrets)
        defer { block.wipe() }
        return try runChild(program, argv: argv, environment: block, masking: mask ? secrets.map(\.value) + fileSecrets.map(\.secret) : nil,
                            files: files, blocked: previous, context)
    }

    /// The secret `reference` names, or the failure named after the variable.
    private static func resolve(_ name: String, _ reference: String, _ resolver: SecretResolver) throws -> SecureBytes {
        do {
            return try resolver.secret(reference)
        } catch let error as KeychainError {
            throw error.with(detail: "\(name): \(error.message)")
        }
    }

    /// `NAME=REF` of --env and --file.
    private static func splitAssignment(_ assignment: String, option: String) throws -> (String, String) {
        guard let eq = assignment.firstIndex(of: "="), isVariableName(assignment[..<eq]) else {
            throw UsageError(message: "\(option) needs NAME=REF with a variable name, not '\(assignment.prefix(40))'", command: "exec")
        }
        return (String(assignment[..<eq]), String(assignment[assignment.index(after: eq)...]))
    }

    /// The entries of an --env-file: a regular file (a FIFO must not hang exec), at most 1 MiB.
    private static func readEnvFile(_ path: String) throws -> [DotEnv.Entry] {
        let fd = try valueOrErrno("open") { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }.get { KeychainError(.io, "cannot read \(path): \($0)") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { throw KeychainError(.param, "\(path) is not a regular file") }
        var bytes = try Prompt.readAll(fd, what: path, limit: 1 << 20).bytes
        defer { wipe(&bytes) }
        do {
            return try DotEnv.parse(bytes)
        } catch let error as DotEnv.Malformed {
            throw KeychainError(.param, "\(path) line \(error.line): \(error.reason)")
        }
    }

    private static func isVariableName(_ name: Substring) -> Bool {
        guard let first = name.first, first == "_" || (first.isASCII && first.isLetter) else { return false }
        return name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }
}
