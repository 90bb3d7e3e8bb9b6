#ifndef LOCKET_SQLITE_ALLOCATOR_H
#define LOCKET_SQLITE_ALLOCATOR_H

/* Sets SQLite's memory up (allocator.c): no memory statistics, small blocks
 * from size classes, no page-cache bulk. Must run before SQLite initializes;
 * where it already has, each setting fails harmlessly (SQLITE_MISUSE). */
void locket_sqlite_configure_memory(void);

#endif
