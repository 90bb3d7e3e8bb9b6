#include "locket_file.h"

#include <sys/xattr.h>

long locket_access_acl(int fd, void *buffer, size_t length) {
    return (long)fgetxattr(fd, "system.posix_acl_access", buffer, length);
}
