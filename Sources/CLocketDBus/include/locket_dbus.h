#ifndef LOCKET_DBUS_H
#define LOCKET_DBUS_H

// What libdbus-1.a needs of libsystemd, answered without it (systemd.c).
int sd_listen_fds(int unset_environment);
int sd_is_socket(int fd, int family, int type, int listening);

#endif
