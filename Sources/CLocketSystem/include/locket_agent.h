#ifndef LOCKET_AGENT_H
#define LOCKET_AGENT_H

#include <stdint.h>

/// What the SSH agent needs from Linux that Swift's Glibc module does not
/// export (they are GNU extensions): accept4(2), SO_PEERCRED and signalfd(2).

/// accept4(2) of a connection on `fd`, close-on-exec and non-blocking, so a
/// child started by another thread never inherits it. -1 with errno on failure.
int locket_accept_nonblocking(int fd);

/// The effective uid of the process that connected the Unix socket `fd`
/// (SO_PEERCRED, taken by the kernel at connect(2)): 0 and `*uid` set, or -1 with errno.
int locket_peer_uid(int fd, uint32_t *uid);

/// Blocks the `count` signals in this thread and returns a signalfd(2) that
/// reads them, close-on-exec and non-blocking; -1 with errno on failure.
int locket_signalfd(const int *signals, int count);

/// The number of the next signal queued on the signalfd `fd`, 0 when none
/// is; `*sent` is 1 when another process sent it (kill(2), si_code <= 0),
/// 0 when the kernel did (a terminal's Ctrl-C, a child's exit).
int locket_signalfd_next(int fd, int *sent);

#endif
