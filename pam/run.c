/* pam_locket: running the installed `locket` as the user, bounded in time.
 *
 * Root never opens the user's files here: the child drops to the user's
 * uid, gid and groups before it execs locket, and locket does the rest. The
 * password goes down a socket pair (stdin), never into argv or the
 * environment. The login never waits longer than max_wait: a locket that
 * does not exit by then is killed with its process group. */
#define _GNU_SOURCE
#include "pam_locket.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_ext.h>

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What locket printed, one log line per line, never more than a few: its
 * messages name files and outcomes, never a password. */
static void log_output(pam_handle_t *pamh, int priority, char *text, size_t length) {
    int lines = 0;
    char *line = text;
    for (size_t i = 0; i <= length && lines < 8; i++) {
        if (i < length && text[i] != '\n') {
            unsigned char c = (unsigned char)text[i];
            if (c < 0x20 || c == 0x7f) text[i] = '?';
            continue;
        }
        text[i < length ? i : length] = '\0';
        if (line[0] != '\0') {
            pam_syslog(pamh, priority, "%.400s", line);
            lines++;
        }
        line = text + i + 1;
    }
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void become_user_and_exec(const struct locket_user *user, const char *path, char *const *argv, char *const *envp,
                                 int input, int output, int errors, pid_t parent) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    for (int signal_number = 1; signal_number < NSIG; signal_number++) sigaction(signal_number, &fallback, NULL);
    /* A process group of its own, so that a deadline kills whatever it started. */
    setsid();
    if (dup2(input, 0) < 0 || dup2(output, 1) < 0 || dup2(errors, 2) < 0) _exit(126);
    if (syscall(SYS_close_range, 3, ~0U, 0) != 0) {
        for (int fd = 3; fd < 65536; fd++) close(fd);
    }
    if (setgroups((size_t)user->group_count, user->groups) != 0) _exit(126);
    if (setresgid(user->gid, user->gid, user->gid) != 0) _exit(126);
    if (setresuid(user->uid, user->uid, user->uid) != 0) _exit(126);
    if (user->uid != 0 && (setuid(0) == 0 || geteuid() == 0 || (getegid() == 0 && user->gid != 0))) _exit(126);
    /* After the uid changed (which clears it): gone with the login process. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    if (chdir("/") != 0) _exit(126);
    umask(077);
    execve(path, argv, envp);
    _exit(127);
}

static void set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int locket_run(pam_handle_t *pamh, const struct locket_options *options, const struct locket_user *user,
               const char *const *arguments, const char *input, size_t input_length) {
    char *executable = locket_checked_executable(pamh, options->locket);
    if (executable == NULL) return -1;
    char *argv[16];
    int argc = 0;
    argv[argc++] = (char *)"locket";
    for (int i = 0; arguments[i] != NULL && argc < 15; i++) argv[argc++] = (char *)arguments[i];
    argv[argc] = NULL;
    char **envp = locket_child_environment(pamh, user);
    if (envp == NULL) {
        free(executable);
        return -1;
    }

    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        pam_syslog(pamh, LOG_WARNING, "cannot make pipes for locket: %s: nothing done", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (in[i] >= 0) close(in[i]);
            if (out[i] >= 0) close(out[i]);
            if (err[i] >= 0) close(err[i]);
        }
        locket_free_environment(envp);
        free(executable);
        return -1;
    }
    /* The application's SIGCHLD handler (or SIG_IGN, which reaps for us)
     * must not take this child's status: the default while it runs. */
    struct sigaction default_child, saved_child;
    memset(&default_child, 0, sizeof default_child);
    default_child.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &default_child, &saved_child);

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) become_user_and_exec(user, executable, argv, envp, in[1], out[1], err[1], parent);
    int saved_errno = errno;
    free(executable);
    close(in[1]);
    close(out[1]);
    close(err[1]);
    locket_free_environment(envp);
    if (pid < 0) {
        pam_syslog(pamh, LOG_WARNING, "cannot start locket: %s: nothing done", strerror(saved_errno));
        close(in[0]);
        close(out[0]);
        close(err[0]);
        sigaction(SIGCHLD, &saved_child, NULL);
        return -1;
    }
    set_nonblocking(in[0]);
    set_nonblocking(out[0]);
    set_nonblocking(err[0]);
    int exited = (int)syscall(SYS_pidfd_open, pid, 0);

    char output[4096], errors[4096];
    size_t output_length = 0, errors_length = 0, written = 0;
    int input_fd = in[0], output_fd = out[0], errors_fd = err[0];
    if (input_length == 0) {
        shutdown(input_fd, SHUT_WR);
        close(input_fd);
        input_fd = -1;
    }
    long long deadline = now_ms() + options->max_wait_ms;
    int status = -1, reaped = 0, killed = 0;
    for (;;) {
        if (!reaped) {
            int wstatus;
            pid_t done = waitpid(pid, &wstatus, WNOHANG);
            if (done == pid) {
                reaped = 1;
                status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
                if (WIFSIGNALED(wstatus) && !killed)
                    pam_syslog(pamh, LOG_WARNING, "locket was killed by signal %d", WTERMSIG(wstatus));
            } else if (done < 0 && errno != EINTR) {
                reaped = 1;
            }
        }
        if (reaped && output_fd < 0 && errors_fd < 0) break;
        long long left = deadline - now_ms();
        if (left <= 0) {
            if (killed) break;
            /* The bound is up: whatever hangs (a keychain on a dead mount, a
             * wait for a lock) is killed, and the login goes on. */
            pam_syslog(pamh, LOG_WARNING, "locket %s %s did not finish within %d s: killed; the login goes on without it",
                       arguments[0] ? arguments[0] : "", arguments[0] && arguments[1] ? arguments[1] : "", options->max_wait_ms / 1000);
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            killed = 1;
            status = -1;
            deadline = now_ms() + 2000;
            if (input_fd >= 0) { close(input_fd); input_fd = -1; }
            if (output_fd >= 0) { close(output_fd); output_fd = -1; }
            if (errors_fd >= 0) { close(errors_fd); errors_fd = -1; }
            continue;
        }
        struct pollfd fds[4];
        int n = 0;
        if (input_fd >= 0) fds[n++] = (struct pollfd){.fd = input_fd, .events = POLLOUT};
        if (output_fd >= 0) fds[n++] = (struct pollfd){.fd = output_fd, .events = POLLIN};
        if (errors_fd >= 0) fds[n++] = (struct pollfd){.fd = errors_fd, .events = POLLIN};
        if (!reaped && exited >= 0) fds[n++] = (struct pollfd){.fd = exited, .events = POLLIN};
        /* Without a pidfd (before Linux 5.3) the exit is noticed by looking again soon. */
        int wait_ms = (int)(left < 1000 ? left : 1000);
        if (!reaped && exited < 0 && wait_ms > 10) wait_ms = 10;
        if (n == 0) {
            if (reaped) break;
            wait_ms = wait_ms > 10 ? 10 : wait_ms;
        }
        if (poll(fds, (nfds_t)n, wait_ms) < 0 && errno != EINTR) break;
        for (int i = 0; i < n; i++) {
            if (fds[i].revents == 0) continue;
            if (fds[i].fd == input_fd) {
                ssize_t sent = send(input_fd, input + written, input_length - written, MSG_NOSIGNAL);
                if (sent > 0) written += (size_t)sent;
                if (written == input_length || (sent < 0 && errno != EAGAIN && errno != EINTR)) {
                    shutdown(input_fd, SHUT_WR);
                    close(input_fd);
                    input_fd = -1;
                }
            } else if (fds[i].fd == output_fd || fds[i].fd == errors_fd) {
                int is_output = fds[i].fd == output_fd;
                char *buffer = is_output ? output : errors;
                size_t *length = is_output ? &output_length : &errors_length;
                char scratch[512];
                size_t room = sizeof output - 1 - *length;
                ssize_t got = read(fds[i].fd, room > 0 ? buffer + *length : scratch, room > 0 ? room : sizeof scratch);
                if (got > 0 && room > 0) *length += (size_t)got;
                if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
                    close(fds[i].fd);
                    if (is_output) output_fd = -1; else errors_fd = -1;
                }
            }
        }
    }
    if (input_fd >= 0) close(input_fd);
    if (output_fd >= 0) close(output_fd);
    if (errors_fd >= 0) close(errors_fd);
    if (exited >= 0) close(exited);
    if (!reaped) {
        pam_syslog(pamh, LOG_WARNING, "locket (pid %d) did not exit even after SIGKILL; left behind", (int)pid);
        status = -1;
    }
    sigaction(SIGCHLD, &saved_child, NULL);
    log_output(pamh, LOG_NOTICE, output, output_length);
    log_output(pamh, LOG_WARNING, errors, errors_length);
    if (status == 126) pam_syslog(pamh, LOG_WARNING, "locket could not run as %s (its groups, gid or uid were refused): nothing done", user->name);
    if (status == 127) pam_syslog(pamh, LOG_WARNING, "%s could not be executed: nothing done", options->locket);
    return killed ? -1 : status;
}
