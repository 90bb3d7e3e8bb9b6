#ifndef LOCKET_SYSTEM_H
#define LOCKET_SYSTEM_H

#include <stddef.h>
#include <stdint.h>

/// Kernel key retention service. Each returns the syscall's result, -1 with errno on failure.
/// The corresponding C functions are add_key(2) and keyctl(2).
long locket_add_key(const char *type, const char *description,
                    const void *payload, size_t length, int32_t keyring);
long locket_keyctl_search(int32_t keyring, const char *type, const char *description);
long locket_keyctl_read(int32_t key, void *buffer, size_t length);
long locket_keyctl_set_timeout(int32_t key, uint32_t seconds);
long locket_keyctl_update(int32_t key, const void *payload, size_t length);
long locket_keyctl_setperm(int32_t key, uint32_t permissions);
long locket_keyctl_invalidate(int32_t key);
long locket_keyctl_unlink(int32_t key, int32_t keyring);

/// The user keyring (@u) and the permissions locket gives its keys:
/// possessor all, user view/read/write/search/link/setattr.
int32_t locket_key_spec_user_keyring(void);
uint32_t locket_key_permissions(void);

/// Turns off core dumps for this process (PR_SET_DUMPABLE 0, RLIMIT_CORE 0)
/// and the Swift runtime's crash reports (its signal handlers, if it took any).
void locket_disable_core_dumps(void);

/// Undoes, for a child about to be exec'd, what locket set for itself: the
/// core-dump limit it lowered, and SIGPIPE and SIGXFSZ, which it ignores.
void locket_prepare_exec(void);

/// Forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH
/// sent to this process by another process to `child`. Signals the kernel
/// sends (a terminal's Ctrl-C) already reach the child through its process
/// group, so they are not sent twice.
void locket_forward_signals(int child);

/// Asks the kernel to send `signal` to this process when its parent ends
/// (prctl PR_SET_PDEATHSIG; kept across execve). 0, or -1 with errno.
int locket_set_parent_death_signal(int signal);

/// Waits up to `timeout_ms` for the child `pid` to end, without reaping it
/// (a pidfd polled; pidfd_open(2), Linux 5.3): 1 once it has ended, 0 when
/// it still runs at the deadline, -1 with errno when this kernel can't tell.
int locket_wait_for_exit(int pid, int timeout_ms);

/// GNU extensions Swift's Glibc module does not export: execvpe(3) and pipe2(2) with O_CLOEXEC.
int locket_execvpe(const char *file, char *const argv[], char *const envp[]);
int locket_pipe_cloexec(int fds[2]);

/// Whether `BASE/locket-exec-UID` (exec --file's parent directory) is this
/// user's private directory and may hold subdirectories: its link count is
/// not 2 (tmpfs counts subdirectories in it). One lstat(2): every command
/// asks, so it must cost nothing when the answer is no.
int locket_exec_directories_present(const char *base);

/// The f_type of the file system holding `path` (statfs(2)), -1 on failure.
long long locket_filesystem_type(const char *path);

/// Reads one line from the terminal `fd` with echo off, writing `prompt` to
/// `outfd` first. Restores the terminal even when interrupted by SIGINT,
/// SIGTERM or SIGHUP (the signal is then re-raised). Returns the number of
/// bytes read (without the newline), -1 on end of file before a newline,
/// -2 when the line is longer than `capacity`, -3 on another error.
long locket_read_password(int fd, int outfd, const char *prompt,
                          unsigned char *buffer, size_t capacity);

#endif
