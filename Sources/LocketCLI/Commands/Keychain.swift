import LocketCore

extension Commands {
    /// `locket init`
    static func initialize(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        Diagnostics.protectProcess()
        // Creating a keychain is the owner's act; a bad entitlements file still stops it first.
        if try context.caller() != .owner {
            throw KeychainError(.missingEntitlement, "creating a keychain is for its owner, not an app with entitlements")
        }
        let cost = try invocation.value("kdf").map { try KDFLevel.parse($0, command: "init").cost } ?? context.io.defaultKDF ?? .moderate
        let location = try context.keychainLocation()
        if invocation.has("no-password") && location.requiresPassword {
            throw UsageError(message: "a remote keychain needs a password: without one its keys would open for whoever reads the database", command: "init")
        }
        if invocation.has("tpm") {
            // Before the password is asked: without a TPM there is nothing to bind to.
            _ = try TPMLocation.find(environment: context.environment)
        }
        var password: SecureBytes?
        if !invocation.has("no-password") {
            password = try Prompt.password(context, prompt: "New password for \(location.description): ", confirm: true,
                                           fromStdin: invocation.has("password-stdin"))
        }
        try location.create(password: password, kdf: cost, tpm: invocation.has("tpm"), environment: context.environment)
        return 0
    }

    /// `locket unlock`
    static func unlock(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let timeout = try invocation.value("timeout").map { try parseTimeout($0, command: "unlock") }
        // Unattended (issue 29): the password from a private file, or from the
        // credential systemd decrypted for this unit (LoadCredentialEncrypted=).
        let passwordFile = try invocation.value("password-file")
            ?? invocation.value("credential").map { try PasswordFile.credentialPath($0, environment: context.environment) }
        let keychain = try context.openKeychain()
        guard keychain.hasPassword else {
            context.warn("the keychain has no password; it is always unlocked")
            return 0
        }
        announcePasswordWaits(keychain, context)
        let password = try passwordFile.map { try PasswordFile.read($0) }
            ?? Prompt.password(context, prompt: "Password for \(keychain.path): ", confirm: false, fromStdin: invocation.has("password-stdin"))
        try keychain.session.unlock(password: password, timeout: timeout)
        return 0
    }

    /// `locket lock`
    static func lock(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        // Forgetting keys is always allowed, even for a copy that was put back.
        let keychain = try context.openKeychain(acceptRollback: true)
        guard keychain.hasPassword else {
            context.warn("the keychain has no password; it is always unlocked and lock changes nothing")
            return 0
        }
        keychain.session.lock(all: invocation.has("all"))
        return 0
    }

    /// `locket restore --accept-rollback`
    static func restore(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        guard invocation.has("accept-rollback") else {
            throw UsageError(message: "restore needs --accept-rollback", command: "restore")
        }
        // Before the password prompt: going back is the owner's act.
        if try context.caller() != .owner {
            throw KeychainError(.missingEntitlement, "accepting an older copy of the keychain is for its owner, not an app with entitlements")
        }
        let keychain = try context.openKeychain(acceptRollback: true)
        if context.backends.isRemote(keychain) {
            context.err("""
                locket: note: on a remote keychain this accepts an older header (the keys and settings the database holds) on this \
                machine only; a membership, item or audit history older than this device saw is 'locket \(context.keychainArgument)keychain recover''s \
                to accept, which says what was lost
                """)
        }
        var password: SecureBytes?
        if keychain.hasPassword {
            announcePasswordWaits(keychain, context)
            password = try Prompt.password(context, prompt: "Password of this copy of \(keychain.path): ", confirm: false,
                                           fromStdin: invocation.has("password-stdin"))
        }
        if try !keychain.session.acceptRollback(password: password) {
            context.warn("the keychain is not older than this device has seen; nothing to accept")
        }
        return 0
    }

    /// SECONDS or `none` (no auto-lock, stored as 0).
    static func parseTimeout(_ text: String, command: String) throws -> UInt32 {
        if text == "none" { return 0 }
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt32(text), n > 0, n <= 31_536_000 else {
            throw UsageError(message: "--timeout must be a number of seconds from 1 to 31536000, or none", command: command)
        }
        return n
    }
}
