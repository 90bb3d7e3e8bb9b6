#!/usr/bin/env python3
"""What one run of a program costs in memory, for bench/run (SPEC §11: peak
memory of `find`).

    bench/memory.py --evict FILE...      drop FILE's pages from the page cache
    bench/memory.py -o OUT -- PROGRAM [ARG]...

--evict: the next run reads FILE back from disk, as the first run after an
install and a reboot does. A binary just written by `strip -o` sits in the
page cache in large folios, and each page fault maps a whole folio: its RSS
then counts megabytes of the file the process never touched.

-o: runs PROGRAM (stdout to /dev/null) under ptrace, stopped just before it
exits (PTRACE_O_TRACEEXIT), when its memory is still mapped, and writes
/proc/PID/status's VmHWM (peak RSS, what /usr/bin/time calls the maximum
resident set size) and RssAnon / RssFile (private anonymous memory and
mapped file pages at exit), in KiB, one `name: value` a line.
"""
import ctypes, os, signal, sys

PTRACE_TRACEME, PTRACE_CONT, PTRACE_SETOPTIONS = 0, 7, 0x4200
PTRACE_O_TRACEEXIT, PTRACE_EVENT_EXIT = 0x40, 6


def evict(paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # only clean pages can be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def measure(out, argv):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        if libc.ptrace(PTRACE_TRACEME, 0, None, None) != 0:
            os._exit(126)
        os.execvp(argv[0], argv)
    _, status = os.waitpid(pid, 0)  # stopped at exec
    if not os.WIFSTOPPED(status):
        sys.exit(f"memory.py: {argv[0]} did not start under ptrace")
    libc.ptrace(PTRACE_SETOPTIONS, pid, None, ctypes.c_void_p(PTRACE_O_TRACEEXIT))
    libc.ptrace(PTRACE_CONT, pid, None, None)
    figures = None
    while True:
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            break
        sig = os.WSTOPSIG(status)
        if sig == signal.SIGTRAP and status >> 16 == PTRACE_EVENT_EXIT:
            figures = {}
            for line in open(f"/proc/{pid}/status"):
                name, _, rest = line.partition(":")
                if name in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
                    figures[name] = int(rest.split()[0])
            sig = 0
        elif sig == signal.SIGTRAP:
            sig = 0
        libc.ptrace(PTRACE_CONT, pid, None, ctypes.c_void_p(sig))
    if figures is None:
        sys.exit(f"memory.py: {argv[0]} exited before its exit could be seen")
    with open(out, "w") as f:
        for name, kib in figures.items():
            f.write(f"{name}: {kib}\n")
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    if code != 0:
        sys.exit(f"memory.py: {argv[0]} exited with status {code}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--evict":
        evict(args[1:])
    elif len(args) >= 4 and args[0] == "-o" and args[2] == "--":
        measure(args[1], args[3:])
    else:
        sys.exit(__doc__)
