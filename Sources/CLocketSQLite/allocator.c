/* SQLite's memory: why locket gives SQLite an allocator of its own.
 *
 * Debian builds SQLite with SQLITE_OMIT_LOOKASIDE, so every allocation of a
 * connection (some 500 in a `find`: the parsed schema above all, and each
 * statement's parts) was a glibc malloc and a free: a tenth of a `find`'s
 * instructions went to glibc's allocator. Measured with callgrind on the
 * stripped release binary (bench/README.md, the table after "Start-up"):
 * malloc + free under SQLite 137 k -> 40 k instructions, sqlite3_close_v2
 * 30 k -> 15 k, a whole `find -w` 1,279,769 -> 1,166,956 at 1 k items and
 * 1,288,339 -> 1,173,626 at 1 M (docs/architecture/sqlite.md "SQLite's memory").
 *
 * A block of up to SMALL_LIMIT bytes (header included) comes from one of 32
 * classes 16 bytes apart, each a free list over 64 KiB chunks; larger blocks
 * (pages, big blobs) go to malloc. Chunks are never given back: each class
 * keeps its peak, which SQLite's bounded page cache and statement set keep to
 * a few chunks. Every block starts with its usable size, as in SQLite's own
 * allocator, for xSize and xFree. It holds what glibc's malloc held: SQLite's
 * structures and pages of the file (sealed values, digests), never an opened
 * secret. Threads: SQLite takes no lock around xMalloc once memory
 * statistics are off, so a spin lock guards the lists (the critical sections
 * are a few instructions; locket itself runs SQLite on one thread). Off
 * where C is built with AddressSanitizer, whose malloc then checks SQLite's
 * blocks. */

#include "allocator.h"

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

void locket_sqlite_configure_memory(void) {
    /* No memory statistics, which locket never reads; with them, every
     * allocation and free takes a global mutex (a tenth of a `find`'s SQLite
     * instructions, bench/README.md). */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
#if !LOCKET_ADDRESS_SANITIZER
    sqlite3_config(SQLITE_CONFIG_MALLOC, &locket_mem);
#endif
    /* No page-cache bulk: Debian's SQLite mallocs room for 20 pages per
     * connection up front and writes a header into each, 20 fresh heap pages
     * faulted in; a lookup reads fewer pages than that, each now malloc'd
     * when read (bench/README.md "Start-up"). */
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}
