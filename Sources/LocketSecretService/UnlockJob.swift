import Glibc
import LocketCore
import LocketSupport

/// One keychain's unlock with a password from a prompt, on a thread of its
/// own: Argon2id takes 0.5-1 s by design (SPEC §7), and a keychain with
/// many wrong passwords behind it waits up to 30 s before the hash. On the
/// provider's one thread that stalled every other client's calls, the
/// lookups of collections already unlocked included; here the loop goes on
/// answering them and hears the outcome through `fd` (a pipe it polls).
///
/// The thread opens a Keychain of its own (every request does: nothing is
/// shared with the loop's) and only verifies the password; the loop unlocks
/// with what it verified (`Verified.unlock`) if the prompt is still there, so
/// a prompt dismissed while the password was hashed unlocks nothing. Only
/// this object crosses, and its mutable state is handed over once: the
/// thread writes `outcome`, then a byte to the pipe; the loop reads `outcome`
/// only after it has read that byte.
final class UnlockJob: @unchecked Sendable {
    /// Readable once the unlock has ended.
    let fd: Int32
    private let signalFD: Int32
    private let keychainPath: String
    private let caller: Caller
    private let environment: Environment
    private var password: SecureBytes?
    /// Written by the thread before it signals `fd`; nil while it runs.
    private var outcome: Result<Verified, any Error>?

    /// A password the thread verified, and the keychain it opened, now the loop's.
    struct Verified {
        let keychain: Keychain
        let password: VerifiedPassword?

        /// Unlocks the keychain (no second hash) and lets its file go.
        func unlock() throws {
            defer { keychain.releaseFile() }
            if let password { try keychain.session.unlock(verified: password, timeout: nil) }
        }
    }

    /// Starts the unlock of the keychain at `keychainPath` with `password`.
    /// nil when no thread or pipe can be had: the caller unlocks in its own thread.
    init?(keychainPath: String, caller: Caller, environment: Environment, password: SecureBytes) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        fd = ends[0]
        signalFD = ends[1]
        self.keychainPath = keychainPath
        self.caller = caller
        self.environment = environment
        self.password = password
        // The thread holds the job until it has signalled: a prompt dismissed
        // meanwhile drops its own reference, and the descriptor stays valid.
        let context = Unmanaged.passRetained(self).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        defer { pthread_attr_destroy(&attributes) }
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, { context in
            Unmanaged<UnlockJob>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<UnlockJob>.fromOpaque(context).release()
            self.password = nil
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
        let result: Result<Verified, any Error>
        do {
            let keychain = try Keychain.open(at: keychainPath, caller: caller, environment: environment, keepsFileOpen: true)
            do {
                result = .success(Verified(keychain: keychain, password: try keychain.session.verify(password: password!)))
            } catch {
                keychain.releaseFile()
                throw error
            }
        } catch {
            result = .failure(error)
        }
        password = nil
        outcome = result
        var one: UInt8 = 1
        // The store to `outcome` happens before this write, and the loop's read of it after its read of the byte.
        _ = write(signalFD, &one, 1)
    }

    /// The outcome once `fd` is readable (consuming its byte); nil while the thread runs.
    func finished() -> Result<Verified, any Error>? {
        var byte: UInt8 = 0
        guard read(fd, &byte, 1) == 1 else { return nil }
        return outcome
    }
}
