/* pam_locket: what the module's two files share (see pam_locket.c). */
#ifndef PAM_LOCKET_H
#define PAM_LOCKET_H

#include <security/pam_modules.h>
#include <sys/types.h>

/* make install's $(BINDIR)/locket, fixed when the module is built: login
 * reads no environment variable to find it. The `locket=` argument of the
 * module's line in a PAM service file (root's to write) overrides it. */
#ifndef LOCKET_PATH
#define LOCKET_PATH "/usr/local/bin/locket"
#endif

/* The module is built with hidden symbols: only PAM's entry points are seen. */
#define LOCKET_EXPORT __attribute__((visibility("default")))

/* The longest a PAM call of this module waits for locket, by default and
 * at most (the `max_wait=SECONDS` argument). */
#define LOCKET_DEFAULT_WAIT_MS 10000
#define LOCKET_LONGEST_WAIT_MS 60000

struct locket_options {
    const char *locket;
    int lock_on_close;
    int max_wait_ms;
    /* "none" (the default: the keychain stays unlocked for the session),
     * "keychain" (its own auto-lock setting) or a number of seconds. */
    const char *auto_lock;
    /* Where logind keeps its state (`/run/systemd`); tests name another. */
    const char *logind_dir;
};

/* The account locket runs as, read before fork (nothing but async-signal-safe
 * calls happen in the child). */
struct locket_user {
    uid_t uid;
    gid_t gid;
    char *name;
    char *home;
    gid_t *groups;
    int group_count;
    char *buffer;
};

int locket_user_lookup(pam_handle_t *pamh, const char *name, struct locket_user *user);
void locket_user_free(struct locket_user *user);

/* The locket to run, resolved, when only root can change it and every
 * directory above it (logged otherwise); NULL when it must not be run. */
char *locket_checked_executable(pam_handle_t *pamh, const char *path);

/* The child's whole environment (NULL-terminated, malloc'd), and its freeing. */
char **locket_child_environment(pam_handle_t *pamh, const struct locket_user *user);
void locket_free_environment(char **environment);

/* Runs `locket ARGS` as `user` with `input` on its standard input, logs
 * what it prints, and returns its exit status: 0-255, or -1 when it could
 * not run or was killed at the deadline (logged). */
int locket_run(pam_handle_t *pamh, const struct locket_options *options, const struct locket_user *user,
               const char *const *arguments, const char *input, size_t input_length);

#endif
