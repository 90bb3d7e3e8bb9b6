#include "locket_sqlite.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

sqlite3_destructor_type locket_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/* The "locket" VFS: SQLite's unix VFS with three changes, all to the WAL file.
 *
 * 1. A WAL file that already exists is opened without SQLITE_OPEN_CREATE. The
 * unix VFS fsyncs the directory after the first sync of any journal it was
 * asked to create, to make the new directory entry durable; locket keeps its
 * WAL between commands (SQLITE_FCNTL_PERSIST_WAL), so its entry has been
 * durable since the first write, and that directory fsync was paid again by
 * every write command.
 *
 * 2. The WAL keeps its blocks. A writer closes with journal_size_limit=0, so
 * SQLite, once the WAL is checkpointed and the database synced, truncates it
 * to zero bytes; the next writer then grew it again from nothing, and each of
 * its fdatasyncs (the header, the commit) had to commit the file's new size
 * and blocks through the filesystem's journal. Here a WAL of at most
 * KEPT_WAL_BYTES is emptied in place instead: its 32-byte header is zeroed
 * (SQLite then finds no valid frame: the WAL is empty to any reader), and
 * whatever lies beyond the frames this connection wrote (frames of earlier
 * commands, invalid under any later header) is zeroed too, so no older page
 * stays in the file: up to the first zero frame header, as the tail beyond
 * is zero already (a crash that loses an emptying can leave stale frames
 * past that point; they stay invalid, as in any SQLite WAL). What remains
 * between them are this connection's frames, which SQLite has just copied
 * into the database: the file holds nothing the database does not.
 * Nothing here is synced, as SQLite's own truncation is
 * not: the checkpoint has already made the database durable, and a WAL whose
 * zeroing was lost is replayed harmlessly (its frames are already in the
 * database). Smaller truncations (at a commit) are skipped: the frames beyond
 * a commit are invalid already. A larger WAL (a big import) is truncated as
 * SQLite asks, so its space is given back.
 *
 * 3. A sync of the WAL with nothing written since its last sync is skipped
 * (see wal_sync). */
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

/* SQLite's memory. Debian builds SQLite with SQLITE_OMIT_LOOKASIDE, so every
 * allocation (some 500 in a `find`: the parsed schema, each statement's
 * parts) is a malloc and a free: a tenth of a `find`'s instructions went to
 * glibc's allocator. Here a block of up to SMALL_LIMIT bytes (header
 * included) comes from one of 32 classes 16 bytes apart, each a free list
 * over 64 KiB chunks; larger blocks (pages, big blobs) go to malloc. Chunks
 * are never given back: each class keeps its peak, which SQLite's bounded
 * page cache and statement set keep to a few chunks. Every block starts
 * with its usable size, as in SQLite's own allocator, for xSize and xFree.
 * Threads: SQLite takes no lock around xMalloc once memory statistics are
 * off, so a spin lock guards the lists (the critical sections are a few
 * instructions; locket itself runs SQLite on one thread). Off where C
 * is built with AddressSanitizer, whose malloc then checks SQLite's blocks. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOCKET_ADDRESS_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LOCKET_ADDRESS_SANITIZER 1
#endif
#ifndef LOCKET_ADDRESS_SANITIZER
#define LOCKET_ADDRESS_SANITIZER 0
#endif

#define SMALL_LIMIT 512
#define CLASS_STEP 16
#define CLASSES (SMALL_LIMIT / CLASS_STEP)
#define CHUNK_SIZE (64 * 1024)

static void *free_lists[CLASSES];
static char *chunk_next, *chunk_end;
static atomic_flag mem_lock = ATOMIC_FLAG_INIT;

static void mem_take(void) {
    while (atomic_flag_test_and_set_explicit(&mem_lock, memory_order_acquire)) {}
}

static void mem_give(void) { atomic_flag_clear_explicit(&mem_lock, memory_order_release); }

/* The whole block (header included) `n` usable bytes need. */
static size_t mem_total(int n) { return ((size_t)n + 8 + CLASS_STEP - 1) & ~(size_t)(CLASS_STEP - 1); }

static void *mem_malloc(int n) {
    if (n <= 0) return NULL;
    size_t total = mem_total(n);
    uint64_t *block;
    if (total > SMALL_LIMIT) {
        block = malloc(total);
        if (block == NULL) return NULL;
    } else {
        size_t index = total / CLASS_STEP - 1;
        mem_take();
        block = free_lists[index];
        if (block != NULL) {
            free_lists[index] = *(void **)(block + 1);
        } else {
            if ((size_t)(chunk_end - chunk_next) < total) {
                char *chunk = malloc(CHUNK_SIZE);
                if (chunk == NULL) {
                    mem_give();
                    return NULL;
                }
                chunk_next = chunk;
                chunk_end = chunk + CHUNK_SIZE;
            }
            block = (uint64_t *)chunk_next;
            chunk_next += total;
        }
        mem_give();
    }
    block[0] = total - 8;
    return block + 1;
}

static void mem_free(void *p) {
    if (p == NULL) return;
    uint64_t *block = (uint64_t *)p - 1;
    size_t total = block[0] + 8;
    if (total > SMALL_LIMIT) {
        free(block);
        return;
    }
    size_t index = total / CLASS_STEP - 1;
    mem_take();
    *(void **)p = free_lists[index];
    free_lists[index] = block;
    mem_give();
}

static int mem_size(void *p) { return p == NULL ? 0 : (int)((uint64_t *)p)[-1]; }

static void *mem_realloc(void *p, int n) {
    if (p == NULL) return mem_malloc(n);
    if (n <= 0) return NULL;
    uint64_t *block = (uint64_t *)p - 1;
    size_t usable = block[0];
    /* Big enough already: kept (SQLite asks xSize, not what it requested). */
    if ((size_t)n <= usable) return p;
    size_t total = mem_total(n);
    if (usable + 8 > SMALL_LIMIT) {
        /* Growing a large block: glibc may extend it in place. */
        uint64_t *grown = realloc(block, total);
        if (grown == NULL) return NULL;
        grown[0] = total - 8;
        return grown + 1;
    }
    void *moved = mem_malloc(n);
    if (moved == NULL) return NULL;
    memcpy(moved, p, usable);
    mem_free(p);
    return moved;
}

static int mem_roundup(int n) {
    if (n <= 0) return n;
    size_t total = mem_total(n);
    return total > SMALL_LIMIT ? (int)(((size_t)n + 7) & ~(size_t)7) : (int)(total - 8);
}

static int mem_init(void *unused) { (void)unused; return SQLITE_OK; }

static void mem_shutdown(void *unused) { (void)unused; }

static const sqlite3_mem_methods locket_mem __attribute__((unused)) = {
    mem_malloc, mem_free, mem_realloc, mem_size, mem_roundup, mem_init, mem_shutdown, NULL,
};

static const char *locket_vfs_name = NULL;

static void locket_vfs_register(void) {
    /* Before SQLite initializes (sqlite3_vfs_find does): no memory
     * statistics, which locket never reads; with them, every allocation and
     * free takes a global mutex (a tenth of a `find`'s SQLite instructions).
     * And its memory from locket_mem (above). Both fail harmlessly
     * (SQLITE_MISUSE) where SQLite is already initialized. */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
#if !LOCKET_ADDRESS_SANITIZER
    sqlite3_config(SQLITE_CONFIG_MALLOC, &locket_mem);
#endif
    /* No page-cache bulk: Debian's SQLite mallocs room for 20 pages per
     * connection up front and writes a header into each, 20 fresh heap pages
     * faulted in; a lookup reads fewer pages than that, each now malloc'd
     * when read (bench/README.md "Start-up"). */
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
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
