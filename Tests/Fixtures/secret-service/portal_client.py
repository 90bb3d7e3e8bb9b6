"""An app asking xdg-desktop-portal for its secret, as libsecret and
Chromium do inside a Flatpak: org.freedesktop.portal.Secret.RetrieveSecret
with the write end of a pipe, then the Request's Response signal, then the
pipe read to its end. Run by portal.py, inside bwrap with a /.flatpak-info
(the portal names the app from it) or on the host.

    python3 portal_client.py ADDRESS TOKEN [close-after SECONDS]

Prints `RESPONSE CODE HEX` (HEX the bytes read, empty when none). With
`close-after`, the app closes its request (org.freedesktop.portal.Request.Close)
that many seconds after asking, and prints `CLOSED` once it has.
"""
import os
import select
import sys
import time

from jeepney import DBusAddress, MatchRule, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

address, token = sys.argv[1], sys.argv[2]
close_after = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "close-after" else None
connection = open_dbus_connection(bus=address, enable_fds=True)
sender = connection.unique_name[1:].replace(".", "_")
handle = "/org/freedesktop/portal/desktop/request/%s/%s" % (sender, token)
rule = MatchRule(type="signal", interface="org.freedesktop.portal.Request", member="Response", path=handle)
bus = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
connection.send_and_get_reply(new_method_call(bus, "AddMatch", "s", (rule.serialise(),)))
read_end, write_end = os.pipe()
portal = DBusAddress("/org/freedesktop/portal/desktop", bus_name="org.freedesktop.portal.Desktop", interface="org.freedesktop.portal.Secret")
with connection.filter(rule) as queue:
    reply = connection.send_and_get_reply(new_method_call(portal, "RetrieveSecret", "ha{sv}",
                                                          (write_end, {"handle_token": ("s", token)})), timeout=30)
    os.close(write_end)
    if reply.header.message_type == MessageType.error:
        print("ERROR %s %s" % (reply.header.fields.get(4), reply.body), flush=True)
        sys.exit(1)
    if reply.body[0] != handle:
        print("ERROR the handle is %s, not %s" % (reply.body[0], handle), flush=True)
        sys.exit(1)
    if close_after is not None:
        time.sleep(close_after)
        request = DBusAddress(handle, bus_name="org.freedesktop.portal.Desktop", interface="org.freedesktop.portal.Request")
        connection.send_and_get_reply(new_method_call(request, "Close"), timeout=10)
        print("CLOSED", flush=True)
        # The portal sends no Response to a closed request: the pipe's end tells that nothing was written.
        ready, _, _ = select.select([read_end], [], [], 10)
        print("RESPONSE none %s" % (os.read(read_end, 1024).hex() if ready else "open"), flush=True)
        sys.exit(0)
    response = connection.recv_until_filtered(queue, timeout=60)
code = response.body[0]
# To its end: every copy of the write end closed (the portal's and its backend's); 10 s at most.
data = b""
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    ready, _, _ = select.select([read_end], [], [], max(0, deadline - time.monotonic()))
    chunk = os.read(read_end, 4096) if ready else b""
    if not chunk:
        break
    data += chunk
print("RESPONSE %d %s%s" % (code, data.hex(), "" if time.monotonic() < deadline else " (no end)"), flush=True)
