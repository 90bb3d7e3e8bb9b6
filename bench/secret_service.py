"""bench/secret-service's measurements (see that script): locket
secret-service and gnome-keyring-daemon side by side, each on a private bus."""
import os
import random
import statistics
import subprocess
import sys
import time

from providers import bus, gnome_keyring, locket, run, start, stop

ITEMS = int(os.environ["SS_ITEMS"])
RUNS = int(os.environ["SS_RUNS"])
ROUNDS = int(os.environ["SS_ROUNDS"])
BIG = int(os.environ["SS_BIG"])
# Busy processes beside the measurements (SS_LOAD=2: both cores of this machine kept busy).
LOAD = int(os.environ.get("SS_LOAD", "0"))

FILL = """
import secretstorage, sys
c = secretstorage.get_default_collection(secretstorage.dbus_init())
c.unlock()
for i in range(int(sys.argv[1]), int(sys.argv[2])):
    c.create_item('item %d' % i, {'service': 'svc-%d' % i, 'username': 'user'}, b'secret-%d' % i, replace=False)
"""

LOOP = """
import secretstorage, sys, time
c = secretstorage.get_default_collection(secretstorage.dbus_init())
items = [next(c.search_items({'service': 'svc-%d' % i, 'username': 'user'})) for i in range(20)]
started = time.perf_counter()
for i in range(1000):
    assert items[i % 20].get_secret() == b'secret-%d' % (i % 20)
print(1000 / (time.perf_counter() - started))
"""


CALLS = """
import os, secrets, statistics, time
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
c = open_dbus_connection(bus='SESSION')
service = DBusAddress('/org/freedesktop/secrets', bus_name='org.freedesktop.secrets', interface='org.freedesktop.Secret.Service')
props = DBusAddress('/org/freedesktop/secrets', bus_name='org.freedesktop.secrets', interface='org.freedesktop.DBus.Properties')
P = int("FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
        "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
        "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", 16)
def each(message, count=200):
    times = []
    for _ in range(count):
        started = time.perf_counter()
        reply = c.send_and_get_reply(message())
        times.append(time.perf_counter() - started)
    return reply, statistics.median(times) * 1000
key = pow(2, secrets.randbelow(2**256), P).to_bytes(128, 'big')
_, t_open = each(lambda: new_method_call(service, 'OpenSession', 'sv', ('dh-ietf1024-sha256-aes128-cbc-pkcs7', ('ay', key))))
found, t_search = each(lambda: new_method_call(service, 'SearchItems', 'a{ss}', ({'service': 'svc-7', 'username': 'user'},)))
item = found.body[0][0]
opened = c.send_and_get_reply(new_method_call(service, 'OpenSession', 'sv', ('dh-ietf1024-sha256-aes128-cbc-pkcs7', ('ay', key)))).body[1]
_, t_get = each(lambda: new_method_call(service, 'GetSecrets', 'aoo', ([item], opened)))
_, t_all = each(lambda: new_method_call(props, 'GetAll', 's', ('org.freedesktop.Secret.Service',)))
print('%.3f %.3f %.3f %.3f' % (t_open, t_search, t_get, t_all))
"""


def timed(arguments, env, stdin=None):
    started = time.perf_counter()
    result = subprocess.run(arguments, env=env, input=stdin, capture_output=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(arguments), result.stderr.decode(errors="replace")))
    return elapsed, result.stdout


def paired(name, sides, make, pids=None):
    """Alternates the sides run by run; per round, the median of each; the
    ratio locket/gnome per round, and the median of those ratios. With
    `pids` ({side: provider pid}), the same for the provider's CPU per run
    (schedstat, every thread, user and system), in the row after: a run's
    share is from just before it to just before that side's next run, so
    what the provider does after secret-tool has gone (its disconnection)
    counts too; the other side's run lies between, with this provider idle."""
    ratios, medians = [], {side: [] for side in sides}
    cpu_ratios, cpu_medians = [], {side: [] for side in sides}
    for round_ in range(ROUNDS):
        times = {side: [] for side in sides}
        marks = {side: [] for side in sides}
        for run in range(RUNS):
            for side in (sides if run % 2 == 0 else list(reversed(sides))):
                arguments, stdin, expected = make(side, round_, run)
                if pids:
                    marks[side].append(cpu_ns(pids[side]))
                elapsed, out = timed(arguments, sides[side], stdin)
                if expected is not None and out != expected:
                    sys.exit("%s on %s gave %r" % (name, side, out[:40]))
                times[side].append(elapsed)
        if pids:
            time.sleep(0.05)
        for side in sides:
            medians[side].append(statistics.median(times[side]))
            if pids:
                marks[side].append(cpu_ns(pids[side]))
                cpu_medians[side].append(statistics.median(b - a for a, b in zip(marks[side], marks[side][1:])))
        ratios.append(statistics.median(times["locket"]) / statistics.median(times["gnome-keyring"]))
        if pids:
            cpu_ratios.append(cpu_medians["locket"][-1] / cpu_medians["gnome-keyring"][-1])
    print("| %s | %.2f ms | %.2f ms | %.2fx (rounds: %s) |" % (
        name, 1000 * statistics.median(medians["locket"]), 1000 * statistics.median(medians["gnome-keyring"]),
        statistics.median(ratios), " ".join("%.2f" % r for r in ratios)))
    if pids:
        print("| the provider's CPU in each of those (median per round) | %.2f ms | %.2f ms | %.2fx (rounds: %s) |" % (
            statistics.median(cpu_medians["locket"]) / 1e6, statistics.median(cpu_medians["gnome-keyring"]) / 1e6,
            statistics.median(cpu_ratios), " ".join("%.2f" % r for r in cpu_ratios)))
    return statistics.median(ratios)


def load(n):
    """`n` busy processes (a loaded machine)."""
    return [start(["/usr/bin/python3", "-c", "while True: pass"]) for _ in range(n)]


def rss(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields["VmRSS"], fields["VmHWM"]


def cpu_ns(pid):
    """CPU time of every thread of `pid` so far, in ns (schedstat: exact, where /proc/PID/stat counts 10 ms ticks)."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
            total += int(f.read().split()[0])
    return total


def child_run(arguments, env):
    """Runs `arguments`; (wall s, its own CPU s from wait4's rusage)."""
    started = time.perf_counter()
    process = subprocess.Popen(arguments, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def breakdown(sides, pids, count=100):
    """Where one `secret-tool lookup` spends its time on each side: the
    process's wall time, secret-tool's own CPU, the provider's and the
    bus daemon's CPU per lookup (their counters across `count` lookups, run
    one after another), and what a provider that took no time at all would
    leave: the best ratio any provider could reach against gnome-keyring."""
    rng = random.Random(7)
    rows = {}
    for side, env in sides.items():
        provider, daemon = pids[side]
        walls, clients = [], []
        before = (cpu_ns(provider), cpu_ns(daemon))
        for _ in range(count):
            n = rng.randrange(ITEMS)
            wall, cpu = child_run(["secret-tool", "lookup", "service", "svc-%d" % n, "username", "user"], env)
            walls.append(wall)
            clients.append(cpu)
        after = (cpu_ns(provider), cpu_ns(daemon))
        rows[side] = (statistics.median(walls) * 1000, statistics.median(clients) * 1000,
                      (after[0] - before[0]) / count / 1e6, (after[1] - before[1]) / count / 1e6)
    bare = [child_run(["secret-tool"], sides["locket"]) for _ in range(30)]
    print()
    print("Where a `secret-tool lookup` goes (%d lookups a side, one after another; load average %s):" % (count, os.getloadavg()[0]))
    print()
    print("| per lookup | locket | gnome-keyring |")
    print("| --- | --- | --- |")
    for k, name in enumerate(["wall time of the secret-tool process (median)", "secret-tool's own CPU (median)",
                              "the provider's CPU (mean)", "dbus-daemon's CPU (mean)"]):
        print("| %s | %.2f ms | %.2f ms |" % (name, rows["locket"][k], rows["gnome-keyring"][k]))
    print("| secret-tool with no arguments (start, libraries, usage; no D-Bus): wall / CPU | %.2f / %.2f ms | |" % (
        statistics.median(b[0] for b in bare) * 1000, statistics.median(b[1] for b in bare) * 1000))
    floor = rows["locket"][0] - rows["locket"][2]
    print()
    print("A provider that took no time would leave %.2f ms of locket's %.2f ms: at best %.2fx gnome-keyring's %.2f ms "
          "(locket's provider: %.2fx of gnome-keyring's CPU per lookup)" % (
              floor, rows["locket"][0], floor / rows["gnome-keyring"][0], rows["gnome-keyring"][0],
              rows["locket"][2] / rows["gnome-keyring"][2]))


def main():
    # locket and gnome-keyring-daemon, each unlocked, each on a bus of its own.
    locket_bus, locket_bus_env = bus("locket-bus")
    provider = locket(locket_bus_env)
    gnome_bus, gnome_env = bus("gnome-bus")
    gnome = gnome_keyring(gnome_env)
    sides = {"locket": locket_bus_env, "gnome-keyring": gnome_env}
    for side, env in sides.items():
        subprocess.run(["/usr/bin/python3", "-c", FILL, "0", str(ITEMS)], env=env, check=True)
    print("secret-tool against each provider, %d items, %d runs x %d rounds, paired; SPEC §18: a lookup at most 0.8x, the provider's CPU at most 0.33x; "
          "%d busy processes beside; load average %.1f" % (ITEMS, RUNS, ROUNDS, LOAD, os.getloadavg()[0]))
    print()
    print("| operation | locket | gnome-keyring | locket / gnome-keyring |")
    print("| --- | --- | --- | --- |")
    rng = random.Random(26)
    picks = {}

    def lookup(side, round_, run):
        n = picks.setdefault((round_, run), rng.randrange(ITEMS))
        return ["secret-tool", "lookup", "service", "svc-%d" % n, "username", "user"], None, b"secret-%d" % n

    def store(side, round_, run):
        n = "new-%d-%d" % (round_, run)
        return ["secret-tool", "store", "--label", n, "service", n, "username", "user"], b"stored", None

    busy = load(LOAD)
    paired("`secret-tool lookup`", sides, lookup, pids={"locket": provider.pid, "gnome-keyring": gnome.pid})
    paired("`secret-tool store`", sides, store)
    # Where a lookup's time goes: each call secret-tool makes, timed alone from one connection.
    calls = {}
    for side, env in sides.items():
        probe = subprocess.run(["/usr/bin/python3", "-c", CALLS], env=env, capture_output=True, text=True)
        calls[side] = probe.stdout.split()
        if probe.returncode != 0 or len(calls[side]) != 4:
            print("(the per-call probe failed on %s: %s)" % (side, probe.stderr.strip().splitlines()[-1:] or "?"))
    if all(len(v) == 4 for v in calls.values()):
        for k, name in enumerate(["OpenSession (dh)", "SearchItems", "GetSecrets", "Properties.GetAll (service)"]):
            print("| one %s call, from a connection already open | %s ms | %s ms | %.2fx |" % (
                name, calls["locket"][k], calls["gnome-keyring"][k], float(calls["locket"][k]) / float(calls["gnome-keyring"][k])))
    rates = {side: float(subprocess.run(["/usr/bin/python3", "-c", LOOP], env=env, check=True, capture_output=True).stdout)
             for side, env in sides.items()}
    print("| secretstorage, 1,000 GetSecret in one process | %.0f /s | %.0f /s | %.2fx the rate |" % (
        rates["locket"], rates["gnome-keyring"], rates["locket"] / rates["gnome-keyring"]))
    breakdown(sides, {"locket": (provider.pid, locket_bus.pid), "gnome-keyring": (gnome.pid, gnome_bus.pid)})
    stop(busy)
    # The provider's memory with BIG items, after listing them all and reading some.
    subprocess.run(["/usr/bin/python3", "-c", FILL, str(ITEMS), str(BIG)], env=locket_bus_env, check=True)
    subprocess.run(["/usr/bin/python3", "-c", """
import secretstorage
c = secretstorage.get_default_collection(secretstorage.dbus_init())
items = list(c.get_all_items())
assert len(items) >= %d, len(items)
for item in items[:200]:
    item.get_secret()
list(c.search_items({'username': 'user'}))
""" % BIG], env=locket_bus_env, check=True)
    now, peak = rss(provider.pid)
    print()
    print("locket secret-service with %d items, after Items (all %d paths), SearchItems matching all and 200 GetSecret: RSS %s, peak %s (target: under 16 MiB)"
          % (BIG, BIG, now, peak))


run(main)
