"""Real clients of the secret portal inside a sandbox as Flatpak makes one
(SPEC §20, issue 41): libsecret (secret-tool), which every GNOME app in a
Flatpak uses, and Debian's chromium, whose os_crypt reads its per-app key
from the portal. Run by SecretServiceBrowserTests: `python3 flatpak.py CASE`.

What makes the sandbox Flatpak's, as far as these clients and
xdg-desktop-portal can tell: a root of its own (bwrap) holding a
/.flatpak-info that names the app (libsecret then keeps its items in a file
under the app's data directory, sealed with the app's secret from the
portal, and the portal names the app from it); the app's own XDG
directories; and a session bus reached only through xdg-dbus-proxy with
Flatpak's filter (only org.freedesktop.portal.* may be called), itself run
in the app's sandbox, as Flatpak runs it, so the portal sees the app behind
every call. Root is needed for bwrap without user namespaces (CI runs as
root); elsewhere the cases skip.
"""
import http.server
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from chromium import Page
from harness import PASSWORD, SCRATCH, Provider, askpass, check, fail, locket, main, wait_for
from portal import PORTAL, DesktopPortal, can_sandbox, needs, stored

FIXTURES = os.path.dirname(os.path.abspath(__file__))
PROXY = "/usr/bin/xdg-dbus-proxy"
CHROMIUM = "/usr/bin/chromium"


class FlatpakApp:
    """The app `app_id` in a sandbox of its own, its bus through the proxy."""

    def __init__(self, bus, app_id):
        self.app_id = app_id
        self.root = os.path.join(SCRATCH, "flatpak", app_id)
        self.data = os.path.join(self.root, "data")
        self.run_dir = os.path.join(self.root, "run")
        for directory in (self.data, self.run_dir, os.path.join(self.root, "config"), os.path.join(self.root, "cache"),
                          os.path.join(self.root, "home")):
            os.makedirs(directory, mode=0o700, exist_ok=True)
        self.info = os.path.join(self.root, "flatpak-info")
        with open(self.info, "w") as f:
            f.write("[Application]\nname=%s\nruntime=runtime/org.freedesktop.Platform/x86_64/23.08\n\n[Instance]\ninstance-id=%d\n"
                    % (app_id, os.getpid()))
        socket = os.path.join(self.run_dir, "bus")
        bus_directory = os.path.dirname(bus.address.split("path=", 1)[1].split(",", 1)[0])
        self.proxy = subprocess.Popen(self.bwrap(["--bind", bus_directory, bus_directory]) + [
            PROXY, bus.address, socket, "--filter", "--own=%s" % app_id, "--own=%s.*" % app_id, "--talk=org.freedesktop.portal.*"],
            env=bus.environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for(lambda: os.path.exists(socket) or self.proxy.poll() is not None, 20, "xdg-dbus-proxy made no socket")
        check(self.proxy.poll() is None, "xdg-dbus-proxy exited %r" % self.proxy.returncode)
        self.address = "unix:path=" + socket

    def bwrap(self, extra=()):
        return ["bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--symlink", "usr/lib", "/lib",
                "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/tmp", "--bind", self.root, self.root,
                *extra, "--ro-bind", self.info, "/.flatpak-info", "--die-with-parent", "--"]

    def run(self, arguments, input=None, timeout=30, expect=None):
        """`arguments` in the sandbox; (CompletedProcess, seconds)."""
        environment = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": os.path.join(self.root, "home"),
                       "XDG_DATA_HOME": self.data, "XDG_CONFIG_HOME": os.path.join(self.root, "config"),
                       "XDG_CACHE_HOME": os.path.join(self.root, "cache"), "XDG_RUNTIME_DIR": self.run_dir,
                       "DBUS_SESSION_BUS_ADDRESS": self.address, "FLATPAK_ID": self.app_id}
        started = time.monotonic()
        try:
            result = subprocess.run(self.bwrap() + list(arguments), env=environment, input=input, capture_output=True, timeout=timeout,
                                    start_new_session=True)
        except subprocess.TimeoutExpired:
            fail("%s in %s did not exit within %d s" % (" ".join(arguments), self.app_id, timeout))
        elapsed = time.monotonic() - started
        if expect is not None and result.returncode != expect:
            fail("%s in %s exited %d (expected %d): %s" % (" ".join(arguments), self.app_id, result.returncode, expect,
                                                           result.stderr.decode(errors="replace")[-2000:]))
        return result, elapsed

    def stop(self):
        if self.proxy.poll() is None:
            self.proxy.terminate()
            self.proxy.wait(10)


def sandboxes_available():
    needs(PORTAL, PROXY)
    can_sandbox()


def libsecret_in_a_flatpak(bus):
    """secret-tool in a Flatpak sandbox: libsecret keeps the item in the
    app's own keyring file, sealed with the app's secret, which it asks of
    the portal, which asks locket. Stored in one process, read in the next;
    not in the login keychain (the app reaches only the portal); another
    app holding the file can't read it; locked with nothing to ask, the
    lookup fails at once; locked with an askpass, it unlocks and reads."""
    sandboxes_available()
    provider = Provider(bus)
    portal = DesktopPortal(bus)
    one = two = None
    try:
        one, two = FlatpakApp(bus, "org.locket.Notes"), FlatpakApp(bus, "org.locket.Other")
        lookup = ["secret-tool", "lookup", "kind", "flatpak-note"]
        one.run(["secret-tool", "store", "--label", "a note", "kind", "flatpak-note"], input=b"kept in the sandbox", expect=0)
        result, _ = one.run(lookup, expect=0)
        check(result.stdout == b"kept in the sandbox", "the lookup in the sandbox: %r" % result.stdout)
        keyring = os.path.join(one.data, "keyrings", "default.keyring")
        check(os.path.exists(keyring), "libsecret kept no keyring file in the app's data directory (portal log: %s)" % portal.output())
        with open(keyring, "rb") as f:
            check(b"kept in the sandbox" not in f.read(), "the app's keyring file holds the secret in the clear")
        check(len(stored("org.locket.Notes")) == 64, "the app's secret is not in the login keychain")
        check(locket("find", "--attr", "kind=flatpak-note", check_status=False).returncode == 44,
              "the item went to the Secret Service, not to the app's file: the sandbox reached org.freedesktop.secrets")
        # Another app, holding the first one's file, opens nothing with its own secret.
        os.makedirs(os.path.join(two.data, "keyrings"), exist_ok=True)
        shutil.copy(keyring, os.path.join(two.data, "keyrings", "default.keyring"))
        result, _ = two.run(lookup)
        check(result.stdout == b"", "another app read the note with its own secret")
        check(len(stored("org.locket.Other")) == 64 and stored("org.locket.Other") != stored("org.locket.Notes"), "the two apps' secrets")
        # Locked, nothing to ask with: the portal answers cancelled at once, and libsecret gives up.
        provider.stop()
        locket("lock")
        provider = Provider(bus)
        result, seconds = one.run(lookup)
        check(result.returncode != 0 and result.stdout == b"", "locked without askpass: exit %d, %r" % (result.returncode, result.stdout))
        check(seconds < 20, "the locked lookup took %.1f s" % seconds)
        # Locked, an askpass that answers: unlocked through the prompt, then read.
        provider.stop()
        provider = Provider(bus, environment={"LOCKET_ASKPASS": askpass(PASSWORD)})
        result, _ = one.run(lookup, expect=0)
        check(result.stdout == b"kept in the sandbox", "after the prompt: %r" % result.stdout)
    finally:
        for app in (one, two):
            if app:
                app.stop()
        portal.stop()
        provider.stop()


class StandInFileChooser:
    """Chromium 156 takes the portal as absent (its secret key provider then
    reports no service) unless org.freedesktop.portal.FileChooser answers,
    and xdg-desktop-portal exports that interface only with a backend for
    it. A desktop always has one (GTK's, GNOME's, KDE's); headless, this
    stand-in owns a name its .portal file declares for FileChooser, answers
    Properties.GetAll with nothing and every other call with an error."""

    NAME = "org.locket.test.StandIn"

    def __init__(self, bus, portals):
        os.makedirs(portals, exist_ok=True)
        with open(os.path.join(portals, "stand-in.portal"), "w") as f:
            f.write("[portal]\nDBusName=%s\nInterfaces=org.freedesktop.impl.portal.FileChooser\nUseIn=\n" % self.NAME)
        self.process = subprocess.Popen([sys.executable, "-c", STAND_IN, bus.address, self.NAME], stdout=subprocess.PIPE,
                                        start_new_session=True)
        check(self.process.stdout.readline() == b"ready\n", "the stand-in backend did not start")

    def stop(self):
        self.process.kill()
        self.process.wait()


STAND_IN = """
import sys
from jeepney import DBusAddress, MessageType, new_error, new_method_call, new_method_return
from jeepney.io.blocking import open_dbus_connection
connection = open_dbus_connection(bus=sys.argv[1])
daemon = DBusAddress('/org/freedesktop/DBus', bus_name='org.freedesktop.DBus', interface='org.freedesktop.DBus')
connection.send_and_get_reply(new_method_call(daemon, 'RequestName', 'su', (sys.argv[2], 4)))
print('ready', flush=True)
while True:
    message = connection.receive()
    if message.header.message_type != MessageType.method_call:
        continue
    if message.header.fields.get(3) == 'GetAll':
        connection.send(new_method_return(message, 'a{sv}', ({},)))
    else:
        connection.send(new_error(message, 'org.freedesktop.DBus.Error.NotSupported'))
"""


def chromium_in_a_flatpak(bus):
    """Debian's chromium in a Flatpak sandbox, with the portal's key used
    for encryption (SecretPortalKeyProviderUseForEncryption: read on every
    start since Chromium 123, used for new data behind that switch): the
    cookie is sealed `v12` (the portal's key), the app's secret is made in
    locket, and no Safe Storage key (the sandbox reaches only the portal).
    Locked, with an askpass: the next start unlocks and sends the cookie
    back. Locked, nothing to ask with: Chromium is told cancelled at once
    and goes on without the cookie; no hang."""
    sandboxes_available()
    needs(CHROMIUM)
    server = http.server.HTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % server.server_address[1]
    provider = Provider(bus)
    stand_in = StandInFileChooser(bus, os.path.join(SCRATCH, "portals"))
    portal = DesktopPortal(bus)
    app = None
    try:
        app = FlatpakApp(bus, "org.chromium.Chromium")
        profile = os.path.join(app.root, "profile")

        def chromium(path, timeout=90):
            result, seconds = app.run([CHROMIUM, "--headless", "--no-sandbox", "--password-store=gnome-libsecret",
                                       "--enable-features=SecretPortalKeyProviderUseForEncryption", "--disable-gpu", "--no-first-run",
                                       "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                                       "--disable-component-update", "--disable-sync", "--disable-default-apps", "--mute-audio",
                                       "--user-data-dir=" + profile, "--dump-dom", base + path], timeout=timeout)
            check(result.returncode == 0 and b"locket" in result.stdout,
                  "chromium exited %d: %s" % (result.returncode, result.stderr.decode(errors="replace")[-2000:]))
            return seconds

        first = chromium("/set")
        database = sqlite3.connect("file:%s?mode=ro" % os.path.join(profile, "Default", "Cookies"), uri=True)
        rows = database.execute("SELECT name, encrypted_value FROM cookies WHERE host_key = '127.0.0.1'").fetchall()
        database.close()
        check(len(rows) == 1 and bytes(rows[0][1]).startswith(b"v12"),
              "the cookie is not sealed with the portal's key: %r; portal log: %s" % ([(n, bytes(v[:3])) for n, v in rows], portal.output()))
        check(len(stored("org.chromium.Chromium")) == 64, "Chromium's app secret is not in the login keychain")
        check(locket("find", "--attr", "application=chromium", check_status=False).returncode == 44,
              "a Safe Storage key reached locket from the sandbox (it should reach only the portal)")
        # Locked: the portal's request prompts (askpass), and the cookie comes back.
        provider.stop()
        locket("lock")
        provider = Provider(bus, environment={"LOCKET_ASKPASS": askpass(PASSWORD)})
        Page.seen.clear()
        second = chromium("/get")
        check(("/get", "locket=kept-by-the-keyring") in Page.seen, "the second start sent no cookie back: %r" % (Page.seen,))
        # Locked, nothing to ask with: cancelled at once; the start goes on without the key.
        provider.stop()
        locket("lock")
        provider = Provider(bus)
        Page.seen.clear()
        third = chromium("/get", timeout=60)
        check(("/get", "locket=kept-by-the-keyring") not in Page.seen, "the cookie was read with the keychain locked")
        print("chromium in a sandbox: %.2f s (the key made), %.2f s (unlocked through a prompt), %.2f s (locked, cancelled)"
              % (first, second, third), flush=True)
    finally:
        if app:
            app.stop()
        portal.stop()
        stand_in.stop()
        provider.stop()
        server.shutdown()


if __name__ == "__main__":
    main({"libsecret_in_a_flatpak": libsecret_in_a_flatpak, "chromium_in_a_flatpak": chromium_in_a_flatpak})
