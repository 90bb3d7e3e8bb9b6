import LocketCore

/// The statements a remote keychain runs, named, over `RemoteSchema`'s
/// tables. Values are always parameters ($1, $2, ...); nothing here is ever
/// built from a value. The commands that use them (enroll, approve, revoke,
/// audit, the item store) come with engine v2.
public enum RemoteStatements {
    // MARK: Devices

    /// $1 X25519 public key, $2 name, $3 Ed25519 public key (32 bytes each) -> id. A new device starts pending.
    public static let enrollDevice = "INSERT INTO locket.devices(public_key, name, signing_key) VALUES ($1, $2, $3) RETURNING id"
    /// -> id, public_key, name, state, enrolled, signing_key, in enrolment order.
    public static let listDevices = "SELECT id, public_key, name, state, enrolled, signing_key FROM locket.devices ORDER BY id"
    /// $1 device id -> public_key, state, signing_key; locks the row for the approving or revoking transaction.
    public static let lockDevice = "SELECT public_key, state, signing_key FROM locket.devices WHERE id = $1 FOR UPDATE"
    /// $1 device id -> id. Only a pending device can be approved (no row otherwise).
    public static let approveDevice = "UPDATE locket.devices SET state = 'approved', changed = now() WHERE id = $1 AND state = 'pending' RETURNING id"
    /// $1 device id -> id. Only an approved device can be revoked (no row otherwise).
    public static let revokeDevice = "UPDATE locket.devices SET state = 'revoked', changed = now() WHERE id = $1 AND state = 'approved' RETURNING id"

    // MARK: Groups and their keys
    //
    // Which generation is current and who holds it is the signed membership's
    // (Roster), never these tables': the statements are in RemoteStore
    // (`groupKey`, `storeWrappedKey`) and Keychain+Devices (`revoke`).

    // MARK: Items (format 2)

    /// $1 ref, $2 cls, $3 pdmn, $4 agrp, $5 pk, $6 attrs, $7 data, $8 version hash, $9 data hash -> id.
    /// A duplicate (pk, cls, agrp) fails with SQLSTATE 23505 (errSecDuplicateItem).
    public static let insertItem = """
        INSERT INTO locket.items(ref, cls, pdmn, agrp, pk, attrs, data, vh, dh) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id
        """
    /// $1 item id, $2 digest.
    public static let insertBlind = "INSERT INTO locket.blind(digest, item) VALUES ($2, $1)"
    /// $1 pk, $2 cls, $3 agrp -> id, ref, pdmn, attrs, data.
    public static let selectByPrimaryKey = """
        SELECT id, ref, pdmn, attrs, data FROM locket.items WHERE pk = $1 AND cls = $2 AND agrp = $3
        """
    /// $1 cls, $2 digest -> id, ref, pdmn, agrp, attrs, data of items with that blind index.
    public static let selectByDigest = """
        SELECT i.id, i.ref, i.pdmn, i.agrp, i.attrs, i.data FROM locket.blind b JOIN locket.items i ON i.id = b.item
        WHERE b.digest = $2 AND i.cls = $1 ORDER BY i.id
        """
    /// $1 id, $2 attrs, $3 data, $4 version hash, $5 data hash: a re-sealed item.
    public static let updateItem = "UPDATE locket.items SET attrs = $2, data = $3, vh = $4, dh = $5 WHERE id = $1"
    /// $1 id (its blind rows go with it).
    public static let deleteItem = "DELETE FROM locket.items WHERE id = $1"

    // MARK: Audit

    /// $1 group -> id, ref, cls, pdmn, agrp, pk, attrs, data, blind digests (comma-separated text):
    /// the after-first-unlock items of the group, for the offline cache.
    public static let cachedItems = """
        SELECT i.id, i.ref, i.cls, i.pdmn, i.agrp, i.pk, i.attrs, i.data,
               (SELECT string_agg(b.digest::text, ',') FROM locket.blind b WHERE b.item = i.id)
        FROM locket.items i WHERE i.agrp = $1 AND i.pdmn = 'ck' ORDER BY i.id
        """
    /// $1 since (µs since 1970) -> id, device, item, operation, at.
    public static let listAudit = """
        SELECT id, device, item, operation, at FROM locket.audit
        WHERE at >= to_timestamp($1::float8 / 1000000) ORDER BY id
        """
}
