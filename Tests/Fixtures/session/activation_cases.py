"""`locket secret-service enable | disable | status` with a real bus
(SPEC §20): a private session bus whose configuration is the standard one
(`<standard_session_servicedirs/>`: the user's $XDG_DATA_HOME/dbus-1/services
first, then $XDG_DATA_DIRS'), gnome-keyring's service file installed in the
test's own system directory. Run by SecretServiceSessionActivationTests:
`python3 activation_cases.py CASE`."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "secret-service"))
from harness import LOCKET, SCRATCH, check, fail, has_owner, wait_for  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from users import activating_bus_config  # noqa: E402

GNOME_KEYRING_FILE = "/usr/share/dbus-1/services/org.freedesktop.secrets.service"


def skip(reason):
    print("SKIP: " + reason, flush=True)
    sys.exit(0)


class ActivatingBus:
    """dbus-daemon with the standard session service directories; its
    activated services get this process's environment."""

    def __init__(self, environment):
        directory = os.path.join(SCRATCH, "bus%d" % time.monotonic_ns())
        os.makedirs(directory, mode=0o700)
        config = activating_bus_config(directory, directory)
        self.process = subprocess.Popen(["dbus-daemon", "--config-file=" + config, "--nofork", "--nopidfile", "--print-address=1"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment)
        self.address = self.process.stdout.readline().strip()
        check(self.address.startswith("unix:"), "dbus-daemon printed no address")
        self.environment = dict(environment, DBUS_SESSION_BUS_ADDRESS=self.address)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def status(environment):
    result = subprocess.run([LOCKET, "--json", "secret-service", "status"], capture_output=True, env=environment)
    check(result.returncode == 0, "status: " + result.stderr.decode())
    return json.loads(result.stdout)


def run(arguments, environment, input=None, expect=0, timeout=30):
    result = subprocess.run(arguments, capture_output=True, env=environment, input=input, timeout=timeout)
    if expect is not None and result.returncode != expect:
        fail("%s exited %d: %s %s" % (" ".join(arguments), result.returncode, result.stdout.decode(), result.stderr.decode()))
    return result


def stop_owner(environment):
    """Stops whoever owns the name, by its pid (status names it)."""
    owner = status(environment)["owner"]
    if owner and owner.get("pid"):
        os.kill(owner["pid"], signal.SIGTERM)
        bus = type("B", (), {"address": environment["DBUS_SESSION_BUS_ADDRESS"]})
        wait_for(lambda: not has_owner(bus, "org.freedesktop.secrets"), 10, "the owner did not stop")


def activation_and_precedence():
    """enable; with no provider running, secret-tool's store and lookup start
    locket (status: enabled, activatable, the owner locket's); disable; the
    next client starts gnome-keyring from the system directory's file."""
    if not os.path.exists(GNOME_KEYRING_FILE) or shutil.which("gnome-keyring-daemon") is None:
        skip("gnome-keyring is not installed (make test-deps)")
    if shutil.which("secret-tool") is None:
        skip("secret-tool is not installed (make test-deps)")
    system = os.path.join(SCRATCH, "share")
    os.makedirs(system + "/dbus-1/services")
    shutil.copy(GNOME_KEYRING_FILE, system + "/dbus-1/services/")
    environment = dict(os.environ, XDG_DATA_DIRS=system, LOCKET_ASKPASS="", SSH_ASKPASS="")
    before = status(environment)
    check(not before["enabled"] and before["activation"]["file"].startswith(system), "before enable: %r" % before)
    bus = ActivatingBus(environment)
    environment = bus.environment
    try:
        run([LOCKET, "secret-service", "enable"], environment)
        check(not has_owner(bus, "org.freedesktop.secrets"), "a provider is already running")
        run(["secret-tool", "store", "--label", "act", "service", "activated", "username", "u"], environment, input=b"activated-secret")
        looked = run(["secret-tool", "lookup", "service", "activated", "username", "u"], environment)
        check(looked.stdout == b"activated-secret", "lookup: %r" % looked.stdout)
        now = status(environment)
        check(now["enabled"] and now["activatable"] and now["activation"]["locket"], "after enable: %r" % now)
        check(now["owner"] and now["owner"]["locket"], "the owner is not locket: %r" % now["owner"])
        found = run([LOCKET, "find", "-s", "activated", "-w", "-n"], environment)
        check(found.stdout == b"activated-secret", "locket find: %r" % found.stdout)
        stop_owner(environment)
        run([LOCKET, "secret-service", "disable"], environment)
        after = status(environment)
        check(not after["enabled"] and after["activation"]["file"].startswith(system) and not after["activation"]["locket"],
              "after disable: %r" % after)
        # gnome-keyring may want a prompter to make its keyring; what matters is who the bus started.
        subprocess.run(["secret-tool", "lookup", "service", "activated"], capture_output=True, env=environment, timeout=30)
        wait_for(lambda: (status(environment)["owner"] or {}).get("executable", "").endswith("gnome-keyring-daemon"), 20,
                 "gnome-keyring was not the one started: %r" % status(environment)["owner"])
        stop_owner(environment)
    finally:
        try:
            stop_owner(environment)
        except SystemExit:
            pass
        bus.stop()


if __name__ == "__main__":
    name = sys.argv[1]
    {"activation_and_precedence": activation_and_precedence}[name]()
    print("OK " + name, flush=True)
