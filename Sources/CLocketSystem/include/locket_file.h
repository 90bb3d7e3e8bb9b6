#ifndef LOCKET_FILE_H
#define LOCKET_FILE_H

#include <stddef.h>

/// The access ACL of the open file `fd` (the `system.posix_acl_access`
/// extended attribute, fgetxattr(2), which Swift's Glibc module does not
/// export) into `buffer`: its length, or -1 with errno (ENODATA: no ACL
/// beyond the mode; ERANGE: `length` is too small).
long locket_access_acl(int fd, void *buffer, size_t length);

/// When the file at `path` was made (statx(2)'s birth time, which Swift's
/// Glibc module does not export), in seconds since 1970; -1 when the file
/// system does not record it or the call fails.
long long locket_file_birth_time(const char *path);

#endif
