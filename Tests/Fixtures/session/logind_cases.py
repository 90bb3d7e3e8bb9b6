"""Locked with the session (SPEC §20): logind, python3-dbusmock's logind
template on a private system bus, emits Session.Lock, LockedHint and
PrepareForSleep(true); the provider serving the session bus locks the
keychains (each as its settings say), seen through `locket find` (exit 36)
and over the bus. Run by SecretServiceSessionLogindTests:
`python3 logind_cases.py CASE`."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "secret-service"))
from jeepney import DBusAddress, MatchRule, new_method_call  # noqa: E402
from jeepney.io.blocking import open_dbus_connection  # noqa: E402

from harness import LOGIN, PASSWORD, SCRATCH, Bus, Provider, call, check, connect, fail, get_property, locket, main, wait_for  # noqa: E402

LOGIND = "org.freedesktop.login1"
MOCK = "org.freedesktop.DBus.Mock"


def skip(reason):
    print("SKIP: " + reason, flush=True)
    sys.exit(0)


class SystemBus(Bus):
    """A dbus-daemon standing in for the system bus, with logind mocked on it."""

    def __init__(self, with_logind=True):
        super().__init__()
        self.mock = None
        if with_logind:
            self.start_logind()

    def start_logind(self):
        try:
            import dbusmock  # noqa: F401
        except ImportError:
            skip("python3-dbusmock is not installed (make test-deps)")
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address)
        self.log = os.path.join(SCRATCH, "dbusmock.log")
        with open(self.log, "w") as log:
            self.mock = subprocess.Popen(["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "logind"],
                                         env=env, stdout=log, stderr=log)
        wait_for(lambda: self.has(LOGIND) or self.mock.poll() is not None, 20, "dbusmock's logind did not start")
        if self.mock.poll() is not None:
            fail("dbusmock exited: " + open(self.log).read())
        self.connection = open_dbus_connection(bus=self.address)

    def has(self, name):
        connection = open_dbus_connection(bus=self.address)
        try:
            daemon = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
            return call(connection, daemon, "NameHasOwner", "s", (name,))[0]
        finally:
            connection.close()

    def logind(self, path, interface, member, signature=None, body=()):
        return call(self.connection, DBusAddress(path, bus_name=LOGIND, interface=interface), member, signature, body)

    def add_session(self, session, uid):
        return self.logind("/org/freedesktop/login1", MOCK, "AddSession", "ssusb", (session, "seat0", uid, "user%d" % uid, True))[0]

    def emit(self, path, interface, name, signature, args):
        self.logind(path, MOCK, "EmitSignal", "sssav", (interface, name, signature, args))

    def inhibitors(self):
        return self.logind("/org/freedesktop/login1", LOGIND + ".Manager", "ListInhibitors")[0]

    def stop(self):
        if self.mock and self.mock.poll() is None:
            self.mock.terminate()
            self.mock.wait(10)
        super().stop()


def locked():
    """What `locket find` says of the login keychain's item: exit 36 while locked."""
    return locket("find", "-s", "logind", "-w", check_status=False).returncode == 36


def unlock():
    locket("unlock", "--password-stdin", input=(PASSWORD + "\n").encode())
    check(not locked(), "unlock did not unlock")


def lock_and_sleep(bus):
    """Session.Lock and LockedHint of this user's session lock the keychain
    (PropertiesChanged says Locked changed), another user's do not; a
    keychain whose setting is off stays unlocked; PrepareForSleep(true)
    locks, with a delay inhibitor held until then and taken again on wake-up."""
    locket("add", "-s", "logind", "-a", "a", "-w", input=b"s3cret")
    system = SystemBus()
    try:
        ours = system.add_session("c1", os.getuid())
        theirs = system.add_session("c2", os.getuid() + 4242)
        provider = Provider(bus, environment={"DBUS_SYSTEM_BUS_ADDRESS": system.address})
        wait_for(lambda: any(inhibitor[1] == "locket" and inhibitor[0] == "sleep" and inhibitor[3] == "delay" for inhibitor in system.inhibitors()),
                 10, "no delay inhibitor for sleep: %r" % (system.inhibitors(),))
        client = connect(bus)
        check(get_property(client, LOGIN, "org.freedesktop.Secret.Collection", "Locked") is False, "locked at the start")
        rule = MatchRule(type="signal", interface="org.freedesktop.DBus.Properties", member="PropertiesChanged", path=LOGIN)
        call(client, DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus"),
             "AddMatch", "s", (rule.serialise(),))
        with client.filter(rule) as changes:
            # Another user's screen: nothing happens.
            system.logind(theirs, LOGIND + ".Session", "Lock")
            time.sleep(0.5)
            check(not locked(), "another user's Session.Lock locked the keychain")
            system.logind(ours, LOGIND + ".Session", "Lock")
            wait_for(locked, 10, "Session.Lock did not lock the keychain")
            changed = client.recv_until_filtered(changes, timeout=10)
            check("Locked" in changed.body[2] or "Locked" in changed.body[1], "PropertiesChanged: %r" % (changed.body,))
        check(get_property(client, LOGIN, "org.freedesktop.Secret.Collection", "Locked") is True, "the bus still says unlocked")
        # The screen locker's LockedHint.
        unlock()
        system.logind(ours, LOGIND + ".Session", "SetLockedHint", "b", (True,))
        wait_for(locked, 10, "LockedHint did not lock the keychain")
        # Turned off for the screen: the keychain stays unlocked then.
        unlock()
        locket("settings", "--lock-on-screen-lock", "no")
        system.logind(ours, LOGIND + ".Session", "Lock")
        time.sleep(0.5)
        check(not locked(), "--lock-on-screen-lock no, and Session.Lock locked")
        # Sleep: locked, then the inhibitor is let go; on wake-up taken again.
        system.emit("/org/freedesktop/login1", LOGIND + ".Manager", "PrepareForSleep", "b", [("b", True)])
        wait_for(locked, 10, "PrepareForSleep(true) did not lock the keychain")
        wait_for(lambda: not system.inhibitors(), 10, "the inhibitor was kept after locking: %r" % (system.inhibitors(),))
        system.emit("/org/freedesktop/login1", LOGIND + ".Manager", "PrepareForSleep", "b", [("b", False)])
        wait_for(lambda: len(system.inhibitors()) == 1, 10, "no inhibitor after waking up")
        unlock()
        locket("settings", "--lock-on-sleep", "no")
        system.emit("/org/freedesktop/login1", LOGIND + ".Manager", "PrepareForSleep", "b", [("b", True)])
        time.sleep(0.5)
        check(not locked(), "--lock-on-sleep no, and PrepareForSleep locked")
        status, err = provider.stop()
        check(status == 0, "the provider exited %d: %s" % (status, err))
        check("locked login: the screen of session c1 locked" in err and "locked login: the machine is about to sleep" in err, err)
    finally:
        system.stop()


def no_logind(bus):
    """No system bus at all, then a system bus without logind: each said
    once, and the provider serves; logind appearing later is picked up."""
    locket("add", "-s", "logind", "-a", "a", "-w", input=b"s3cret")
    provider = Provider(bus, environment={"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=" + os.path.join(SCRATCH, "no-such-socket")})
    check(locket("find", "-s", "logind", "-w").returncode == 0, "find")
    status, err = provider.stop()
    check(status == 0 and err.count("no system bus at") == 1, "no system bus: %d %r" % (status, err))
    system = SystemBus(with_logind=False)
    try:
        provider = Provider(bus, environment={"DBUS_SYSTEM_BUS_ADDRESS": system.address})
        time.sleep(0.3)
        system.start_logind()
        ours = system.add_session("c1", os.getuid())
        wait_for(lambda: len(system.inhibitors()) == 1, 10, "the provider did not pick up logind")
        system.logind(ours, LOGIND + ".Session", "Lock")
        wait_for(locked, 10, "Session.Lock did not lock the keychain once logind appeared")
        status, err = provider.stop()
        check(status == 0 and err.count("logind is not on the system bus") == 1 and "logind is on the system bus" in err, err)
    finally:
        system.stop()


if __name__ == "__main__":
    main({"lock_and_sleep": lock_and_sleep, "no_logind": no_logind})
