import Glibc
import LocketCore
import LocketSupport

/// A prompt's costly work, on a thread of its own: an unlock's or a
/// deletion's password check, or a new keychain's key derivation. Argon2id
/// takes 0.5-1 s by design (SPEC §7), and a keychain with many wrong
/// passwords behind it waits up to 30 s before the hash (and for another
/// attempt's turn). On the provider's one thread that stalled every other
/// client's calls, the lookups of collections already unlocked included;
/// here the loop goes on answering them and hears the outcome through `fd`
/// (a pipe it polls).
///
/// The thread makes a Keychain of its own (every request does: nothing is
/// shared with the loop's). A check only verifies the password; the loop
/// acts on what was verified (`Verified.unlock`, or removing the keychain)
/// if the prompt is still there, so a prompt dismissed while the password
/// was hashed unlocks or deletes nothing. (A new keychain dismissed while it
/// was made is made all the same, as `locket init` interrupted after its
/// hash would be: the prompt's Completed says dismissed, and the next
/// CreateCollection of that name finds it.) Only this object crosses, and
/// its mutable state is handed over once: the thread writes `outcome`, then
/// a byte to the pipe; the loop reads `outcome` only after it has read that byte.
final class PromptJob: @unchecked Sendable {
    /// What the thread did.
    enum Outcome {
        /// A password checked, and the keychain it opened, now the loop's.
        case verified(Verified)
        /// A new keychain made (unlocked, as `locket init` leaves it).
        case created
    }

    /// A password the thread verified, and the keychain it opened.
    struct Verified {
        let keychain: Keychain
        /// nil: the keychain has no password (nothing was checked).
        let password: VerifiedPassword?

        /// Unlocks the keychain (no second hash) and lets its file go.
        func unlock() throws {
            defer { keychain.releaseFile() }
            if let password { try keychain.session.unlock(verified: password, timeout: nil) }
        }
    }

    /// Readable once the work has ended.
    let fd: Int32
    private let signalFD: Int32
    /// The work; set to nil by the thread when done (it holds the password).
    private var work: (() throws -> Outcome)?
    /// Written by the thread before it signals `fd`; nil while it runs.
    private var outcome: Result<Outcome, any Error>?

    /// The work of checking `password` on the keychain at `keychainPath`.
    static func verifying(keychainPath: String, caller: Caller, environment: Environment,
                          password: SecureBytes) -> () throws -> Outcome {
        return {
            let keychain = try Keychain.open(at: keychainPath, caller: caller, environment: environment, keepsFileOpen: true)
            do {
                return .verified(Verified(keychain: keychain, password: try keychain.session.verify(password: password)))
            } catch {
                keychain.releaseFile()
                throw error
            }
        }
    }

    /// The work of making a keychain at `path` with `password` (empty: none).
    static func creating(path: String, environment: Environment, password: SecureBytes) -> () throws -> Outcome {
        return {
            try Keychain.create(at: path, password: password.count == 0 ? nil : password, environment: environment)
            return .created
        }
    }

    /// Starts `work` on a thread. nil when no thread or pipe can be had:
    /// the caller does the work in its own thread.
    init?(_ work: @escaping () throws -> Outcome) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        fd = ends[0]
        signalFD = ends[1]
        self.work = work
        // The thread holds the job until it has signalled: a prompt dismissed
        // meanwhile drops its own reference, and the descriptor stays valid.
        let context = Unmanaged.passRetained(self).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        defer { pthread_attr_destroy(&attributes) }
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, { context in
            Unmanaged<PromptJob>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<PromptJob>.fromOpaque(context).release()
            self.work = nil
            close(fd)
            close(signalFD)
            return nil
        }
    }

    deinit {
        close(fd)
        close(signalFD)
    }

    private func run() {
        let result = Result { try work!() }
        // The password goes with the closure that captured it.
        work = nil
        outcome = result
        var one: UInt8 = 1
        // The store to `outcome` happens before this write, and the loop's read of it after its read of the byte.
        _ = write(signalFD, &one, 1)
    }

    /// The outcome once `fd` is readable (consuming its byte); nil while the thread runs.
    func finished() -> Result<Outcome, any Error>? {
        var byte: UInt8 = 0
        guard read(fd, &byte, 1) == 1 else { return nil }
        return outcome
    }
}
