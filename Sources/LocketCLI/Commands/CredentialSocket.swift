import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// `locket credential-socket [--socket PATH] [--policy FILE]`: systemd's
/// `LoadCredential=ID:/PATH` answered from the keychain (systemd.exec(5)).
/// For each connection it reads the unit and credential ID from the peer's
/// address, the grant from the policy (read afresh, so an edit needs no
/// restart), and the secret from the keychain opened for that request as
/// the unit (an app with the unit's access groups), so `lock`, protection
/// classes and the policy hold for every credential. Each connection is one
/// line on stderr (the journal): given or refused, with the unit and ID,
/// never a secret. It tells systemd it is ready (`Type=notify`) once it
/// listens, and stops on SIGTERM or SIGINT, removing its socket.
extension Commands {
    static func credentialSocket(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        // The server's own entitlements bound what the policy may hand out.
        let server = try context.caller()
        let policyPath = try invocation.value("policy") ?? defaultCredentialPolicy(context.environment)
        // Read once now, so that a broken policy stops the service before it listens.
        _ = try CredentialPolicy.load(path: policyPath, server: server)
        let socketPath = try invocation.value("socket") ?? defaultCredentialSocket(context.environment)
        Diagnostics.protectProcess()
        let signals = [SIGTERM, SIGINT, SIGHUP]
        let signalFD = try valueOrErrno("signalfd") { locket_signalfd(signals, Int32(signals.count)) }
            .get { KeychainError(.io, "cannot watch for signals: \($0)") }
        defer { close(signalFD) }
        let socket = try CredentialSocket(path: socketPath)
        defer { socket.close() }
        let log: (String) -> Void = { context.err("locket credential-socket: \($0)") }
        let credentialServer = CredentialServer(socket: socket, answer: { request in
            let policy = try CredentialPolicy.load(path: policyPath, server: server)
            guard let grant = policy.grant(unit: request.unit, credential: request.credential) else {
                throw KeychainError(.missingEntitlement, "the policy gives this unit no such credential")
            }
            let keychain = try context.openKeychain(keepsFileOpen: false, caller: grant.caller)
            do {
                guard let data = try keychain.search(grant.query, limit: .one, returnData: true).first?.data else { throw KeychainError(.itemNotFound) }
                return data
            } catch let error as KeychainError where error.code == .itemNotFound {
                let groups = grant.caller.accessGroups?.joined(separator: ", ") ?? ""
                throw KeychainError(.itemNotFound, "no item in the unit's access groups (\(groups)) matches \(grant.reference)")
            }
        }, report: { log(CredentialSocketText.line($0)) })
        log("listening at \(socket.path), policy \(policyPath)")
        try ServiceNotify.ready(context.environment)
        var sent: Int32 = 0
        // SIGHUP changes nothing (the policy is read for every request) and stops nothing.
        try credentialServer.serve(watching: [signalFD]) { fd in
            let signal = locket_signalfd_next(fd, &sent)
            return signal == SIGTERM || signal == SIGINT
        }
        return 0
    }

    /// root: /etc/locket/credentials.json; others: $XDG_CONFIG_HOME/locket/credentials.json.
    private static func defaultCredentialPolicy(_ environment: Environment) throws -> String {
        if geteuid() == 0 { return "/etc/locket/credentials.json" }
        if let config = try environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/locket/credentials.json" }
        guard let home = try environment["HOME"], home.hasPrefix("/") else {
            throw KeychainError(.param, "HOME is not set to an absolute path, and neither is XDG_CONFIG_HOME", hint: "give --policy FILE")
        }
        return home + "/.config/locket/credentials.json"
    }

    /// root: /run/locket/credentials.sock; others: in $XDG_RUNTIME_DIR when it is theirs alone.
    private static func defaultCredentialSocket(_ environment: Environment) throws -> String {
        if geteuid() == 0 { return "/run/locket/credentials.sock" }
        guard let runtime = try RuntimeDirectory.trusted(environment) else {
            throw KeychainError(.io, "no private runtime directory: $XDG_RUNTIME_DIR is unset or not a directory of yours alone",
                                hint: "give --socket PATH, in a directory only you can write")
        }
        return runtime + "/locket/credentials.sock"
    }
}

/// The credential socket's log lines: who asked for what, and what came of it.
enum CredentialSocketText {
    static func line(_ event: CredentialServer.Event) -> String {
        switch event {
        case .gave(let request, let bytes):
            return "gave \(request.credential) to \(request.unit) (\(bytes) byte\(bytes == 1 ? "" : "s"))"
        case .refused(let request, let error):
            return "refused \(request.credential) to \(request.unit): \(error.description)"
        case .peerRefused(let uid):
            return "refused a connection from uid \(uid): only root and uid \(geteuid()) may ask"
        case .unnamed(let uid, let address):
            return "refused a connection from uid \(uid) that names no unit and credential (its address is '\(address)'; systemd binds to @RANDOM/unit/UNIT/ID)"
        case .dropped(let error):
            return "dropped a connection: \(error.description)"
        }
    }
}
