"""bench/session's measurements (see that script)."""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Tests", "Fixtures", "session"))
from users import LOCKET, User  # noqa: E402

LOGINS = int(os.environ["SESSION_LOGINS"])
LOOKUPS = int(os.environ["SESSION_LOOKUPS"])


def init(user, kdf):
    made = user.locket("init", "--password-stdin", "--kdf", kdf, input=(user.password + "\n").encode())
    if made.returncode != 0:
        sys.exit("locket init: " + made.stderr.decode())


def logins(user, kdf):
    """Median seconds of a login with and without the module, paired."""
    init(user, kdf)
    base = ["auth required pam_unix.so", "account required pam_permit.so", "session required pam_permit.so"]
    user.service("without", base)
    user.service("with", ["auth required pam_unix.so", "auth optional MODULE locket=" + LOCKET, "account required pam_permit.so",
                          "session required pam_permit.so", "session optional MODULE lock_on_close locket=" + LOCKET])
    times = {"with": [], "without": []}
    for run in range(LOGINS):
        for service in (["with", "without"] if run % 2 == 0 else ["without", "with"]):
            user.locket("lock")
            started = time.perf_counter()
            status, logs, output = user.pam(service, ["authenticate", "open_session", "close_session"], [user.password])
            times[service].append(time.perf_counter() - started)
            if status != 0 or (service == "with" and not any(line.startswith("unlocked ") for line in logs)):
                sys.exit("the %s login failed: %s" % (service, output))
    with_, without = statistics.median(times["with"]), statistics.median(times["without"])
    print("| %s | %.1f ms | %.1f ms | +%.1f ms |" % (kdf, 1000 * without, 1000 * with_, 1000 * (with_ - without)))
    remove_keychain(user)


def unlock_time(user, kdf):
    init(user, kdf)
    samples = []
    for _ in range(5):
        user.locket("lock")
        started = time.perf_counter()
        user.locket("unlock", "--password-stdin", "--timeout", "none", input=(user.password + "\n").encode())
        samples.append(time.perf_counter() - started)
    remove_keychain(user)
    return statistics.median(samples)


def remove_keychain(user):
    for suffix in ["", "-wal"]:
        path = os.path.join(user.home, ".local/share/locket/login.keychain" + suffix)
        if os.path.exists(path):
            os.remove(path)


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.split(":", 1) for line in f)["VmRSS"].strip()


LOOKUP = """
import secretstorage, sys
c = secretstorage.get_default_collection(secretstorage.dbus_init())
for i in range(100):
    c.create_item('item %d' % i, {'service': 'svc-%d' % i, 'username': 'u'}, b'secret-%d' % i)
print("ready", flush=True)
sys.stdin.readline()
for i in range(int(sys.argv[1])):
    item = next(c.search_items({'service': 'svc-%d' % (i % 100), 'username': 'u'}))
    assert item.get_secret() == b'secret-%d' % (i % 100)
print("done", flush=True)
sys.stdin.readline()
"""


def provider_memory(user):
    init(user, "interactive")
    address = user.bus()
    env = {"DBUS_SESSION_BUS_ADDRESS": address}
    provider = user.start([LOCKET, "secret-service"], environment=env)
    for _ in range(200):
        if b"true" in user.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                                "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"], environment=env).stdout:
            break
        time.sleep(0.05)
    time.sleep(0.5)
    idle = rss(provider.pid)
    client = subprocess.Popen(["/usr/bin/python3", "-c", LOOKUP, str(LOOKUPS)], env=dict(user.environment, **env), user=user.uid,
                              group=user.gid, extra_groups=[], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert client.stdout.readline().strip() == "ready"
    filled = rss(provider.pid)
    client.stdin.write("\n")
    client.stdin.flush()
    assert client.stdout.readline().strip() == "done"
    after = rss(provider.pid)
    client.stdin.write("\n")
    client.stdin.flush()
    client.wait(30)
    print("| provider RSS | idle %s | 100 items stored %s | after %d lookups %s |" % (idle, filled, LOOKUPS, after))


def main():
    user = User(password="Bench-login-1")
    try:
        print("| keychain's cost | login without the module | with it | added |")
        print("| --- | --- | --- | --- |")
        logins(user, "moderate")
        logins(user, "interactive")
        print("locket unlock alone (the Argon2id hash and a process): moderate %.1f ms, interactive %.1f ms"
              % (1000 * unlock_time(user, "moderate"), 1000 * unlock_time(user, "interactive")))
        provider_memory(user)
    finally:
        user.remove()


main()
