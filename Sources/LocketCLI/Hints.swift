import LocketCore
import LocketSupport

/// The words for the engine's typed reasons: every `locket: hint:` that
/// follows an engine error is made here, where the command line is known.
enum Hints {
    /// After a failover or a restore of a remote keychain's database.
    private static func recoverHint(_ context: Context) -> String {
        "if the server lost writes (a failover, a restore of the database), 'locket \(context.keychainArgument)keychain recover' says what was lost and brings this device back"
    }

    /// The hint for `error` in this command's context; nil when there is nothing to suggest.
    static func hint(for error: KeychainError, _ context: Context) -> String? {
        if let hint = error.hint { return hint }
        switch error.reason {
        case .noKeychain?:
            // Name the keychain the user named: the bare command would create the login keychain.
            let named = (try? context.globals.keychain ?? context.environment["LOCKET_KEYCHAIN"]) ?? nil
            return named.map { "run 'locket -k \(Printable.clip($0, max: 256)) init' to create it" } ?? "run 'locket init' to create it"
        case .locked?:
            return "run 'locket unlock'"
        case .upgradeNeedsUnlock?:
            return "unlock first to upgrade it: run 'locket \(context.keychainArgument)unlock'"
        case .scopedTo?:
            return "an owner 'locket unlock' (without entitlements) opens every group"
        case .emptyPassword?:
            return context.commandName == "passwd" ? "use --remove to remove the password" : "use --no-password for a keychain without one"
        case .unknownProtectionClass?:
            return "see --accessible in 'locket help add'"
        case .sessionDamaged?:
            return "run locket lock --all, then unlock again"
        case .keyringRefused(let directory)?:
            return "set LOCKET_SESSION=dir to keep sessions in \(directory)"
        case .legacyEncryption(pkcs12: true)?:
            return "convert it with OpenSSL 3 (the key stays encrypted in TMP.pem): openssl pkcs12 -legacy -in OLD.p12 -out TMP.pem && openssl pkcs12 -export -in TMP.pem -out NEW.p12 && rm TMP.pem"
        case .legacyEncryption(pkcs12: false)?:
            return "convert it with OpenSSL 3: openssl pkcs8 -provider legacy -provider default -in OLD.pem -topk8 -v2 aes-256-cbc -out NEW.pem"
        case .newerFormat?:
            return "a newer release of locket made it: upgrade locket to open it"
        case .rolledBack?:
            if (try? context.keychainLocation())?.filePath == nil {
                // A remote keychain's header goes back with its history (a failover, a restore of the database).
                return recoverHint(context) + " ('restore --accept-rollback' accepts the older header alone)"
            }
            return "if it was put back on purpose, accept it with 'locket \(context.keychainArgument)restore --accept-rollback'"
        case .remoteRolledBack?:
            return recoverHint(context)
        case .revocationLost(let device)?:
            return "revoke it again: 'locket \(context.keychainArgument)keychain recover' here does it when this device holds its groups, or 'locket \(context.keychainArgument)keychain revoke \(device)' on a device that does"
        case .remoteTrustDamaged?:
            return "'locket \(context.keychainArgument)keychain recover' starts it again from what the server holds, as at enrolment (the revocations it kept are lost with it)"
        case .remoteStandby?:
            return "name the primary, or list every server in the URL with target_session_attrs=read-write so that libpq finds it"
        case .keysReplaced?:
            return "run the command again"
        case .thisDeviceOnlyRemote?:
            return "a shared keychain takes when-unlocked, after-first-unlock or always items"
        case .notEnrolled?:
            return "run 'locket \(context.keychainArgument)keychain enroll', then have an approved device approve it"
        case .notApproved(let group)?:
            return "an approved device of the group runs 'locket \(context.keychainArgument)keychain approve DEVICE --fingerprint FINGERPRINT --groups \(Printable.clip(group))'"
        case .proofNeeded(let request)?:
            if context.commandName == "settings" {
                return "a longer presence reuse window needs the keychain password: run the command at a terminal (a shorter one needs nothing)"
            }
            return request.keychainPassword
                ? "the item has access control (user presence): run the command at a terminal to give the keychain password"
                : "give the application password at a terminal or with --application-password-stdin"
        case .accessInvalidated?:
            return "delete the item and add it again"
        case .notLocketsFile?:
            return "'locket secret-service enable --force' sets it aside, and 'locket secret-service disable' puts it back"
        case .noTPM?:
            return "a TPM is /dev/tpmrm0, or the TCTI LOCKET_TPM names (device:PATH, swtpm:host=HOST,port=PORT)"
        case .tpmLockout(let seconds)?:
            return seconds > 0 ? "wait: the TPM forgets one wrong password every \(seconds) s" : "wait for the TPM to leave lockout"
        case .boundToOtherDevice?, nil:
            return nil
        }
    }
}
