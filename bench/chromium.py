"""bench/chromium's measurements (see that script): Debian's chromium,
headless, its Safe Storage key in locket secret-service or in
gnome-keyring-daemon, each on a private bus of its own, and with
`--password-store=basic` (a key written in the code: no keyring at all, the
floor), side by side."""
import http.server
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

from providers import HOME, bus, gnome_keyring, locket, run
RUNS = int(os.environ["CH_RUNS"])
ROUNDS = int(os.environ["CH_ROUNDS"])
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-default-apps", "--mute-audio"]


# Counts Chromium's Safe Storage keys in a side's keyring; with "delete", deletes them.
KEYS = """
import secretstorage, sys
items = list(secretstorage.search_items(secretstorage.dbus_init(), {'application': 'chromium'}))
for item in items if sys.argv[1:] == ['delete'] else []:
    item.delete()
print(len(items))
"""


def keys(env, *arguments):
    found = subprocess.run(["/usr/bin/python3", "-c", KEYS, *arguments], env=env, capture_output=True, text=True)
    if found.returncode != 0:
        sys.exit("counting the Safe Storage keys failed: %s" % found.stderr[-300:])
    return int(found.stdout)


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html><body>bench</body></html>"
        self.send_response(200)
        self.send_header("Set-Cookie", "bench=%d; Max-Age=86400; Path=/" % time.monotonic_ns())
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


def chromium(side, env, profile, url):
    store = "basic" if side == "basic" else "gnome-libsecret"
    started = time.perf_counter()
    result = subprocess.run(["chromium", *FLAGS, "--password-store=" + store, "--user-data-dir=" + profile, "--dump-dom", url], env=env, capture_output=True, timeout=120)
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or b"bench" not in result.stdout:
        sys.exit("chromium failed: %s" % result.stderr.decode(errors="replace")[-1000:])
    return elapsed


def main():
    server = http.server.HTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    _, locket_env = bus("locket-bus")
    locket(locket_env)
    _, gnome_env = bus("gnome-bus")
    gnome_keyring(gnome_env)
    # The basic store on a bus of its own with no Secret Service on it.
    _, basic_env = bus("basic-bus")
    sides = {"locket": locket_env, "gnome-keyring": gnome_env, "basic": basic_env}
    version = subprocess.run(["chromium", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:]
    print("%s, headless, --password-store=gnome-libsecret (basic: the floor, no keyring), %d runs x %d rounds a side, rotating; load average %.1f" % (
        version[0] if version else "chromium", RUNS, ROUNDS, os.getloadavg()[0]))
    print()
    print("| run | locket | gnome-keyring | basic | locket / gnome-keyring | locket / basic |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in ("first start (no profile, no key: the key made and stored)", "next start (the key read back)"):
        ratios, basic_ratios, medians = [], [], {side: [] for side in sides}
        for round_ in range(ROUNDS):
            times = {side: [] for side in sides}
            for run in range(RUNS):
                order = list(sides)
                for side in order[run % len(order):] + order[:run % len(order)]:
                    profile = os.path.join(HOME, "profile-%s-%s-%d-%d" % (kind[:5], side, round_, run))
                    if kind.startswith("first"):
                        # A first start on this machine: no profile and no key in the keyring.
                        shutil.rmtree(profile, ignore_errors=True)
                        if side != "basic":
                            keys(sides[side], "delete")
                    else:
                        if not os.path.exists(profile):
                            chromium(side, sides[side], profile, url)
                    times[side].append(chromium(side, sides[side], profile, url))
            for side in sides:
                medians[side].append(statistics.median(times[side]))
            ratios.append(statistics.median(times["locket"]) / statistics.median(times["gnome-keyring"]))
            basic_ratios.append(statistics.median(times["locket"]) / statistics.median(times["basic"]))
        print("| %s | %.0f ms | %.0f ms | %.0f ms | %.2fx (rounds: %s) | %.2fx (rounds: %s) |" % (
            kind, *(1000 * statistics.median(medians[side]) for side in sides),
            statistics.median(ratios), " ".join("%.2f" % r for r in ratios),
            statistics.median(basic_ratios), " ".join("%.2f" % r for r in basic_ratios)))
    # What was measured used the keyring: each side holds one Chromium Safe Storage key.
    for side in ("locket", "gnome-keyring"):
        if keys(sides[side]) != 1:
            sys.exit("%s does not hold one Chromium Safe Storage key" % side)
    server.shutdown()


run(main)
