#include <libpq-fe.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/// The helper holds the database password for a moment: no core dumps
/// (PR_SET_DUMPABLE 0, RLIMIT_CORE 0). prctl(2) is variadic, so Swift can't call it.
static inline void locket_pg_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    (void)setrlimit(RLIMIT_CORE, &none);
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}
