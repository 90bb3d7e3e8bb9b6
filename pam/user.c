/* pam_locket: who locket runs as, which locket, and with what environment.
 * Everything here happens before fork: the child makes only
 * async-signal-safe calls (run.c). */
#define _GNU_SOURCE
#include "pam_locket.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>

int locket_user_lookup(pam_handle_t *pamh, const char *name, struct locket_user *user) {
    memset(user, 0, sizeof *user);
    long size = sysconf(_SC_GETPW_R_SIZE_MAX);
    if (size < 16384) size = 16384;
    user->buffer = malloc((size_t)size);
    if (user->buffer == NULL) return -1;
    struct passwd entry, *found = NULL;
    int error = getpwnam_r(name, &entry, user->buffer, (size_t)size, &found);
    if (error != 0 || found == NULL) {
        pam_syslog(pamh, LOG_WARNING, "no such user as %s in the password database: nothing done", name);
        locket_user_free(user);
        return -1;
    }
    user->uid = entry.pw_uid;
    user->gid = entry.pw_gid;
    user->name = entry.pw_name;
    user->home = entry.pw_dir;
    int count = 64;
    for (int attempt = 0; attempt < 4; attempt++) {
        gid_t *groups = realloc(user->groups, sizeof(gid_t) * (size_t)count);
        if (groups == NULL) break;
        user->groups = groups;
        int n = count;
        if (getgrouplist(user->name, user->gid, user->groups, &n) >= 0) {
            user->group_count = n;
            return 0;
        }
        count = n > count ? n : count * 4;
    }
    pam_syslog(pamh, LOG_WARNING, "cannot read the groups of %s: nothing done", name);
    locket_user_free(user);
    return -1;
}

void locket_user_free(struct locket_user *user) {
    free(user->groups);
    free(user->buffer);
    memset(user, 0, sizeof *user);
}

/* locket gets a user's password: it must be root's, and nobody else may be
 * able to replace it or a directory above it (a sticky directory, /tmp,
 * only above an entry of root's), or another user could read the password
 * of whoever logs in next. Returns the resolved path to run, or NULL. */
char *locket_checked_executable(pam_handle_t *pamh, const char *path) {
    if (path[0] != '/') {
        pam_syslog(pamh, LOG_WARNING, "locket path %s is not absolute: nothing done", path);
        return NULL;
    }
    char *resolved = realpath(path, NULL);
    if (resolved == NULL) {
        pam_syslog(pamh, LOG_WARNING, "cannot run %s: %s (make install puts it there, or give locket=PATH): nothing done",
                   path, strerror(errno));
        return NULL;
    }
    struct stat st;
    int result = 0;
    if (stat(resolved, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
        pam_syslog(pamh, LOG_WARNING, "cannot run %s: not an executable file: nothing done", path);
        result = -1;
    } else if (st.st_uid != 0 || (st.st_mode & 022) != 0) {
        pam_syslog(pamh, LOG_WARNING, "will not run %s: it is not root's, or others can write it: nothing done", path);
        result = -1;
    }
    /* Walking up from the file: the entry below each directory is already
     * known to be root's, so a sticky directory can't have it replaced. */
    char *walk = strdup(resolved);
    if (walk == NULL) result = -1;
    for (char *slash = walk ? strrchr(walk, '/') : NULL; result == 0 && slash != NULL; slash = strrchr(walk, '/')) {
        *slash = '\0';
        const char *directory = walk[0] ? walk : "/";
        if (stat(directory, &st) != 0 || st.st_uid != 0 || ((st.st_mode & 022) != 0 && !(st.st_mode & S_ISVTX))) {
            pam_syslog(pamh, LOG_WARNING, "will not run %s: others can change %s: nothing done", path, directory);
            result = -1;
        }
        if (walk[0] == '\0') break;
    }
    free(walk);
    if (result != 0) {
        free(resolved);
        return NULL;
    }
    /* The checked file is the one run: a link on the way can't be pointed elsewhere in between. */
    return resolved;
}

static int add_variable(char **environment, int *count, const char *name, const char *value) {
    if (value == NULL) return 0;
    size_t length = strlen(name) + strlen(value) + 2;
    char *entry = malloc(length);
    if (entry == NULL) return -1;
    snprintf(entry, length, "%s=%s", name, value);
    environment[(*count)++] = entry;
    return 0;
}

/* The child's whole environment: the account's, the PAM environment's XDG
 * directories (where the session will look for the keychain and its
 * session), and the runtime directory logind made for the user. */
char **locket_child_environment(pam_handle_t *pamh, const struct locket_user *user) {
    char **environment = calloc(16, sizeof(char *));
    if (environment == NULL) return NULL;
    int n = 0;
    int failed = add_variable(environment, &n, "HOME", user->home) | add_variable(environment, &n, "USER", user->name)
        | add_variable(environment, &n, "LOGNAME", user->name) | add_variable(environment, &n, "PATH", "/usr/local/bin:/usr/bin:/bin");
    static const char *const xdg[] = {"XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"};
    for (size_t i = 0; i < sizeof xdg / sizeof xdg[0]; i++) {
        const char *value = pam_getenv(pamh, xdg[i]);
        if (value != NULL && value[0] == '/') failed |= add_variable(environment, &n, xdg[i], value);
    }
    if (pam_getenv(pamh, "XDG_RUNTIME_DIR") == NULL) {
        /* pam_systemd may come later in the stack: logind's directory, if it is the user's alone. */
        char runtime[64];
        struct stat st;
        snprintf(runtime, sizeof runtime, "/run/user/%lu", (unsigned long)user->uid);
        if (lstat(runtime, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == user->uid && (st.st_mode & 077) == 0)
            failed |= add_variable(environment, &n, "XDG_RUNTIME_DIR", runtime);
    }
    if (failed) {
        for (int i = 0; i < n; i++) free(environment[i]);
        free(environment);
        return NULL;
    }
    return environment;
}

void locket_free_environment(char **environment) {
    for (int i = 0; environment != NULL && environment[i] != NULL; i++) free(environment[i]);
    free(environment);
}

