/// What the provider holds for its clients, bounded per client and in all
/// (issue 44): any process of the user may call it, one limited by `--app`
/// included, and none may make it run out of memory, mappings or time for
/// the others. A client is a process (`ClientIdentity.account`): a program
/// opening 67 connections is one client, not 67. The man page states each bound.
enum Limits {
    /// Open sessions: a client's, and all clients' together. A DH session
    /// holds a 16-byte key in guarded memory (SessionKeys) and ~0.5 KiB else.
    static let sessionsPerClient = 256
    static let sessions = 4_096
    /// Prompts not yet completed (a never-answered one lives five minutes).
    static let promptsPerClient = 64
    static let prompts = 1_024
    /// The object paths all prompts in progress hold (to echo in Completed).
    static let promptObjects = 100_000
    /// The object paths one Unlock, Lock or GetSecrets may name.
    static let objectsPerCall = 10_000
    /// Aliases (SetAlias) and collections (CreateCollection) in this run.
    static let aliases = 256
    static let collections = 256
    /// The longest alias: a path element, as a collection's name is.
    static let aliasLength = 255
    /// Calls read from the bus and not yet answered, all clients together;
    /// past it, the newest call of the connection with the most waiting is
    /// refused at once (a legitimate client pipelines far fewer).
    static let queuedCalls = 16_384
    /// What libdbus reads ahead before it waits for calls to be answered
    /// (its default is 63 MiB; calls waiting in the queues count): a
    /// message larger, such as a 16 MiB secret, is still read whole when
    /// less is waiting.
    static let receivedBytes = 8 * 1024 * 1024

    /// The send buffer of the provider's bus socket (the kernel doubles it):
    /// what the provider writes ahead of the bus daemon's reading. A reply
    /// goes behind everything written before it, and the daemon reads 2 KiB
    /// a turn of its loop: with the default (~208 KiB of small replies'
    /// buffers), another client's answer waited behind ~150 replies to a
    /// flood (500 connections: 90th percentile 56-121 ms, here 26-36 ms).
    /// A larger reply still goes out whole, in turns.
    static let unreadReplies = 16 * 1024

    /// Seconds a client's calls wait for the bus daemon to say who it is
    /// before they are refused (AccessDenied).
    static let identityWait = 10

    /// The error a client past a bound gets.
    static func exceeded(_ what: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.LimitsExceeded", message: what)
    }
}
