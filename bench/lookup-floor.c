/* A lower bound for `locket find -w` (issue 43): the SQLite and libsodium
 * work of a lookup on a keychain without a password, as a static C program
 * with nothing else. It opens the keychain as locket does (exclusive lock,
 * the WAL index in memory), reads the schema, the meta and keybag rows and
 * one item through the blind index, and runs the lookup's hash and box
 * operations (BLAKE2b for the device key, the header's MAC and the blind
 * digests; XSalsa20-Poly1305 opens for the index key, one class key and the
 * item's attributes and data). It skips what only locket does: arguments,
 * path and owner checks, the session, the rollback mirror, Swift's runtime.
 * bench/lookup-floor builds and times it beside /bin/true and locket. */
#include <fcntl.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <unistd.h>

static int rows(sqlite3 *db, const char *sql, sqlite3_int64 bound) {
    sqlite3_stmt *stmt;
    int bytes = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) return -1;
    if (bound) sqlite3_bind_int64(stmt, 1, bound);
    while (sqlite3_step(stmt) == SQLITE_ROW)
        for (int column = 0; column < sqlite3_column_count(stmt); column++) bytes += sqlite3_column_bytes(stmt, column);
    sqlite3_finalize(stmt);
    return bytes;
}

int main(int argc, char **argv) {
    if (argc != 2 || sodium_init() < 0) return 2;
    sqlite3 *db;
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) return 1;
    sqlite3_exec(db, "PRAGMA locking_mode=EXCLUSIVE", NULL, NULL, NULL);

    unsigned char key[32] = {1}, digest[32], box[crypto_secretbox_MACBYTES + 96] = {0}, clear[96], nonce[24] = {0};
    char machine[33] = {0};
    int fd = open("/etc/machine-id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) { if (read(fd, machine, 32) < 0) machine[0] = 0; close(fd); }

    int bytes = rows(db, "SELECT name, value FROM meta", 0);
    bytes += rows(db, "SELECT class, kek, device FROM keybag", 0);
    for (int i = 0; i < 8; i++) crypto_generichash(digest, sizeof digest, box, sizeof box, key, sizeof key);
    /* Boxes that do not open cost their MAC, not their decryption: still a lower bound. */
    for (int i = 0; i < 4; i++) bytes += crypto_secretbox_open_easy(clear, box, sizeof box, nonce, key);
    bytes += rows(db, "SELECT id, ref, cls, pdmn, agrp, attrs, data FROM items WHERE cls = 'genp' AND id IN "
                      "(SELECT item FROM blind WHERE digest = ?1) ORDER BY id", 0x1234);
    sqlite3_close_v2(db);
    printf("%d\n", bytes);
    return 0;
}
