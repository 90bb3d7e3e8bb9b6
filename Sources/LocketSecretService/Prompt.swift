import Glibc
import LocketCore

/// A Prompt object: what a client must call Prompt() on before an unlock,
/// a new collection or a collection's deletion happens. It asks for a
/// password (PasswordInput) and ends with the Completed signal, sent to its
/// client alone: dismissed when the user cancels, nothing can ask, the
/// client calls Dismiss(), three passwords were wrong, or five minutes pass.
final class Prompt {
    enum Action {
        /// Unlock these keychains (one password each, in turn); report the
        /// objects whose keychain is unlocked (each path as the client gave it,
        /// with its collection's name).
        case unlock(pending: [Provider.Collection], objects: [(path: String, collection: String)])
        /// A new keychain, its password asked twice.
        case create(name: String, path: String, label: String, alias: String)
        /// Delete a keychain, once its password (or, without one, its name) is given.
        case delete(Provider.Collection)
    }

    let id: String
    let owner: String
    let client: ClientIdentity
    var action: Action
    var input: PasswordInput?
    /// A password being checked, or a keychain made, on a thread of its own (PromptJob).
    var job: PromptJob?
    var started = false
    /// Asked for the secret portal: its end answers the waiting RetrieveSecret calls, not a Completed signal.
    var answersPortal = false
    var attempts = 0
    /// The first of the two passwords of a new keychain.
    var first: SecureBytes?
    /// When the prompt gives up (CLOCK_MONOTONIC seconds).
    var deadline: Int = 0

    /// How long a prompt waits for its password.
    static let lifetime = 300
    /// Wrong passwords before a prompt gives up.
    static let attempts = 3

    init(id: String, owner: String, client: ClientIdentity, action: Action) {
        self.id = id
        self.owner = owner
        self.client = client
        self.action = action
    }

    var path: String { ObjectPath.promptPrefix + id }

    /// The object paths it holds (Limits.promptObjects).
    var objectCount: Int {
        if case .unlock(_, let objects) = action { return objects.count }
        return 0
    }
    var descriptor: Int32? { job?.fd ?? input?.fd }

    /// Stops asking; a job already running ends on its own thread, unheard.
    func cancel() {
        input?.cancel()
        input = nil
        job = nil
    }

    static func now() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return ts.tv_sec
    }
}
