#define _GNU_SOURCE
#include "locket_system.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <linux/keyctl.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

long locket_add_key(const char *type, const char *description,
                    const void *payload, size_t length, int32_t keyring) {
    return syscall(SYS_add_key, type, description, payload, length, keyring);
}

long locket_keyctl_search(int32_t keyring, const char *type, const char *description) {
    return syscall(SYS_keyctl, KEYCTL_SEARCH, keyring, type, description, 0);
}

long locket_keyctl_read(int32_t key, void *buffer, size_t length) {
    return syscall(SYS_keyctl, KEYCTL_READ, key, buffer, length);
}

long locket_keyctl_set_timeout(int32_t key, uint32_t seconds) {
    return syscall(SYS_keyctl, KEYCTL_SET_TIMEOUT, key, seconds);
}

long locket_keyctl_update(int32_t key, const void *payload, size_t length) {
    return syscall(SYS_keyctl, KEYCTL_UPDATE, key, payload, length);
}

long locket_keyctl_setperm(int32_t key, uint32_t permissions) {
    return syscall(SYS_keyctl, KEYCTL_SETPERM, key, permissions);
}

long locket_keyctl_invalidate(int32_t key) {
    return syscall(SYS_keyctl, KEYCTL_INVALIDATE, key);
}

long locket_keyctl_unlink(int32_t key, int32_t keyring) {
    return syscall(SYS_keyctl, KEYCTL_UNLINK, key, keyring);
}

int32_t locket_key_spec_user_keyring(void) { return KEY_SPEC_USER_KEYRING; }

uint32_t locket_key_permissions(void) {
    /* possessor: everything; same uid: view, read, write, search, link, setattr */
    return 0x3f000000u | 0x003f0000u;
}

static struct rlimit saved_core_limit;
static int saved_core_limit_valid = 0;

void locket_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    if (!saved_core_limit_valid && getrlimit(RLIMIT_CORE, &saved_core_limit) == 0) saved_core_limit_valid = 1;
    /* Lower the soft limit only, so that a child can be given its own back. */
    none.rlim_max = saved_core_limit_valid ? saved_core_limit.rlim_max : 0;
    (void)setrlimit(RLIMIT_CORE, &none);
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* A crash report is a core dump by other means: where the Swift runtime
     * finds swift-backtrace (next to a toolchain, as in Swift's own container
     * images, or named by SWIFT_BACKTRACE) it catches these signals and has
     * that program print the crashed process's registers and stack, to
     * standard output by default, where `TOKEN=$(locket find -w ...)` would
     * capture them. One query when the runtime took none; else all go back
     * to the kernel's default. */
    struct sigaction current;
    if (sigaction(SIGSEGV, NULL, &current) == 0 && current.sa_handler == SIG_DFL) return;
    static const int crash_signals[] = {SIGQUIT, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV, SIGTRAP};
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++) (void)signal(crash_signals[i], SIG_DFL);
}

void locket_prepare_exec(void) {
    if (saved_core_limit_valid) (void)setrlimit(RLIMIT_CORE, &saved_core_limit);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL);
}

int locket_execvpe(const char *file, char *const argv[], char *const envp[]) {
    return execvpe(file, argv, envp);
}

int locket_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

/* Built by hand rather than with snprintf: this runs in every command. */
static int exec_parent_present(const char *base, uid_t uid) {
    static const char name[] = "/locket-exec-";
    char path[4096], digits[16];
    size_t n = strlen(base), d = 0;
    if (n + sizeof name + sizeof digits > sizeof path) return 0;
    memcpy(path, base, n);
    memcpy(path + n, name, sizeof name - 1);
    n += sizeof name - 1;
    do { digits[d++] = (char)('0' + uid % 10); uid /= 10; } while (uid > 0);
    while (d > 0) path[n++] = digits[--d];
    path[n] = 0;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) return 0;
    return st.st_nlink != 2;
}

int locket_exec_directories_present(const char *base) { return exec_parent_present(base, geteuid()); }

long long locket_filesystem_type(const char *path) {
    struct statfs fs;
    if (statfs(path, &fs) != 0) return -1;
    return (long long)fs.f_type;
}

static volatile sig_atomic_t forward_child = 0;

static void forward_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    if (forward_child > 0 && info->si_code <= 0) kill((pid_t)forward_child, sig);
}

void locket_forward_signals(int child) {
    forward_child = child;
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = forward_signal;
    act.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&act.sa_mask);
    int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
    for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; i++) sigaction(signals[i], &act, NULL);
}

static volatile sig_atomic_t prompt_signal = 0;
static void on_prompt_signal(int sig) { prompt_signal = sig; }

long locket_read_password(int fd, int outfd, const char *prompt,
                          unsigned char *buffer, size_t capacity) {
    struct termios saved, quiet;
    int have_termios = tcgetattr(fd, &saved) == 0;
    struct sigaction act, old_int, old_term, old_hup;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_prompt_signal; /* no SA_RESTART: read() returns EINTR */
    sigemptyset(&act.sa_mask);
    prompt_signal = 0;
    sigaction(SIGINT, &act, &old_int);
    sigaction(SIGTERM, &act, &old_term);
    sigaction(SIGHUP, &act, &old_hup);
    if (have_termios) {
        quiet = saved;
        quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
        quiet.c_lflag |= ICANON;
        (void)tcsetattr(fd, TCSAFLUSH, &quiet);
    }
    if (prompt) (void)!write(outfd, prompt, strlen(prompt));

    long result = 0;
    size_t used = 0;
    int too_long = 0;
    for (;;) {
        unsigned char c;
        ssize_t n = read(fd, &c, 1);
        if (n < 0 && errno == EINTR && !prompt_signal) continue;
        if (n < 0) { result = prompt_signal ? -1 : -3; break; }
        if (n == 0) { result = -1; break; }
        if (c == '\n' || c == '\r') { result = too_long ? -2 : (long)used; break; }
        if (used < capacity) buffer[used++] = c; else too_long = 1;
    }
    if (have_termios) (void)tcsetattr(fd, TCSAFLUSH, &saved);
    (void)!write(outfd, "\n", 1);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    if (prompt_signal) {
        explicit_bzero(buffer, capacity);
        raise(prompt_signal);
    }
    return result;
}

int locket_wait_for_exit(int pid, int timeout_ms) {
    int fd = pidfd_open(pid, 0);
    if (fd < 0) return -1;
    struct pollfd ended = { .fd = fd, .events = POLLIN };
    int ready;
    do { ready = poll(&ended, 1, timeout_ms); } while (ready < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    errno = saved;
    return ready > 0 ? 1 : ready;
}

int locket_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0, 0, 0);
}
