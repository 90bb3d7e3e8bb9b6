#define _GNU_SOURCE
#include "locket_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

long locket_access_acl(int fd, void *buffer, size_t length) {
    return (long)fgetxattr(fd, "system.posix_acl_access", buffer, length);
}

long long locket_file_birth_time(const char *path) {
    struct statx info;
    if (statx(AT_FDCWD, path, 0, STATX_BTIME, &info) != 0 || !(info.stx_mask & STATX_BTIME)) return -1;
    return (long long)info.stx_btime.tv_sec;
}
