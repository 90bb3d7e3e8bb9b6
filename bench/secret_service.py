"""bench/secret-service's measurements (see that script): locket
secret-service and gnome-keyring-daemon side by side, each on a private bus."""
import os
import random
import statistics
import subprocess
import sys
import time

HOME = os.environ["HOME"]
LOCKET = os.environ["LOCKET_BIN"]
ITEMS = int(os.environ["SS_ITEMS"])
RUNS = int(os.environ["SS_RUNS"])
ROUNDS = int(os.environ["SS_ROUNDS"])
BIG = int(os.environ["SS_BIG"])
PASSWORD = "bench password"

CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:dir={dir}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
<limit name="max_message_size">1000000000</limit></busconfig>
"""


def bus(name):
    directory = os.path.join(HOME, name)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(os.path.join(directory, "bus.conf"), "w") as f:
        f.write(CONFIG.format(dir=directory))
    process = subprocess.Popen(["dbus-daemon", "--config-file=" + os.path.join(directory, "bus.conf"), "--nofork", "--nopidfile",
                                "--print-address=1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = process.stdout.readline().strip()
    return process, dict(os.environ, DBUS_SESSION_BUS_ADDRESS=address)


def wait_for_service(env):
    for _ in range(500):
        if subprocess.run(["/usr/bin/python3", "-c", "import secretstorage,sys; sys.exit(0 if secretstorage.check_service_availability(secretstorage.dbus_init()) else 1)"],
                          env=env, capture_output=True).returncode == 0:
            return
        time.sleep(0.05)
    sys.exit("the Secret Service did not come up")


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


def paired(name, sides, make):
    """Alternates the sides run by run; per round, the median of each; the
    ratio locket/gnome per round, and the median of those ratios."""
    ratios, medians = [], {side: [] for side in sides}
    for round_ in range(ROUNDS):
        times = {side: [] for side in sides}
        for run in range(RUNS):
            for side in (sides if run % 2 == 0 else list(reversed(sides))):
                arguments, stdin, expected = make(side, round_, run)
                elapsed, out = timed(arguments, sides[side], stdin)
                if expected is not None and out != expected:
                    sys.exit("%s on %s gave %r" % (name, side, out[:40]))
                times[side].append(elapsed)
        for side in sides:
            medians[side].append(statistics.median(times[side]))
        ratios.append(statistics.median(times["locket"]) / statistics.median(times["gnome-keyring"]))
    print("| %s | %.2f ms | %.2f ms | %.2fx (rounds: %s) |" % (
        name, 1000 * statistics.median(medians["locket"]), 1000 * statistics.median(medians["gnome-keyring"]),
        statistics.median(ratios), " ".join("%.2f" % r for r in ratios)))
    return statistics.median(ratios)


def rss(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields["VmRSS"], fields["VmHWM"]


def main():
    # locket: a keychain of its own, unlocked, its provider on one bus.
    locket_env = dict(os.environ)
    subprocess.run([LOCKET, "init", "--password-stdin", "--kdf", "interactive"], input=(PASSWORD + "\n").encode(), check=True)
    locket_bus, locket_bus_env = bus("locket-bus")
    provider = subprocess.Popen([LOCKET, "secret-service"], env=locket_bus_env, stderr=subprocess.DEVNULL)
    wait_for_service(locket_bus_env)
    # gnome-keyring-daemon on another, its login keyring unlocked with the password.
    gnome_bus, gnome_env = bus("gnome-bus")
    gnome = subprocess.Popen(["gnome-keyring-daemon", "--unlock", "--components=secrets", "--foreground"], env=gnome_env,
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gnome.stdin.write(PASSWORD.encode())
    gnome.stdin.close()
    wait_for_service(gnome_env)
    sides = {"locket": locket_bus_env, "gnome-keyring": gnome_env}
    for side, env in sides.items():
        subprocess.run(["/usr/bin/python3", "-c", FILL, "0", str(ITEMS)], env=env, check=True)
    print("secret-tool against each provider, %d items, %d runs x %d rounds, paired; locket's target: at most 0.5x" % (ITEMS, RUNS, ROUNDS))
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

    paired("`secret-tool lookup`", sides, lookup)
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
    for process in (provider, gnome, locket_bus, gnome_bus):
        process.terminate()
        process.wait(10)


main()
