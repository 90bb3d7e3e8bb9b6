import LocketCore

/// The schema of a remote keychain (SPEC §17, docs/REMOTE.md): format 2's
/// item and blind-index tables, devices, group keys wrapped per device, the
/// signed membership and state chain, the item tree, an append-only audit
/// table, and meta with the schema version, all in the schema `locket`. The
/// server holds what a keychain file holds: sealed values, keyed digests,
/// class, protection class, access group, references.
public enum RemoteSchema {
    /// The schema version this locket creates and reads.
    public static let version: Int32 = 3

    /// Version 3, statement by statement (PQexecParams runs one at a time).
    /// Version 1 (issue 17) had no signing keys, signed membership, state
    /// chain or signed audit; it is refused, not upgraded (`prepare`).
    /// Version 2 (issue 28) had no item tree: its signed root covered every
    /// item; it is upgraded (`prepare`, RemoteStore+Upgrade).
    static let statements: [String] = [
        "CREATE SCHEMA locket",
        // name -> value; 'schema' holds the version as int4send (4 bytes, big-endian).
        "CREATE TABLE locket.meta(name text PRIMARY KEY, value bytea NOT NULL)",
        // Format 2's items. pk is the keyed digest of the primary key, so the
        // UNIQUE constraint is the SecItem uniqueness rule; pk comes first so
        // that a full primary-key lookup is one probe of its index. ThisDeviceOnly
        // protection classes (the codes ending in 'u') can't be shared.
        """
        CREATE TABLE locket.items(
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            ref bytea NOT NULL UNIQUE,
            cls text NOT NULL,
            pdmn text NOT NULL CHECK (pdmn IN ('ak', 'ck', 'dk')),
            agrp text NOT NULL,
            pk bytea NOT NULL,
            attrs bytea NOT NULL,
            data bytea NOT NULL,
            vh bytea NOT NULL,
            dh bytea NOT NULL,
            CONSTRAINT items_primary_key UNIQUE (pk, cls, agrp))
        """,
        // Blind indexes: digest = keyed hash of (item class, attribute code, value).
        """
        CREATE TABLE locket.blind(
            digest bigint NOT NULL,
            item bigint NOT NULL REFERENCES locket.items(id) ON DELETE CASCADE,
            PRIMARY KEY (digest, item))
        """,
        "CREATE INDEX blind_item ON locket.blind(item)",
        // Devices: the X25519 and Ed25519 public keys (the secret keys stay on
        // the device) and the name its owner gave it, which admins read to
        // approve it. Informational: the signed membership (roster) decides.
        """
        CREATE TABLE locket.devices(
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            public_key bytea NOT NULL UNIQUE CHECK (octet_length(public_key) = 32),
            signing_key bytea NOT NULL UNIQUE CHECK (octet_length(signing_key) = 32),
            name text NOT NULL,
            state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'revoked')),
            enrolled timestamptz NOT NULL DEFAULT now(),
            changed timestamptz NOT NULL DEFAULT now())
        """,
        // Each access group's current key generation; revoking a device moves it on.
        "CREATE TABLE locket.groups(agrp text PRIMARY KEY, generation integer NOT NULL DEFAULT 1 CHECK (generation > 0))",
        // A group key of one generation, sealed (crypto_box_seal) to one device's public key.
        """
        CREATE TABLE locket.group_keys(
            agrp text NOT NULL REFERENCES locket.groups(agrp),
            generation integer NOT NULL,
            device bigint NOT NULL REFERENCES locket.devices(id),
            wrapped bytea NOT NULL,
            PRIMARY KEY (agrp, generation, device))
        """,
        // The signed membership, one row per epoch (Roster), and the signed
        // state chain of the items, one row per changing transaction (SignedState).
        "CREATE TABLE locket.roster(epoch bigint PRIMARY KEY, body bytea NOT NULL, signature bytea NOT NULL)",
        "CREATE TABLE locket.states(seq bigint PRIMARY KEY, body bytea NOT NULL, signature bytea NOT NULL)",
        treeTable,
        // Who read or changed which item, when. The item is its persistent
        // reference (no foreign key: the audit outlives the item). Each
        // device's entries are a hash chain it signs (seq, body, signature:
        // SignedAuditEntry); the other columns repeat the body for queries.
        """
        CREATE TABLE locket.audit(
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            device bigint NOT NULL REFERENCES locket.devices(id),
            seq bigint NOT NULL,
            item bytea NOT NULL,
            operation text NOT NULL CHECK (operation IN ('read', 'add', 'update', 'delete')),
            at timestamptz NOT NULL DEFAULT now(),
            body bytea NOT NULL,
            signature bytea NOT NULL,
            UNIQUE (device, seq))
        """,
        "CREATE INDEX audit_at ON locket.audit(at)",
        // Append-only by trigger rather than by REVOKE: privileges don't bind
        // the table's owner, which is the role locket connects as when it
        // creates the schema; a trigger binds every role short of one that
        // may drop it (the owner or a superuser, docs/REMOTE.md).
        """
        CREATE FUNCTION locket.audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'the audit table is append-only' USING ERRCODE = 'insufficient_privilege';
        END
        $$
        """,
        """
        CREATE TRIGGER audit_no_update_delete BEFORE UPDATE OR DELETE ON locket.audit
            FOR EACH ROW EXECUTE FUNCTION locket.audit_append_only()
        """,
        """
        CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON locket.audit
            FOR EACH STATEMENT EXECUTE FUNCTION locket.audit_append_only()
        """,
        "INSERT INTO locket.meta(name, value) VALUES ('schema', int4send(3))",
    ]

    /// The item tree (ItemTree, RemoteStore+Tree): one row per node present,
    /// its key the level and the ids' leading bits, its 16 children's hashes.
    static let treeTable = """
        CREATE TABLE IF NOT EXISTS locket.nodes(
            node bigint PRIMARY KEY,
            hashes bytea NOT NULL CHECK (octet_length(hashes) = \(ItemTree.nodeBytes)))
        """

    /// The refusal of version 1, which is not upgraded: its device keys and
    /// group memberships were never signed, so whatever a migration signed
    /// would vouch for rows the server could have rewritten (the attacks
    /// version 2 stops).

    static func olderVersion(_ found: Int32, _ url: String) -> KeychainError {
        KeychainError(.invalidKeychain, """
            \(url) was made by an earlier locket (remote schema version \(found)), whose devices and group keys are not signed: \
            this locket can't vouch for them after the fact. Read its items with that release (dump --data) and add them \
            to a keychain this locket makes in a new database
            """)
    }

    /// Creates the schema, or prepares version 2's upgrade, in one transaction;
    /// concurrent callers wait for each other (an advisory lock). Returns the
    /// version found before (0 when there was none). A schema newer than this
    /// locket knows is refused (errSecInvalidKeychain) and left untouched.
    @discardableResult
    public static func prepare(_ connection: RemoteConnection) throws -> Int32 {
        // READ COMMITTED: after the lock, each statement sees what the
        // previous holder committed, including its catalog changes.
        try connection.transaction(isolation: .readCommitted) { transaction in
            try transaction.execute("SELECT pg_advisory_xact_lock(7451634301)")
            let found = try installedVersion(transaction)
            if found > version {
                throw KeychainError(.invalidKeychain, "the remote keychain has schema version \(found); this locket knows up to \(version)")
            }
            if found == 0 {
                for statement in statements { try transaction.execute(statement) }
            } else if found < 2 {
                throw olderVersion(found, "the database")
            } else if found == 2 {
                // The tree's table; its nodes and the version are the first
                // approved device's to write, under a signed state
                // (RemoteStore+Upgrade), unless there is no keychain yet.
                try transaction.execute(treeTable)
                if try transaction.execute("SELECT 1 FROM locket.meta WHERE name = 'id'").isEmpty {
                    try transaction.execute("UPDATE locket.meta SET value = int4send($1::int4) WHERE name = 'schema'", [.int(Int64(version))])
                }
            }
            return found
        }
    }

    static let damagedVersion = KeychainError(.invalidKeychain, """
        the remote keychain's tables are there but its schema version is missing or 0: the database was altered or \
        damaged. Restore it from a backup; init does not overwrite an existing schema
        """)

    /// The version recorded in the database, 0 when there is no schema yet.
    public static func installedVersion(_ transaction: RemoteConnection.Transaction) throws -> Int32 {
        guard try hasSchema(transaction) else { return 0 }
        let rows = try transaction.execute("SELECT value FROM locket.meta WHERE name = 'schema'")
        return try version(rows.first?[0].bytes)
    }

    /// Whether the database has locket's tables (its meta table).
    static func hasSchema(_ statements: RemoteConnection.Transaction) throws -> Bool {
        try statements.execute("SELECT to_regclass('locket.meta') IS NOT NULL").first?[0].bool == true
    }

    /// The version in the `schema` meta row's value (int4send's 4 bytes);
    /// a schema without one, or with 0, is damaged.
    static func version(_ bytes: [UInt8]?) throws -> Int32 {
        guard let bytes, bytes.count == 4 else {
            throw damagedVersion
        }
        let found = Int32(bitPattern: bytes.reduce(0) { $0 << 8 | UInt32($1) })
        // Tables without a version are not an empty database: `init` would
        // fail on them, so no hint should send the user there.
        guard found > 0 else { throw damagedVersion }
        return found
    }
}
