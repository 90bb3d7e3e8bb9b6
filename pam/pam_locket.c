/* pam_locket.so: the login keychain unlocked with the login password
 * (SPEC §20). Small C with no Swift runtime, since it runs inside sshd,
 * gdm and login; the work is `locket pam ...`, run as the user (run.c).
 *
 *   auth      keeps the password the preceding module (pam_unix) took, as
 *             PAM data wiped when it has been used or when the handle ends;
 *             authenticates nothing (PAM_IGNORE, even when it is `sufficient`).
 *   setcred   with PAM_REINITIALIZE_CRED or PAM_REFRESH_CRED (a screen
 *             unlocked, which opens no session): unlocks with it.
 *   session   open: unlocks the login keychain with it (`locket pam unlock`);
 *             close, with lock_on_close: locks the user's keychains
 *             (`locket pam lock`) unless logind lists another live session.
 *   password  PAM_UPDATE_AUTHTOK: the keychain's password follows the login
 *             password when the old one opened it (`locket pam passwd`).
 *
 * Arguments: locket=PATH (default LOCKET_PATH, make install's), lock_on_close,
 * max_wait=SECONDS (1-60, default 10: the longest any call waits for
 * locket), auto_lock=none|keychain|SECONDS (how long the login's unlock
 * lasts without use; default none: until locked), test_logind_dir=DIR.
 *
 * It never blocks or fails a login: auth returns PAM_IGNORE (so that even
 * as `sufficient` it lets nobody in), the session calls return PAM_SUCCESS (so a
 * stack with no other session module still opens), setcred and password
 * PAM_SUCCESS when they did their work and PAM_IGNORE otherwise; what it did
 * or why not is one log line, and no call waits for locket past max_wait. */
#define _GNU_SOURCE
#include "pam_locket.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>

#define AUTHTOK_DATA "pam_locket_authtok"
/* Longer than any PAM conversation returns (PAM_MAX_RESP_SIZE is 512). */
#define LONGEST_PASSWORD 4096

static void parse_options(pam_handle_t *pamh, int argc, const char **argv, struct locket_options *options) {
    options->locket = LOCKET_PATH;
    options->lock_on_close = 0;
    options->max_wait_ms = LOCKET_DEFAULT_WAIT_MS;
    options->auto_lock = "none";
    options->logind_dir = "/run/systemd";
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "locket=", 7) == 0 && arg[7] == '/') {
            options->locket = arg + 7;
        } else if (strcmp(arg, "lock_on_close") == 0) {
            options->lock_on_close = 1;
        } else if (strncmp(arg, "max_wait=", 9) == 0) {
            char *end = NULL;
            long seconds = strtol(arg + 9, &end, 10);
            if (end != arg + 9 && *end == '\0' && seconds >= 1 && seconds * 1000 <= LOCKET_LONGEST_WAIT_MS)
                options->max_wait_ms = (int)seconds * 1000;
            else
                pam_syslog(pamh, LOG_WARNING, "max_wait takes 1 to %d seconds, not '%.40s': waiting %d s",
                           LOCKET_LONGEST_WAIT_MS / 1000, arg + 9, LOCKET_DEFAULT_WAIT_MS / 1000);
        } else if (strncmp(arg, "auto_lock=", 10) == 0) {
            const char *value = arg + 10;
            size_t digits = strspn(value, "0123456789");
            if (strcmp(value, "none") == 0 || strcmp(value, "keychain") == 0 || (digits > 0 && digits < 9 && value[digits] == '\0' && atoi(value) > 0))
                options->auto_lock = value;
            else
                pam_syslog(pamh, LOG_WARNING, "auto_lock takes none, keychain or a number of seconds, not '%.40s': none", value);
        } else if (strncmp(arg, "test_logind_dir=", 16) == 0 && arg[16] == '/') {
            options->logind_dir = arg + 16;
        } else {
            pam_syslog(pamh, LOG_WARNING, "unknown argument '%.60s' ignored", arg);
        }
    }
}

static void wipe_password(pam_handle_t *pamh, void *data, int error_status) {
    (void)pamh;
    (void)error_status;
    if (data == NULL) return;
    explicit_bzero(data, strlen(data));
    free(data);
}

/* A password locket can take as one line on its standard input. */
static int usable(pam_handle_t *pamh, const char *password, const char *what) {
    if (password == NULL || password[0] == '\0') {
        pam_syslog(pamh, LOG_NOTICE, "no %s password was given: the keychain is left as it is", what);
        return 0;
    }
    if (strlen(password) > LONGEST_PASSWORD || strchr(password, '\n') != NULL) {
        pam_syslog(pamh, LOG_WARNING, "the %s password is longer than %d bytes or holds a line break: the keychain is left as it is",
                   what, LONGEST_PASSWORD);
        return 0;
    }
    return 1;
}

static const char *kept_password(pam_handle_t *pamh) {
    const void *data = NULL;
    if (pam_get_data(pamh, AUTHTOK_DATA, &data) != PAM_SUCCESS) return NULL;
    return data;
}

static void keep_password(pam_handle_t *pamh, const char *password) {
    char *copy = password ? strdup(password) : NULL;
    if (pam_set_data(pamh, AUTHTOK_DATA, copy, copy ? wipe_password : NULL) != PAM_SUCCESS) wipe_password(pamh, copy, 0);
}

static const char *user_name(pam_handle_t *pamh) {
    const void *item = NULL;
    if (pam_get_item(pamh, PAM_USER, &item) != PAM_SUCCESS || item == NULL || ((const char *)item)[0] == '\0') {
        pam_syslog(pamh, LOG_NOTICE, "no user name in the PAM handle: nothing done");
        return NULL;
    }
    return item;
}

/* `locket pam COMMAND` as the user, `input` on its stdin; the exit status, or -1. */
static int run_as_user(pam_handle_t *pamh, const struct locket_options *options, const char *const *arguments,
                       const char *input, size_t input_length) {
    const char *name = user_name(pamh);
    if (name == NULL) return -1;
    struct locket_user user;
    if (locket_user_lookup(pamh, name, &user) != 0) return -1;
    int status = locket_run(pamh, options, &user, arguments, input, input_length);
    locket_user_free(&user);
    return status;
}

/* `locket pam unlock` with the kept password. */
static int unlock(pam_handle_t *pamh, const struct locket_options *options, const char *password) {
    const char *arguments[6] = {"pam", "unlock", NULL, NULL, NULL, NULL};
    if (strcmp(options->auto_lock, "keychain") != 0) {
        arguments[2] = "--timeout";
        arguments[3] = options->auto_lock;
    }
    size_t length = strlen(password);
    char *line = malloc(length + 2);
    if (line == NULL) return -1;
    memcpy(line, password, length);
    line[length] = '\n';
    int status = run_as_user(pamh, options, arguments, line, length + 1);
    explicit_bzero(line, length + 2);
    free(line);
    return status;
}

LOCKET_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    struct locket_options options;
    parse_options(pamh, argc, argv, &options);
    const void *item = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &item) != PAM_SUCCESS || item == NULL) {
        pam_syslog(pamh, LOG_NOTICE, "no password at authentication (pam_locket goes after the module that asks for it, "
                                     "such as pam_unix): the keychain is left as it is");
        return PAM_IGNORE;
    }
    if (usable(pamh, item, "login")) keep_password(pamh, item);
    return PAM_IGNORE;
}

LOCKET_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    if (!(flags & (PAM_REINITIALIZE_CRED | PAM_REFRESH_CRED))) return PAM_IGNORE;
    struct locket_options options;
    parse_options(pamh, argc, argv, &options);
    const char *password = kept_password(pamh);
    if (password == NULL) return PAM_IGNORE;
    return unlock(pamh, &options, password) == 0 ? PAM_SUCCESS : PAM_IGNORE;
}

LOCKET_EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    struct locket_options options;
    parse_options(pamh, argc, argv, &options);
    const char *password = kept_password(pamh);
    if (password == NULL) {
        pam_syslog(pamh, LOG_NOTICE, "no password was kept at authentication (a login by key, token or another module): "
                                     "the keychain is left as it is");
        return PAM_SUCCESS;
    }
    unlock(pamh, &options, password);
    /* Used: gone now rather than at the end of the handle. */
    keep_password(pamh, NULL);
    return PAM_SUCCESS;
}

/* Whether logind lists a live session of `uid` other than this one: closing
 * one of several sessions (an ssh logout beside the desktop) locks nothing. */
static int other_live_session(pam_handle_t *pamh, const struct locket_options *options, uid_t uid) {
    char path[PATH_MAX], line[4096];
    snprintf(path, sizeof path, "%s/users/%lu", options->logind_dir, (unsigned long)uid);
    FILE *users = fopen(path, "re");
    if (users == NULL) return 0;
    const char *own = pam_getenv(pamh, "XDG_SESSION_ID");
    int found = 0;
    while (!found && fgets(line, sizeof line, users) != NULL) {
        if (strncmp(line, "SESSIONS=", 9) != 0) continue;
        for (char *save = NULL, *id = strtok_r(line + 9, " \n", &save); id && !found; id = strtok_r(NULL, " \n", &save)) {
            if ((own && strcmp(id, own) == 0) || strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(id)) continue;
            char session_path[PATH_MAX], state[256];
            snprintf(session_path, sizeof session_path, "%s/sessions/%s", options->logind_dir, id);
            FILE *session = fopen(session_path, "re");
            if (session == NULL) continue;
            while (fgets(state, sizeof state, session) != NULL) {
                if (strcmp(state, "STATE=active\n") == 0 || strcmp(state, "STATE=online\n") == 0) found = 1;
            }
            fclose(session);
        }
    }
    fclose(users);
    return found;
}

LOCKET_EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    struct locket_options options;
    parse_options(pamh, argc, argv, &options);
    if (!options.lock_on_close) return PAM_SUCCESS;
    const char *name = user_name(pamh);
    struct locket_user user;
    if (name == NULL || locket_user_lookup(pamh, name, &user) != 0) return PAM_SUCCESS;
    if (other_live_session(pamh, &options, user.uid)) {
        pam_syslog(pamh, LOG_NOTICE, "%s has another session open: the keychains stay unlocked", name);
    } else {
        const char *arguments[] = {"pam", "lock", NULL};
        locket_run(pamh, &options, &user, arguments, NULL, 0);
    }
    locket_user_free(&user);
    return PAM_SUCCESS;
}

LOCKET_EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    if (!(flags & PAM_UPDATE_AUTHTOK)) return PAM_IGNORE;
    struct locket_options options;
    parse_options(pamh, argc, argv, &options);
    const void *old_item = NULL, *new_item = NULL;
    pam_get_item(pamh, PAM_OLDAUTHTOK, &old_item);
    pam_get_item(pamh, PAM_AUTHTOK, &new_item);
    if (new_item == NULL) {
        pam_syslog(pamh, LOG_NOTICE, "no new password (pam_locket goes after the module that changes it, such as pam_unix): "
                                     "the keychain keeps its password");
        return PAM_IGNORE;
    }
    if (old_item == NULL) {
        pam_syslog(pamh, LOG_NOTICE, "no old password (root set the new one): the keychain keeps its password");
        return PAM_IGNORE;
    }
    const char *old_password = old_item, *new_password = new_item;
    if (!usable(pamh, old_password, "old") || !usable(pamh, new_password, "new")) return PAM_IGNORE;
    if (strcmp(old_password, new_password) == 0) return PAM_IGNORE;
    size_t old_length = strlen(old_password), new_length = strlen(new_password);
    char *lines = malloc(old_length + new_length + 2);
    if (lines == NULL) return PAM_IGNORE;
    memcpy(lines, old_password, old_length);
    lines[old_length] = '\n';
    memcpy(lines + old_length + 1, new_password, new_length);
    lines[old_length + new_length + 1] = '\n';
    const char *arguments[] = {"pam", "passwd", NULL};
    int status = run_as_user(pamh, &options, arguments, lines, old_length + new_length + 2);
    explicit_bzero(lines, old_length + new_length + 2);
    free(lines);
    /* An expired password changed during a login: the session opens with the new one. */
    if (status == 0 && kept_password(pamh) != NULL) keep_password(pamh, new_password);
    return status == 0 ? PAM_SUCCESS : PAM_IGNORE;
}

LOCKET_EXPORT int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_IGNORE;
}
