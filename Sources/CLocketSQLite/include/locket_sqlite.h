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

#endif
