/// Objects clients open (sessions, prompts) by id, each with the connection
/// that owns it and the client it counts to (its process: `Provider.account`,
/// so a program's many connections are one client), bounded per client and
/// in all. A client at its own bound is refused; when all together reach
/// theirs, the oldest object of the client holding the most gives way, so
/// a client that opens many can't keep one that opens a few from working
/// (issue 44).
struct OwnedObjects<Value> {
    let perClient: Int
    let total: Int
    private var byID: [String: (owner: String, account: String, value: Value)] = [:]
    /// Each connection's ids, and each client's, oldest first.
    private var byOwner: [String: [String]] = [:]
    private var byAccount: [String: [String]] = [:]

    init(perClient: Int, total: Int) {
        self.perClient = perClient
        self.total = total
    }

    var count: Int { byID.count }
    /// Every object, in no order.
    var values: [Value] { byID.values.map { $0.value } }

    subscript(_ id: String) -> Value? { byID[id]?.value }

    /// The connection that owns `id`.
    func owner(of id: String) -> String? { byID[id]?.owner }

    /// The ids `owner` owns, oldest first.
    func ids(ownedBy owner: String) -> [String] { byOwner[owner] ?? [] }

    /// Whether `account` may open one more.
    func admits(_ account: String) -> Bool { (byAccount[account]?.count ?? 0) < perClient }

    /// Whether all together are at their bound.
    var isFull: Bool { byID.count >= total }

    /// The object that gives way to make room: the oldest of the client
    /// holding the most (a scan of the clients, made only when all are full).
    var oldestOfLargest: (id: String, value: Value)? {
        guard let ids = byAccount.values.max(by: { $0.count < $1.count }), let id = ids.first, let entry = byID[id] else { return nil }
        return (id, entry.value)
    }

    /// Adds `value` (the caller has checked `admits` and made room).
    mutating func add(_ id: String, owner: String, account: String, _ value: Value) {
        byID[id] = (owner, account, value)
        byOwner[owner, default: []].append(id)
        byAccount[account, default: []].append(id)
    }

    @discardableResult
    mutating func remove(_ id: String) -> Value? {
        guard let (owner, account, value) = byID.removeValue(forKey: id) else { return nil }
        byOwner[owner]?.removeAll { $0 == id }
        if byOwner[owner]?.isEmpty == true { byOwner[owner] = nil }
        byAccount[account]?.removeAll { $0 == id }
        if byAccount[account]?.isEmpty == true { byAccount[account] = nil }
        return value
    }

    /// Removes and returns everything `owner` owns.
    mutating func removeAll(ownedBy owner: String) -> [Value] {
        ids(ownedBy: owner).compactMap { remove($0) }
    }
}
