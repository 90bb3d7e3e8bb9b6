#ifndef LOCKET_SQLITE_H
#define LOCKET_SQLITE_H

#include <sqlite3.h>

/// SQLite's SQLITE_TRANSIENT is a macro casting -1 to a function pointer,
/// which Swift cannot import.
sqlite3_destructor_type locket_sqlite_transient(void);

/// The name of SQLite's unix VFS with three changes to the WAL file: one that
/// already exists is opened without SQLITE_OPEN_CREATE, so no directory fsync
/// follows its first sync; one of at most 1 MiB is emptied in place (header
/// and stale frames zeroed) instead of truncated, so the next writer's
/// fdatasyncs have no new size or blocks to commit; and a sync with nothing
/// written since the last one (the checkpoint's, after the commit's) is
/// skipped. NULL (the default VFS) if it could not be registered.
const char *locket_sqlite_vfs(void);

/// From now on, keeps the errno of every write(2) and pwrite64(2) of
/// SQLite's unix VFS that fails, for `locket_sqlite_take_write_errno`.
/// Called before the first write (a read-only command never pays for it);
/// once per process, whatever the thread.
void locket_sqlite_record_write_errors(void);

/// The errno of this thread's last failed write by SQLite (0: none since the
/// last call), which it clears: what SQLite reports as an I/O error may be
/// a file size limit (EFBIG) or a full disk (ENOSPC).
int locket_sqlite_take_write_errno(void);

#endif
