// Debian's static libdbus-1.a calls these two functions of libsystemd to take
// sockets a systemd unit passed to a bus daemon (socket activation). The
// provider is a bus client and never listens, so the answers are "no sockets
// were passed" and "not a socket": libsystemd, which has no static archive in
// Debian, is not linked.
#include "locket_dbus.h"

int sd_listen_fds(int unset_environment) {
    (void)unset_environment;
    return 0;
}

int sd_is_socket(int fd, int family, int type, int listening) {
    (void)fd; (void)family; (void)type; (void)listening;
    return 0;
}
