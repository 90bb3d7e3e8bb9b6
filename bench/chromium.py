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


def cpu_ns(pid):
    """CPU time of every thread of `pid` so far, in ns (schedstat)."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
            total += int(f.read().split()[0])
    return total


def watched(env, provider, start):
    """Runs `start` with dbus-monitor on env's bus: (calls to org.freedesktop.secrets,
    the sum of their waits for a reply in seconds, the provider's CPU in ns)."""
    log = os.path.join(HOME, "monitor.log")
    with open(log, "w") as out:
        monitor = subprocess.Popen(["dbus-monitor", "--address", env["DBUS_SESSION_BUS_ADDRESS"]], stdout=out, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        before = cpu_ns(provider)
        start()
        time.sleep(0.3)
        cpu = cpu_ns(provider) - before
        monitor.terminate()
        monitor.wait()
    owner = None
    asked, waits, names = {}, [], {}
    with open(log) as f:
        for line in f:
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            if line.startswith("method call") and fields.get("destination") == "org.freedesktop.secrets":
                asked[(fields["sender"], fields["serial"])] = float(fields["time"])
                names[(fields["sender"], fields["serial"])] = fields.get("member")
            elif line.startswith(("method return", "error")) and "reply_serial" in fields:
                key = (fields.get("destination"), fields["reply_serial"])
                if key in asked and (owner is None or fields.get("sender") == owner):
                    owner = fields.get("sender")
                    waits.append(float(fields["time"]) - asked.pop(key))
                    if os.environ.get("CH_DEBUG"):
                        print("   %s %.1f ms" % (names[key], 1000 * waits[-1]))
    return len(waits) + len(asked), sum(waits), cpu


def main():
    server = http.server.HTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    _, locket_env = bus("locket-bus")
    locket_provider = locket(locket_env)
    _, gnome_env = bus("gnome-bus")
    gnome_provider = gnome_keyring(gnome_env)
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
    # Inside one start: Chromium's calls to the keyring, watched on the bus.
    print()
    print("Chromium's calls to the Secret Service in one start (dbus-monitor on the provider's bus; the wait is from each call to its "
          "reply, as the bus daemon saw them; the provider's CPU from its schedstat across the start):")
    print()
    print("| run | side | calls | waited for replies | the provider's CPU |")
    print("| --- | --- | --- | --- | --- |")
    for kind in ("first start", "next start"):
        for side, provider in (("locket", locket_provider), ("gnome-keyring", gnome_provider)):
            profile = os.path.join(HOME, "profile-watched-%s-%s" % (kind[:5], side))
            if kind == "first start":
                shutil.rmtree(profile, ignore_errors=True)
                keys(sides[side], "delete")
            else:
                chromium(side, sides[side], profile, url)
            calls, waited, cpu = watched(sides[side], provider.pid, lambda: chromium(side, sides[side], profile, url))
            print("| %s | %s | %d | %.1f ms | %.1f ms |" % (kind, side, calls, waited * 1000, cpu / 1e6))
    # What was measured used the keyring: each side holds one Chromium Safe Storage key.
    for side in ("locket", "gnome-keyring"):
        if keys(sides[side]) != 1:
            sys.exit("%s does not hold one Chromium Safe Storage key" % side)
    server.shutdown()


run(main)
