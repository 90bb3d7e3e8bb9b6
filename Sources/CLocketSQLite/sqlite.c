#include "locket_sqlite.h"

#include <pthread.h>
#include <sys/stat.h>

sqlite3_destructor_type locket_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/* The "locket" VFS: SQLite's unix VFS, except that a WAL file that already
 * exists is opened without SQLITE_OPEN_CREATE. The unix VFS fsyncs the
 * directory after the first sync of any journal it was asked to create, to
 * make the new directory entry durable; locket keeps its WAL between commands
 * (SQLITE_FCNTL_PERSIST_WAL), so its entry has been durable since the first
 * write, and that directory fsync was paid again by every write command. */
static sqlite3_vfs locket_vfs;
static int (*unix_open)(sqlite3_vfs *, const char *, sqlite3_file *, int, int *);

static int locket_vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out) {
    struct stat st;
    if ((flags & SQLITE_OPEN_WAL) && name != NULL && lstat(name, &st) == 0 && S_ISREG(st.st_mode)) {
        flags &= ~SQLITE_OPEN_CREATE;
    }
    return unix_open(vfs, name, file, flags, out);
}

static const char *locket_vfs_name = NULL;

static void locket_vfs_register(void) {
    /* Before SQLite initializes (sqlite3_vfs_find does): no memory
     * statistics, which locket never reads; with them, every allocation and
     * free takes a global mutex (a tenth of a `find`'s SQLite instructions).
     * Fails harmlessly (SQLITE_MISUSE) where SQLite is already initialized. */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
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
    unix_open = unix_vfs->xOpen;
    locket_vfs.xOpen = locket_vfs_open;
    if (sqlite3_vfs_register(&locket_vfs, 0) == SQLITE_OK) locket_vfs_name = "locket";
}

const char *locket_sqlite_vfs(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, locket_vfs_register);
    return locket_vfs_name;
}
