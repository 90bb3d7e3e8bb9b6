/* The "locket" VFS: why locket opens SQLite through a VFS of its own.
 *
 * It is SQLite's unix VFS with three changes, all to the WAL file, each
 * measured with `bench/writes` (strace of every sync, and the ext4 journal's
 * commits on a journaled file system; bench/README.md "What a write writes",
 * docs/architecture/sqlite.md "The connection's lifetime"):
 *
 * 1. A WAL file that already exists is opened without SQLITE_OPEN_CREATE. The
 * unix VFS fsyncs the directory after the first sync of any journal it was
 * asked to create, to make the new directory entry durable; locket keeps its
 * WAL between commands (SQLITE_FCNTL_PERSIST_WAL), so its entry has been
 * durable since the first write, and that directory fsync was paid again by
 * every write command (5 -> 4 fdatasyncs per `add`).
 *
 * 2. The WAL keeps its blocks. A writer closes with journal_size_limit=0, so
 * SQLite, once the WAL is checkpointed and the database synced, truncates it
 * to zero bytes; the next writer then grew it again from nothing, and each of
 * its fdatasyncs (the header, the commit) had to commit the file's new size
 * and blocks through the filesystem's journal (2 -> 0 journal commits per
 * `add`, `update` and `delete`). Here a WAL of at most
 * KEPT_WAL_BYTES is emptied in place instead: its 32-byte header is zeroed
 * (SQLite then finds no valid frame: the WAL is empty to any reader), and
 * whatever lies beyond the frames this connection wrote (frames of earlier
 * commands, invalid under any later header) is zeroed too, so no older page
 * stays in the file: up to the first zero frame header, as the tail beyond
 * is zero already (a crash that loses an emptying can leave stale frames
 * past that point; they stay invalid, as in any SQLite WAL). What remains
 * between them are this connection's frames, which SQLite has just copied
 * into the database: the file holds nothing the database does not.
 * Zeroing only up to the first zero frame took the next write's header sync
 * from 0.35-0.47 to 0.16-0.22 ms. Nothing here is synced, as SQLite's own
 * truncation is not: the checkpoint has already made the database durable,
 * and a WAL whose zeroing was lost is replayed harmlessly (its frames are
 * already in the database). Smaller truncations (at a commit) are skipped:
 * the frames beyond a commit are invalid already. A larger WAL (a big
 * import) is truncated as SQLite asks, so its space is given back.
 *
 * 3. A sync of the WAL with nothing written since its last sync is skipped
 * (see wal_sync): 4 -> 3 fdatasyncs per write, the shell's sqlite3 makes 5.
 *
 * ReadPathEndToEndTests pins the order of the syncs SPEC section 7 needs and
 * that a read-only command writes nothing. SQLite's allocator is set up in
 * allocator.c, before this VFS is registered. */

#include "locket_sqlite.h"
#include "allocator.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

sqlite3_destructor_type locket_sqlite_transient(void) { return SQLITE_TRANSIENT; }

static sqlite3_vfs locket_vfs;
static int (*unix_open)(sqlite3_vfs *, const char *, sqlite3_file *, int, int *);

enum { KEPT_WAL_BYTES = 1 << 20, WAL_HEADER_BYTES = 32 };

/* A WAL file: the unix VFS's own file follows this header in the same block. */
typedef struct {
    sqlite3_file base;
    sqlite3_file *real;
    /* The end of the furthest write this connection made. */
    sqlite3_int64 written;
    /* Nothing was written or truncated since the last sync, made with these flags. */
    int synced;
    int synced_flags;
} wal_file;

static sqlite3_io_methods wal_methods;

static sqlite3_file *real_of(sqlite3_file *file) { return ((wal_file *)file)->real; }

static int wal_close(sqlite3_file *file) { return real_of(file)->pMethods->xClose(real_of(file)); }
static int wal_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    return real_of(file)->pMethods->xRead(real_of(file), buffer, amount, offset);
}
static int wal_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    wal_file *wal = (wal_file *)file;
    wal->synced = 0;
    int rc = wal->real->pMethods->xWrite(wal->real, buffer, amount, offset);
    if (rc == SQLITE_OK && offset + amount > wal->written) wal->written = offset + amount;
    return rc;
}

/* The errno of this thread's last write(2) or pwrite64(2) from SQLite that
 * failed: SQLite reports EFBIG (past a file size limit) as a plain I/O
 * error, and what it keeps of errno is overwritten before it returns, so
 * the unix VFS's two write calls are wrapped to keep it. */
static __thread int write_errno;
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);

static ssize_t recorded_pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    ssize_t written = real_pwrite64(fd, buffer, count, offset);
    if (written < 0) write_errno = errno;
    return written;
}

static ssize_t recorded_write(int fd, const void *buffer, size_t count) {
    ssize_t written = real_write(fd, buffer, count);
    if (written < 0) write_errno = errno;
    return written;
}

/* Set lazily, before a process's first write, so a read-only command never
 * pays for it. Another thread's connection may be running meanwhile: it calls
 * the real write or its wrapper, the same write either way. */
static void record_write_errors_once(void) {
    sqlite3_vfs *unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == NULL) return;
    real_pwrite64 = (ssize_t (*)(int, const void *, size_t, off_t))unix_vfs->xGetSystemCall(unix_vfs, "pwrite64");
    if (real_pwrite64 != NULL) unix_vfs->xSetSystemCall(unix_vfs, "pwrite64", (sqlite3_syscall_ptr)recorded_pwrite64);
    real_write = (ssize_t (*)(int, const void *, size_t))unix_vfs->xGetSystemCall(unix_vfs, "write");
    if (real_write != NULL) unix_vfs->xSetSystemCall(unix_vfs, "write", (sqlite3_syscall_ptr)recorded_write);
}

void locket_sqlite_record_write_errors(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, record_write_errors_once);
}

int locket_sqlite_take_write_errno(void) {
    int code = write_errno;
    write_errno = 0;
    return code;
}

/* The end of the older commands' frames that follow `from`, a frame
 * boundary, in a WAL of `end` bytes whose frames are `frame` bytes: each
 * emptying leaves zeros after the frames it kept, so the first frame whose
 * header is zero ends them. Zeroing only those keeps a small write from
 * rewriting (and the next one from syncing) the whole zero tail that one
 * large write left, as it did every time. */
static int wal_stale_end(sqlite3_file *real, sqlite3_int64 from, sqlite3_int64 end, sqlite3_int64 frame,
                         sqlite3_int64 *stale) {
    static const unsigned char zero_header[24];
    unsigned char header[24];
    sqlite3_int64 at = from;
    while (at + (sqlite3_int64)sizeof header <= end) {
        int rc = real->pMethods->xRead(real, header, sizeof header, at);
        if (rc != SQLITE_OK) return rc;
        if (memcmp(header, zero_header, sizeof header) == 0) break;
        at += frame;
    }
    *stale = at < end ? at : end;
    return SQLITE_OK;
}

/* Writes zeros over [from, to). */
static int wal_zero(sqlite3_file *real, sqlite3_int64 from, sqlite3_int64 to) {
    static const char zeros[65536];
    while (from < to) {
        int n = to - from < (sqlite3_int64)sizeof zeros ? (int)(to - from) : (int)sizeof zeros;
        int rc = real->pMethods->xWrite(real, zeros, n, from);
        if (rc != SQLITE_OK) return rc;
        from += n;
    }
    return SQLITE_OK;
}

static int wal_truncate(sqlite3_file *file, sqlite3_int64 size) {
    wal_file *wal = (wal_file *)file;
    sqlite3_int64 now = 0;
    int rc = wal->real->pMethods->xFileSize(wal->real, &now);
    if (rc != SQLITE_OK || now > KEPT_WAL_BYTES) {
        wal->synced = 0;
        return wal->real->pMethods->xTruncate(wal->real, size);
    }
    if (size > 0 || now == 0) return SQLITE_OK;
    wal->synced = 0;
    /* The frame size, from the header about to be zeroed: a page size of
     * 512 to 65536 (stored as 1) after the 24-byte frame header. */
    unsigned char header[WAL_HEADER_BYTES];
    sqlite3_int64 frame = 0;
    if (now >= WAL_HEADER_BYTES && wal->real->pMethods->xRead(wal->real, header, WAL_HEADER_BYTES, 0) == SQLITE_OK) {
        uint32_t page = (uint32_t)header[8] << 24 | (uint32_t)header[9] << 16 | (uint32_t)header[10] << 8 | header[11];
        if (page == 1) page = 65536;
        if (page >= 512 && page <= 65536 && (page & (page - 1)) == 0) frame = 24 + (sqlite3_int64)page;
    }
    /* The header first: from here on the WAL is empty. A connection that
     * wrote no frame leaves the rest as the last writer left it. */
    rc = wal_zero(wal->real, 0, now < WAL_HEADER_BYTES ? now : WAL_HEADER_BYTES);
    if (rc != SQLITE_OK || wal->written <= 0 || wal->written >= now) return rc;
    sqlite3_int64 stale = now;
    if (frame > 0 && (wal->written - WAL_HEADER_BYTES) % frame == 0) {
        rc = wal_stale_end(wal->real, wal->written, now, frame, &stale);
        if (rc != SQLITE_OK) return rc;
    }
    return wal_zero(wal->real, wal->written, stale);
}

/* A sync with nothing written since the last one is skipped: the checkpoint
 * syncs the WAL before copying it into the database, but with
 * synchronous=FULL the commit has just synced every frame, and a second
 * fdatasync only costs the disk a cache flush. */
static int wal_sync(sqlite3_file *file, int flags) {
    wal_file *wal = (wal_file *)file;
    if (wal->synced && wal->synced_flags == flags) return SQLITE_OK;
    int rc = wal->real->pMethods->xSync(wal->real, flags);
    wal->synced = rc == SQLITE_OK;
    wal->synced_flags = flags;
    return rc;
}
static int wal_file_size(sqlite3_file *file, sqlite3_int64 *size) { return real_of(file)->pMethods->xFileSize(real_of(file), size); }
static int wal_lock(sqlite3_file *file, int level) { return real_of(file)->pMethods->xLock(real_of(file), level); }
static int wal_unlock(sqlite3_file *file, int level) { return real_of(file)->pMethods->xUnlock(real_of(file), level); }
static int wal_check_reserved_lock(sqlite3_file *file, int *out) {
    return real_of(file)->pMethods->xCheckReservedLock(real_of(file), out);
}
static int wal_file_control(sqlite3_file *file, int op, void *arg) {
    return real_of(file)->pMethods->xFileControl(real_of(file), op, arg);
}
static int wal_sector_size(sqlite3_file *file) { return real_of(file)->pMethods->xSectorSize(real_of(file)); }
static int wal_device_characteristics(sqlite3_file *file) {
    return real_of(file)->pMethods->xDeviceCharacteristics(real_of(file));
}

static int locket_vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out) {
    struct stat st;
    if (!(flags & SQLITE_OPEN_WAL)) return unix_open(vfs, name, file, flags, out);
    if (name != NULL && lstat(name, &st) == 0 && S_ISREG(st.st_mode)) flags &= ~SQLITE_OPEN_CREATE;
    wal_file *wal = (wal_file *)file;
    wal->real = (sqlite3_file *)(wal + 1);
    wal->written = 0;
    wal->synced = 0;
    int rc = unix_open(vfs, name, wal->real, flags, out);
    /* SQLite calls xClose only on a file whose pMethods is set. */
    wal->base.pMethods = rc == SQLITE_OK && wal->real->pMethods != NULL ? &wal_methods : NULL;
    return rc;
}

static const char *locket_vfs_name = NULL;

static void locket_vfs_register(void) {
    /* Before SQLite initializes, which sqlite3_vfs_find does. */
    locket_sqlite_configure_memory();
    sqlite3_vfs *unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == NULL) return;
    locket_vfs = *unix_vfs;
    locket_vfs.zName = "locket";
    locket_vfs.pNext = NULL;
    /* Room for a WAL file's header before the unix file (sizeof keeps it
     * 8-byte aligned); other files use the block as the unix VFS would. */
    locket_vfs.szOsFile = (int)sizeof(wal_file) + unix_vfs->szOsFile;
    unix_open = unix_vfs->xOpen;
    locket_vfs.xOpen = locket_vfs_open;
    wal_methods = (sqlite3_io_methods){
        .iVersion = 1,
        .xClose = wal_close,
        .xRead = wal_read,
        .xWrite = wal_write,
        .xTruncate = wal_truncate,
        .xSync = wal_sync,
        .xFileSize = wal_file_size,
        .xLock = wal_lock,
        .xUnlock = wal_unlock,
        .xCheckReservedLock = wal_check_reserved_lock,
        .xFileControl = wal_file_control,
        .xSectorSize = wal_sector_size,
        .xDeviceCharacteristics = wal_device_characteristics,
    };
    if (sqlite3_vfs_register(&locket_vfs, 0) == SQLITE_OK) locket_vfs_name = "locket";
}

const char *locket_sqlite_vfs(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, locket_vfs_register);
    return locket_vfs_name;
}
