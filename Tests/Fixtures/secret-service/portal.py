"""The secret portal (SPEC §20, issue 41): xdg-desktop-portal on a private
bus, its Secret backend locket's (dist/locket.portal, the file make install
puts in the portal's directory), apps asking it for their secret. Run by
SecretServicePortalTests: `python3 portal.py CASE`.

xdg-desktop-portal names an app from its sandbox: a Flatpak's /.flatpak-info
in the process's root (/proc/PID/root), or a systemd app unit. Headless and
outside Flatpak every process is the host's, with no app ID. So each app
here runs as Flatpak runs it: under bwrap, in a root of its own holding a
/.flatpak-info that names it (root is needed for bwrap without user
namespaces: CI runs as root; elsewhere the case skips). What the portal
can't be made to send (a descriptor that is not writable, a malformed call,
a handle used twice) is `impl_direct`: the backend's interface called directly.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

from harness import (LOCKET, PASSWORD, SCRATCH, Provider, askpass, check, connect, fail, has_owner, locket, main,
                     wait_for)

FIXTURES = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(FIXTURES)))
PORTAL = "/usr/libexec/xdg-desktop-portal"
BACKEND = DBusAddress("/org/freedesktop/portal/desktop", bus_name="org.freedesktop.secrets",
                      interface="org.freedesktop.impl.portal.Secret")


def needs(*tools):
    for tool in tools:
        if not os.access(tool, os.X_OK):
            print("SKIP: %s is not installed (make test-deps)" % tool, flush=True)
            sys.exit(0)


class DesktopPortal:
    """xdg-desktop-portal on `bus`, reading portal files from a directory
    holding locket's alone (XDG_DESKTOP_PORTAL_DIR: its own tests' way)."""

    def __init__(self, bus):
        directory = os.path.join(SCRATCH, "portals")
        os.makedirs(directory, exist_ok=True)
        shutil.copy(os.path.join(REPOSITORY, "dist", "locket.portal"), directory)
        env = dict(bus.environment, XDG_DESKTOP_PORTAL_DIR=directory)
        env.pop("XDG_CURRENT_DESKTOP", None)
        self.log = open(os.path.join(SCRATCH, "xdg-desktop-portal.log"), "w")
        self.process = subprocess.Popen([PORTAL, "--verbose", "--replace"], env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        wait_for(lambda: has_owner(bus, "org.freedesktop.portal.Desktop") or self.process.poll() is not None, 30,
                 "xdg-desktop-portal did not take org.freedesktop.portal.Desktop")
        if self.process.poll() is not None:
            fail("xdg-desktop-portal exited %d: %s" % (self.process.returncode, self.output()))

    def output(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-3000:]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.log.close()


def app(bus, name, token="t1", extra=()):
    """The portal client as the Flatpak app `name` (None: a host process). Returns (code, secret bytes)."""
    client = [sys.executable, os.path.join(FIXTURES, "portal_client.py"), bus.address, token, *extra]
    if name is not None:
        info = os.path.join(SCRATCH, "flatpak-info-" + name)
        with open(info, "w") as f:
            f.write("[Application]\nname=%s\nruntime=runtime/org.freedesktop.Platform/x86_64/23.08\n\n[Instance]\ninstance-id=%d\n"
                    % (name, os.getpid()))
        client = ["bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--symlink", "usr/lib", "/lib",
                  "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
                  "--proc", "/proc", "--dev", "/dev", "--bind", SCRATCH, SCRATCH, "--ro-bind", FIXTURES, FIXTURES,
                  "--ro-bind", info, "/.flatpak-info", "--die-with-parent", "--", *client]
    result = subprocess.run(client, capture_output=True, text=True, timeout=90, env=bus.environment)
    lines = [line for line in result.stdout.splitlines() if line.startswith(("RESPONSE", "ERROR", "CLOSED"))]
    check(result.returncode == 0 and lines and lines[-1].startswith("RESPONSE"),
          "the app %s: exit %d: %s %s" % (name, result.returncode, result.stdout, result.stderr[-2000:]))
    fields = lines[-1].split()
    code = None if fields[1] == "none" else int(fields[1])
    data = bytes.fromhex(fields[2]) if len(fields) > 2 and fields[2] not in ("open",) else b""
    return code, data, lines


def can_sandbox():
    if os.geteuid() != 0 or shutil.which("bwrap") is None:
        print("SKIP: an app's sandbox needs bwrap (bubblewrap) and root here (CI runs as root): the portal names no app without one",
              flush=True)
        sys.exit(0)


def stored(app_id):
    """The app's secret as `locket find` reads it."""
    return locket("find", "--attr", "app_id=" + app_id, "--attr", "xdg:schema=org.freedesktop.portal.Secret", "-w", "-n").stdout


def through_xdg_desktop_portal(bus):
    """Two apps through Debian's xdg-desktop-portal: each its own secret,
    the same at every request, kept in the login keychain; a host process
    (no app ID) refused; a locked keychain prompts (askpass), and a prompt
    nothing can answer is the portal's `cancelled` at once."""
    needs(PORTAL)
    can_sandbox()
    provider = Provider(bus)
    portal = DesktopPortal(bus)
    try:
        started = time.monotonic()
        code, one, _ = app(bus, "org.locket.One")
        check(code == 0 and len(one) == 64, "org.locket.One: response %r, %d bytes; portal log: %s" % (code, len(one), portal.output()))
        code, again, _ = app(bus, "org.locket.One", token="t2")
        check(code == 0 and again == one, "org.locket.One's second request gave another secret (%r)" % code)
        code, two, _ = app(bus, "org.locket.Two")
        check(code == 0 and len(two) == 64 and two != one, "org.locket.Two's secret is org.locket.One's, or none (%r)" % code)
        check(stored("org.locket.One") == one and stored("org.locket.Two") == two, "locket find reads other bytes than the apps got")
        listed = json.loads(locket("--json", "find", "--attr", "app_id=org.locket.One").stdout)
        check(listed["label"] == "Application key for org.locket.One", "the item's label: %r" % listed)
        code, host, _ = app(bus, None)
        check(code == 2 and host == b"", "a host process (no app ID) got response %r and %d bytes" % (code, len(host)))
        print("apps served in %.2f s" % (time.monotonic() - started), flush=True)
        # Locked, nothing to ask with: cancelled (1) at once, nothing written.
        locket("lock")
        started = time.monotonic()
        code, none, _ = app(bus, "org.locket.One", token="t3")
        check(code == 1 and none == b"", "locked without askpass: response %r, %d bytes" % (code, len(none)))
        check(time.monotonic() - started < 20, "the cancelled answer took %.1f s" % (time.monotonic() - started))
        # An askpass that answers: unlocked, then the same secret.
        provider.stop()
        provider = Provider(bus, environment={"LOCKET_ASKPASS": askpass(PASSWORD)})
        code, unlocked, _ = app(bus, "org.locket.One", token="t4")
        check(code == 0 and unlocked == one, "after the prompt: response %r, same secret %r" % (code, unlocked == one))
        check(stored("org.locket.Two") == two, "the prompt did not unlock the keychain for the command line too")
        # The app closes its request while the prompt waits: the askpass goes, nothing is written, the portal lives on.
        locket("lock")
        provider.stop()
        provider = Provider(bus, environment={"LOCKET_ASKPASS": askpass(PASSWORD, name="slow.sh", sleep=30)})
        code, data, lines = app(bus, "org.locket.Two", token="t5", extra=("close-after", "1"))
        check("CLOSED" in lines and code is None and data == b"", "a closed request: %r" % (lines,))
        wait_for(lambda: not os.path.exists(os.path.join(SCRATCH, "slow.sh.pid")) or not alive(int(open(os.path.join(SCRATCH, "slow.sh.pid")).read())),
                 10, "the askpass of a closed request is still running")
        check(provider.process.poll() is None and portal.process.poll() is None, "the provider or the portal exited")
    finally:
        portal.stop()
        provider.stop()


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def retrieve(connection, handle, app_id, fd, options=None):
    message = new_method_call(BACKEND, "RetrieveSecret", "osha{sv}", (handle, app_id, fd, options or {}))
    reply = connection.send_and_get_reply(message, timeout=30)
    return reply


def impl_direct(bus):
    """The backend's interface called as xdg-desktop-portal calls it, for
    what the portal never sends: a descriptor that can't take the secret now
    (a full pipe) fails the request at once instead of blocking the provider;
    an empty or overlong app ID, a handle outside the portal's, a handle
    already waiting, malformed arguments; the `version` property; a prompt
    the user dismisses; a caller the executable map limits (--app)."""
    provider = Provider(bus)
    connection = open_dbus_connection(bus=bus.address, enable_fds=True)
    try:
        r, w = os.pipe()
        reply = retrieve(connection, "/org/freedesktop/portal/desktop/request/1_1/a", "org.locket.Direct", w)
        os.close(w)
        check(reply.body == (0, {}), "RetrieveSecret: %r" % (reply.body,))
        secret = os.read(r, 100)
        check(len(secret) == 64 and os.read(r, 1) == b"", "%d bytes, then not the pipe's end" % len(secret))
        check(stored("org.locket.Direct") == secret, "locket find reads another secret")
        # No handle_token (xdg-desktop-portal's handle then ends "/t"): the client can subscribe to
        # the portal's Response only after this answer, so it is held back 0.25 s (libsecret 0.20
        # hung otherwise); the secret is in the pipe at once.
        r1, w1 = os.pipe()
        started = time.monotonic()
        reply = retrieve(connection, "/org/freedesktop/portal/desktop/request/1_1/t", "org.locket.Direct", w1)
        held = time.monotonic() - started
        os.close(w1)
        check(reply.body == (0, {}) and os.read(r1, 100) == secret, "a request without a token: %r" % (reply.body,))
        check(0.25 <= held < 10, "the answer to a request without a token came after %.3f s (held: 0.25 s)" % held)
        # A full pipe: nothing blocks, response 2; the provider answers the next call at once.
        r2, w2 = os.pipe()
        os.set_blocking(w2, False)
        try:
            while True:
                os.write(w2, b"x" * 65536)
        except BlockingIOError:
            pass
        started = time.monotonic()
        reply = retrieve(connection, "/org/freedesktop/portal/desktop/request/1_1/b", "org.locket.Direct", w2)
        check(reply.body == (2, {}) and time.monotonic() - started < 5, "a full pipe: %r after %.1f s" % (reply.body, time.monotonic() - started))
        r3, w3 = os.pipe()
        check(retrieve(connection, "/org/freedesktop/portal/desktop/request/1_1/c", "org.locket.Direct", w3).body == (0, {}),
              "the call after a full pipe")
        check(os.read(r3, 100) == secret, "the call after a full pipe gave another secret")
        for handle, app_id, what in [("/org/freedesktop/portal/desktop/request/1_1/d", "", "an empty app ID")]:
            check(retrieve(connection, handle, app_id, w3).body == (2, {}), what)
        for handle, app_id, what in [("/org/freedesktop/portal/desktop/request/1_1/e", "x" * 300, "an overlong app ID"),
                                     ("/org/freedesktop/portal/elsewhere", "org.locket.Direct", "a handle outside the portal's")]:
            reply = retrieve(connection, handle, app_id, w3)
            check(reply.header.message_type == MessageType.error and reply.header.fields.get(4) == "org.freedesktop.DBus.Error.InvalidArgs",
                  "%s: %r" % (what, reply.body))
        bad = new_method_call(BACKEND, "RetrieveSecret", "oss", ("/org/freedesktop/portal/desktop/request/1_1/f", "org.locket.Direct", "nofd"))
        reply = connection.send_and_get_reply(bad, timeout=10)
        check(reply.header.fields.get(4) == "org.freedesktop.DBus.Error.InvalidArgs", "no descriptor: %r" % (reply.body,))
        props = DBusAddress("/org/freedesktop/portal/desktop", bus_name="org.freedesktop.secrets", interface="org.freedesktop.DBus.Properties")
        reply = connection.send_and_get_reply(new_method_call(props, "Get", "ss", ("org.freedesktop.impl.portal.Secret", "version")))
        check(reply.body == (("u", 1),), "version: %r" % (reply.body,))
        intro = DBusAddress("/org/freedesktop/portal/desktop", bus_name="org.freedesktop.secrets", interface="org.freedesktop.DBus.Introspectable")
        xml = connection.send_and_get_reply(new_method_call(intro, "Introspect")).body[0]
        check('name="RetrieveSecret"' in xml, "introspection: %s" % xml[:300])
        # Locked with a slow askpass: a second request for the same handle is refused; the first waits, unanswered, no hang.
        locket("lock")
        provider.stop()
        provider = Provider(bus, environment={"LOCKET_ASKPASS": askpass(PASSWORD, name="slow.sh", sleep=30)})
        waiting = open_dbus_connection(bus=bus.address, enable_fds=True)
        r4, w4 = os.pipe()
        first = new_method_call(BACKEND, "RetrieveSecret", "osha{sv}", ("/org/freedesktop/portal/desktop/request/1_2/g", "org.locket.Direct",
                                                                       w4, {}))
        waiting.send(first)
        wait_for(lambda: os.path.exists(os.path.join(SCRATCH, "slow.sh.pid")), 20, "no prompt for a locked keychain")
        # The same handle again from the same caller: refused at once, the first still waiting.
        r5, w5 = os.pipe()
        again = new_method_call(BACKEND, "RetrieveSecret", "osha{sv}", ("/org/freedesktop/portal/desktop/request/1_2/g", "org.locket.Direct",
                                                                       w5, {}))
        reply = waiting.send_and_get_reply(again, timeout=10)
        check(reply.header.fields.get(4) == "org.freedesktop.DBus.Error.InvalidArgs", "a handle used twice: %r" % (reply.body,))
        # Other clients are answered meanwhile.
        other = connect(bus)
        started = time.monotonic()
        service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface="org.freedesktop.DBus.Properties")
        other.send_and_get_reply(new_method_call(service, "Get", "ss", ("org.freedesktop.Secret.Service", "Collections")), timeout=10)
        check(time.monotonic() - started < 5, "another client waited %.1f s" % (time.monotonic() - started))
        # The waiting request's caller leaves: the askpass is stopped, the provider goes on.
        waiting.close()
        pid = int(open(os.path.join(SCRATCH, "slow.sh.pid")).read())
        wait_for(lambda: not alive(pid), 10, "the askpass of a departed caller is still running")
        other.close()
        check(provider.process.poll() is None, "the provider exited")
        connection.close()
        # The user dismisses the prompt (an askpass that exits 1, as on Cancel): cancelled (1) at once, nothing written, still locked.
        provider.stop()
        dismiss = os.path.join(SCRATCH, "dismiss.sh")
        with open(dismiss, "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        os.chmod(dismiss, 0o700)
        provider = Provider(bus, environment={"LOCKET_ASKPASS": dismiss})
        connection = open_dbus_connection(bus=bus.address, enable_fds=True)
        r7, w7 = os.pipe()
        started = time.monotonic()
        reply = retrieve(connection, "/org/freedesktop/portal/desktop/request/1_4/h", "org.locket.Direct", w7)
        os.close(w7)
        check(reply.body == (1, {}) and time.monotonic() - started < 10,
              "a dismissed prompt: %r after %.1f s" % (reply.body, time.monotonic() - started))
        check(os.read(r7, 100) == b"", "a dismissed prompt wrote a secret")
        check(locket("find", "--attr", "app_id=org.locket.Direct", "-w", check_status=False).returncode != 0,
              "the keychain opened after a dismissed prompt")
        connection.close()
        # A program the executable map limits (python here) is refused: it
        # could otherwise read an app's secret, or plant one before the app's
        # first request and know the key the app's data will be sealed with.
        provider.stop()
        locket("unlock", "--password-stdin", input=(PASSWORD + "\n").encode())
        entitlements = os.path.join(SCRATCH, "python.entitlements")
        with open(entitlements, "w") as f:
            json.dump({"keychain-access-groups": ["T1.python"]}, f)
        os.chmod(entitlements, 0o600)
        provider = Provider(bus, "--app", "%s=%s" % (os.path.realpath(sys.executable), entitlements))
        connection = open_dbus_connection(bus=bus.address, enable_fds=True)
        r6, w6 = os.pipe()
        for app_id in ("org.locket.Direct", "org.locket.Planted"):
            reply = retrieve(connection, "/org/freedesktop/portal/desktop/request/1_3/" + app_id.rsplit(".", 1)[1], app_id, w6)
            check(reply.header.fields.get(4) == "org.freedesktop.DBus.Error.AccessDenied", "a limited program's RetrieveSecret of %s: %r"
                  % (app_id, reply.body))
        os.close(w6)
        check(os.read(r6, 100) == b"", "a limited program was written a secret")
        check(locket("find", "--attr", "app_id=org.locket.Planted", check_status=False).returncode == 44, "a limited program planted a secret")
    finally:
        connection.close()
        provider.stop()


if __name__ == "__main__":
    main({"through_xdg_desktop_portal": through_xdg_desktop_portal, "impl_direct": impl_direct})
