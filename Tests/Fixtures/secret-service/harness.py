"""What the Secret Service cases share: a private bus, the provider on it,
the locket binary, and a raw D-Bus client (jeepney, which Debian's
python3-secretstorage depends on) for what no high-level client sends.

Environment (set by SecretServiceEndToEndTests): LOCKET_BIN, the sandbox's
HOME and XDG_* variables, LOCKET_SESSION=dir, TEST_PASSWORD (the login
keychain's password), TEST_DIR (a scratch directory of the test's own).
"""
import importlib
import os
import runpy
import select
import selectors
import signal
import subprocess
import sys
import time

from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

import child

LOCKET = os.environ["LOCKET_BIN"]
SCRATCH = os.environ["TEST_DIR"]
PASSWORD = os.environ.get("TEST_PASSWORD", "")
SERVICE = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                      interface="org.freedesktop.Secret.Service")
LOGIN = "/org/freedesktop/secrets/collection/login"


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def bus_config(directory):
    return f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={directory}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
  <!-- Debian's session.conf limits: what a user's session bus allows any client. -->
  <limit name="max_incoming_bytes">1000000000</limit>
  <limit name="max_outgoing_bytes">1000000000</limit>
  <limit name="max_message_size">1000000000</limit>
  <limit name="max_completed_connections">100000</limit>
  <limit name="max_incomplete_connections">10000</limit>
  <limit name="max_connections_per_user">100000</limit>
  <limit name="max_match_rules_per_connection">50000</limit>
  <limit name="max_replies_per_connection">50000</limit>
</busconfig>
"""


class Bus:
    """A dbus-daemon of the test's own (no service activation)."""

    def __init__(self):
        directory = os.path.join(SCRATCH, "bus%d" % time.monotonic_ns())
        os.makedirs(directory, mode=0o700)
        config = os.path.join(directory, "bus.conf")
        with open(config, "w") as f:
            f.write(bus_config(directory))
        self.process = subprocess.Popen(["dbus-daemon", "--config-file=" + config, "--nofork", "--nopidfile", "--print-address=1"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.address = self.process.stdout.readline().strip()
        check(self.address.startswith("unix:"), "dbus-daemon printed no address")
        self.environment = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=self.address)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


class Provider:
    """`locket secret-service ARGS` on `bus`, once it owns the name."""

    # Every provider started, killed when the case ends however it ends (`main`):
    # in a session of its own, none is in the process group a timed-out test's runner kills.
    started = []

    def __init__(self, bus, *arguments, environment=None, expect_start=True):
        self.bus = bus
        env = dict(bus.environment, **(environment or {}))
        # A session of its own: no controlling terminal, so a prompt never waits at the test's.
        self.process = subprocess.Popen([LOCKET, "secret-service", *arguments], env=env, start_new_session=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        Provider.started.append(self.process)
        if expect_start:
            # One connection for the polls: a connection's start is ~0.45 ms of this process's CPU, a call on it ~0.1 (issue 38).
            connection = connect(bus)
            try:
                wait_for(lambda: has_owner(bus, "org.freedesktop.secrets", connection) or self.process.poll() is not None, 20,
                         "the provider did not take org.freedesktop.secrets")
            finally:
                connection.close()
            if self.process.poll() is not None:
                fail("the provider exited %d: %s" % (self.process.returncode, self.process.stderr.read()))

    def stop(self, timeout=10):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            out, err = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            fail("the provider did not stop on SIGTERM")
        return self.process.returncode, err


def wait_for(predicate, seconds, message):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    fail(message)


def connect(bus):
    return open_dbus_connection(bus=bus.address)


def call(connection, address, method, signature=None, body=(), interface=None, timeout=30):
    """A method call; returns the reply body, or raises DBusError."""
    target = address if interface is None else DBusAddress(address.object_path, bus_name=address.bus_name, interface=interface)
    message = new_method_call(target, method, signature, body)
    reply = connection.send_and_get_reply(message, timeout=timeout)
    if reply.header.message_type == MessageType.error:
        raise DBusError(reply.header.fields.get(4, "?"), reply.body)
    return reply.body


class DBusError(Exception):
    def __init__(self, name, body):
        super().__init__(name, body)
        self.name = name


def has_owner(bus, name, connection=None):
    """Whether `name` has an owner on `bus` (asked on `connection`, else on a connection of its own)."""
    daemon = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
    if connection is not None:
        return call(connection, daemon, "NameHasOwner", "s", (name,))[0]
    connection = connect(bus)
    try:
        return call(connection, daemon, "NameHasOwner", "s", (name,))[0]
    finally:
        connection.close()


def obj(path, interface):
    return DBusAddress(path, bus_name="org.freedesktop.secrets", interface=interface)


def get_property(connection, path, interface, name):
    return call(connection, obj(path, "org.freedesktop.DBus.Properties"), "Get", "ss", (interface, name))[0][1]


def locket(*arguments, input=None, check_status=True):
    result = subprocess.run([LOCKET, *arguments], input=input, capture_output=True)
    if check_status and result.returncode != 0:
        fail("locket %s exited %d: %s" % (" ".join(arguments), result.returncode, result.stderr.decode(errors="replace")))
    return result


def run(arguments, bus, input=None, environment=None, expect=0):
    env = dict(bus.environment, **(environment or {}))
    result = subprocess.run(arguments, input=input, capture_output=True, env=env, timeout=60)
    if expect is not None and result.returncode != expect:
        fail("%s exited %d (expected %d): %s %s" % (" ".join(arguments), result.returncode, expect,
                                                    result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")))
    return result


class Python:
    """`/usr/bin/python3 ARGUMENTS` (`-c SCRIPT ARGS...` or `-m MODULE ARGS...`)
    as a fork of this interpreter, with `preload` imported here first: a
    process of its own, as that command's is, with `environment`, its stdin,
    stdout and stderr pipes to the case and nothing else of the case's open;
    without an interpreter's start and the client library's imports
    (secretstorage's ~0.14 CPU-s, keyring's ~0.25; issue 38). Made before
    the case starts any thread."""

    def __init__(self, arguments, environment, preload=()):
        check(arguments[0] in ("-c", "-m"), "python3 %s: only -c and -m" % arguments[0])
        for module in preload:
            importlib.import_module(module)
        self.arguments = ["/usr/bin/python3", *arguments]
        # For messages: the module and its arguments, or `-c` without the script.
        self.name = " ".join(self.arguments if arguments[0] == "-m" else self.arguments[:2])
        child_stdin, stdin = os.pipe()
        stdout, child_stdout = os.pipe()
        stderr, child_stderr = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:
            def streams():
                for fd, target in ((child_stdin, 0), (child_stdout, 1), (child_stderr, 2)):
                    os.dup2(fd, target)

            def main():
                if arguments[0] == "-c":
                    sys.argv = ["-c", *arguments[2:]]
                    exec(compile(arguments[1], "<string>", "exec"), {"__name__": "__main__"})
                else:
                    sys.argv = [arguments[1], *arguments[2:]]
                    runpy.run_module(arguments[1], run_name="__main__", alter_sys=True)
            child.become(streams, environment, main)
        for fd in (child_stdin, child_stdout, child_stderr):
            os.close(fd)
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr

    def communicate(self, input=None, timeout=60):
        """Writes `input` and closes stdin, reads stdout and stderr to their
        ends, waits; what subprocess.run returns. Kills it after `timeout` s."""
        deadline = time.monotonic() + timeout
        selector = selectors.DefaultSelector()
        pending = bytes(input or b"")
        if pending:
            selector.register(self.stdin, selectors.EVENT_WRITE)
        else:
            os.close(self.stdin)
        output = {self.stdout: bytearray(), self.stderr: bytearray()}
        for fd in output:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                fail("%s did not end within %d s" % (self.name, timeout))
            for key, _ in selector.select(left):
                if key.fd == self.stdin:
                    try:
                        pending = pending[os.write(self.stdin, pending[:select.PIPE_BUF]):]
                    except BrokenPipeError:
                        pending = b""
                    if not pending:
                        selector.unregister(self.stdin)
                        os.close(self.stdin)
                else:
                    chunk = os.read(key.fd, 1 << 20)
                    if chunk:
                        output[key.fd] += chunk
                    else:
                        selector.unregister(key.fd)
                        os.close(key.fd)
        _, status = os.waitpid(self.pid, 0)
        return subprocess.CompletedProcess(self.arguments, os.waitstatus_to_exitcode(status), bytes(output[self.stdout]),
                                           bytes(output[self.stderr]))


def python(arguments, bus, input=None, expect=0, preload=()):
    """`run(["/usr/bin/python3", *arguments], ...)` as a fork of this interpreter (`Python`)."""
    process = Python(arguments, bus.environment, preload)
    result = process.communicate(input)
    if expect is not None and result.returncode != expect:
        fail("%s exited %d (expected %d): %s %s" % (process.name, result.returncode, expect,
                                                    result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")))
    return result


def askpass(password, name="askpass.sh", sleep=0):
    """An askpass program that prints `password` (after `sleep` seconds)."""
    path = os.path.join(SCRATCH, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
        if sleep:
            # Renamed into place: the test sees the pid file whole or not at all.
            f.write("echo $$ > %s.pid.new && mv %s.pid.new %s.pid\nsleep %d\n" % (path, path, path, sleep))
        f.write("printf '%%s\\n' '%s'\n" % password.replace("'", "'\\''"))
    os.chmod(path, 0o700)
    return path


def keychain_files():
    directory = os.path.join(os.environ["XDG_DATA_HOME"], "locket")
    return [os.path.join(directory, name) for name in os.listdir(directory)]


def assert_not_on_disk(*values):
    """No value appears in any keychain file (the database, its WAL, journals)."""
    for path in keychain_files():
        with open(path, "rb") as f:
            data = f.read()
        for value in values:
            raw = value if isinstance(value, bytes) else value.encode()
            check(raw not in data, "%r is in the clear in %s" % (value, path))


def main(cases):
    name = sys.argv[1]
    bus = Bus()
    try:
        cases[name](bus)
    finally:
        bus.stop()
        # A provider a failed case left running (one spinning at 100 % outlived its bus once).
        for process in Provider.started:
            if process.poll() is None:
                process.kill()
                process.wait(10)
    print("OK " + name, flush=True)
