"""Chromium end to end (SPEC §20, issue 41): Debian's chromium, headless,
`--password-store=gnome-libsecret`, a throwaway profile, on a private bus
served by locket. Run by SecretServiceChromiumTests: `python3 chromium.py CASE`.

A page on loopback sets a persistent cookie. Chromium encrypts cookies with
its "Chromium Safe Storage" key, which it keeps in the Secret Service: a
cookie encrypted with it starts `v11` in the profile's Cookies database
(`v10` would be Chromium's built-in key, used when no keyring answers)."""
import http.server
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import PASSWORD, SCRATCH, Provider, askpass, check, fail, locket, main

CHROMIUM = "/usr/bin/chromium"
# Each run loads one page and exits; nothing else of a browser's start is needed.
FLAGS = ["--headless", "--no-sandbox", "--password-store=gnome-libsecret", "--disable-gpu", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-default-apps", "--mute-audio"]


class Page(http.server.BaseHTTPRequestHandler):
    """/set sets the cookie; every request's Cookie header is kept."""
    seen = []

    def do_GET(self):
        Page.seen.append((self.path, self.headers.get("Cookie", "")))
        body = b"<html><body>locket</body></html>"
        self.send_response(200)
        if self.path == "/set":
            self.send_header("Set-Cookie", "locket=kept-by-the-keyring; Max-Age=86400; Path=/")
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # Chromium let go of a request it no longer wanted (its favicon's)

    def log_message(self, *arguments):
        pass


def chromium(bus, profile, url, environment=None, timeout=90):
    """One headless run: loads `url`, prints its DOM, exits. Returns (seconds, stderr)."""
    env = dict(bus.environment, **(environment or {}))
    started = time.monotonic()
    try:
        result = subprocess.run([CHROMIUM, *FLAGS, "--user-data-dir=" + profile, "--dump-dom", url], env=env, capture_output=True,
                                timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        fail("chromium did not exit within %d s (%s)" % (timeout, url))
    elapsed = time.monotonic() - started
    check(result.returncode == 0 and b"locket" in result.stdout,
          "chromium exited %d: %s" % (result.returncode, result.stderr.decode(errors="replace")[-2000:]))
    return elapsed, result.stderr.decode(errors="replace")


def cookies(profile):
    database = sqlite3.connect("file:%s?mode=ro" % os.path.join(profile, "Default", "Cookies"), uri=True)
    try:
        return database.execute("SELECT name, encrypted_value FROM cookies WHERE host_key = '127.0.0.1'").fetchall()
    finally:
        database.close()


def safe_storage():
    result = locket("--json", "find", "--attr", "application=chromium", "--attr", "xdg:schema=chrome_libsecret_os_crypt_password_v2",
                    "--all", check_status=False)
    return json.loads(result.stdout) if result.returncode == 0 else []


def safe_storage_end_to_end(bus):
    """Run 1 stores the Safe Storage key in locket and a v11 cookie; with the
    keychain locked, run 2 gets the key through an unlock prompt (askpass) and
    sends the cookie back; locked again and nothing to ask with, run 3 is told
    `dismissed` at once and exits: no hang, and the key is still there."""
    if not os.access(CHROMIUM, os.X_OK):
        print("SKIP: Debian's chromium is not installed (make test-deps)", flush=True)
        return
    server = http.server.HTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % server.server_address[1]
    profile = os.path.join(SCRATCH, "chromium-profile")
    try:
        provider = Provider(bus)
        first, _ = chromium(bus, profile, base + "/set")
        stored = safe_storage()
        check(len(stored) == 1 and stored[0]["label"] == "Chromium Safe Storage", "the Safe Storage key in locket: %r" % (stored,))
        key = locket("find", "--attr", "application=chromium", "-w", "-n").stdout
        check(len(key) >= 16, "the Safe Storage key is %d bytes" % len(key))
        rows = cookies(profile)
        check(len(rows) == 1 and bytes(rows[0][1]).startswith(b"v11"), "the cookie is not encrypted with the keyring's key: %r" %
              ([(name, bytes(value[:3])) for name, value in rows],))
        provider.stop()
        # Locked: Chromium's unlock goes to a prompt, answered by the askpass; the cookie comes back.
        locket("lock")
        provider = Provider(bus, environment={"LOCKET_ASKPASS": askpass(PASSWORD)})
        Page.seen.clear()
        second, _ = chromium(bus, profile, base + "/get")
        check(("/get", "locket=kept-by-the-keyring") in Page.seen, "the second run sent no cookie back: %r" % (Page.seen,))
        check(len(safe_storage()) == 1, "the second run made another key")
        _, err = provider.stop()
        # Locked, no askpass, no terminal: dismissed at once; Chromium goes on without the key and exits.
        locket("lock")
        provider = Provider(bus)
        third, _ = chromium(bus, profile, base + "/get", timeout=60)
        _, err = provider.stop()
        check("dismissed" in err, "no prompt was dismissed: %s" % err)
        check(locket("find", "--attr", "application=chromium", "-w", "-n", check_status=False).returncode == 36, "the key is readable locked")
        locket("unlock", "--password-stdin", input=(PASSWORD + "\n").encode())
        check(locket("find", "--attr", "application=chromium", "-w", "-n").stdout == key, "the key changed")
        print("chromium runs: %.2f s (stores the key), %.2f s (unlocks, reads it), %.2f s (locked, dismissed)" % (first, second, third),
              flush=True)
    finally:
        server.shutdown()


if __name__ == "__main__":
    main({"safe_storage_end_to_end": safe_storage_end_to_end})
