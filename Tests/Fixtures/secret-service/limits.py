"""The provider's limits (SPEC §18, issue 44): sessions, prompts and other
objects bounded per client and in all while the provider answers everyone
else; messages already read are answered before it sleeps; sizes refused
on every path as the command line refuses them; a search at the documented
maximum of attributes; the private bus gone with its provider. Run by
SecretServiceLimitsTests: `python3 limits.py CASE`.

The floods run at a size make test can afford; `make soak` runs the figure
of the issue (500 connections requesting 100,000 sessions) through
TEST_FLOOD_CONNECTIONS and TEST_FLOOD_SESSIONS, and each case prints what it
measured."""
import json
import os
import secrets
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
import types

sys.path.insert(0, os.path.dirname(__file__))
from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.low_level import Message
from jeepney.io.blocking import open_dbus_connection

from harness import (LOCKET, LOGIN, PASSWORD, SCRATCH, DBusError, Provider, call, check, connect, fail, get_property, locket,
                     main, obj, run, wait_for)

P = int("FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
        "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
        "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", 16)
SERVICE = obj("/org/freedesktop/secrets", "org.freedesktop.Secret.Service")
COLLECTION = obj(LOGIN, "org.freedesktop.Secret.Collection")
ITEM = "org.freedesktop.Secret.Item"
PROPERTIES = "org.freedesktop.DBus.Properties"
DH = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
LIMITS_EXCEEDED = "org.freedesktop.DBus.Error.LimitsExceeded"
# The provider's bounds (Provider+Limits.swift), as the man page states them.
SESSIONS_PER_CLIENT, SESSIONS = 256, 4096
PROMPTS_PER_CLIENT, PROMPTS = 64, 1024
ALIASES = 256


def resident(pid):
    """(VmRSS, VmHWM) of `pid` in MiB."""
    values = {}
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                values[name] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


def cpu_seconds(pid):
    """User and system CPU time of `pid` so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def plain_session(connection):
    return call(connection, SERVICE, "OpenSession", "sv", ("plain", ("s", "")))[1]


def create(connection, session, attributes, secret, label="item"):
    properties = {ITEM + ".Label": ("s", label), ITEM + ".Attributes": ("a{ss}", attributes)}
    return call(connection, COLLECTION, "CreateItem", "a{sv}(oayays)b", (properties, (session, b"", secret, "text/plain"), False))[0]


def pipelined(connection, messages, timeout=60):
    """Sends every message before reading any reply; returns the replies in
    the order sent (a reply missing after `timeout` seconds fails).

    What jeepney's send and receive would do, at a fraction of the CPU (a
    run pipelines ~25,000 calls; issue 38): `send` and `Incoming`."""
    templates = {}
    serials = [send(connection, message, templates) for message in messages]
    wanted = set(serials)
    replies = {}
    incoming = Incoming(connection)
    readable = select.poll()
    readable.register(connection.sock.fileno(), select.POLLIN)
    deadline = time.monotonic() + timeout
    while True:
        for reply in incoming.messages():
            serial = reply.header.fields.get(5)  # reply_serial
            if serial in wanted:
                wanted.discard(serial)
                replies[serial] = reply
        if not wanted:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            fail("%d of %d pipelined calls got no reply in %d s" % (len(wanted), len(serials), timeout))
        if readable.poll(remaining * 1000) and not incoming.read():
            fail("the bus closed the connection with %d of %d pipelined calls unanswered" % (len(wanted), len(serials)))
    incoming.give_back()
    return [replies[s] for s in serials]


def send(connection, message, templates):
    """connection.send(message) with the connection's next serial; returns
    the serial. A message object sent again is not serialised again: its
    bytes (kept in `templates`) get the new serial."""
    template = templates.get(id(message))
    if template is None:
        template = templates[id(message)] = (bytearray(message.serialise(serial=1)), message.header.endianness.struct_code() + "I")
    serial = next(connection.outgoing_serial)
    data, code = template
    struct.pack_into(code, data, 8, serial)
    connection.sock.sendall(data)
    return serial


class Incoming:
    """A jeepney connection's incoming messages as `Reply`s, read a MiB at a
    time (jeepney reads 4 KiB), after what jeepney had read already;
    `give_back` hands what is left to jeepney again."""

    def __init__(self, connection):
        self.connection = connection
        buffered = connection.parser.buf.bytes_buffered
        self.data = bytearray(connection.parser.buf.read(buffered) if buffered else b"")
        connection.parser.next_msg_size = None

    def read(self):
        """One read of the socket (which must be readable); False at its end."""
        chunk = self.connection.sock.recv(1 << 20)
        self.data += chunk
        return bool(chunk)

    def messages(self):
        """The messages complete so far."""
        complete, start = [], 0
        while len(self.data) - start >= 16:
            size = message_size(self.data, start)
            if len(self.data) - start < size:
                break
            complete.append(Reply(self.data[start:start + size]))
            start += size
        del self.data[:start]
        return complete

    def give_back(self):
        if self.data:
            self.connection.parser.add_data(bytes(self.data))
            self.data = bytearray()


def message_size(data, start):
    """A D-Bus message's length from its first 16 bytes (jeepney's calc_msg_size)."""
    code = "<" if data[start] == ord("l") else ">"
    body, _, fields = struct.unpack_from(code + "III", data, start + 4)
    return 16 + fields + (-(16 + fields) % 8) + body


class Reply:
    """A message `pipelined` read: its type and header fields parsed here,
    as jeepney's `header` shows them; its body parsed by jeepney when asked,
    once for all replies of the same signature and bytes (the 5,000 equal
    secrets of a pipelined run)."""
    bodies = {}

    def __init__(self, raw):
        self.raw = bytes(raw)
        code = "<" if raw[0] == ord("l") else ">"
        fields_length = struct.unpack_from(code + "I", raw, 12)[0]
        fields = {}
        position, end = 16, 16 + fields_length
        while position < end:
            position += -position % 8
            field, length = raw[position], raw[position + 1]
            signature = raw[position + 2:position + 2 + length]
            position += 3 + length
            if signature in (b"s", b"o"):
                position += -position % 4
                size = struct.unpack_from(code + "I", raw, position)[0]
                fields[field] = raw[position + 4:position + 4 + size].decode()
                position += 5 + size
            elif signature == b"u":
                position += -position % 4
                fields[field] = struct.unpack_from(code + "I", raw, position)[0]
                position += 4
            elif signature == b"g":
                size = raw[position]
                fields[field] = raw[position + 1:position + 1 + size].decode()
                position += 2 + size
            else:
                fail("a header field of signature %r" % signature)
        self.body_start = end + (-end % 8)
        self.header = types.SimpleNamespace(message_type=MessageType(raw[1]), fields=fields)

    @property
    def body(self):
        key = (self.raw[0], self.header.fields.get(8, ""), self.raw[self.body_start:])
        body = Reply.bodies.get(key)
        if body is None:
            body = Reply.bodies[key] = Message.from_buffer(self.raw).body
        return body


def error_name(reply):
    return reply.header.fields.get(4) if reply.header.message_type == MessageType.error else None


class Probe(threading.Thread):
    """Another client getting on with its work while a flood runs: a
    property read and a secret read through its own session, in turn, each
    timed from sent to answered."""

    def __init__(self, bus, item, session_connection, session):
        super().__init__(daemon=True)
        self.connection, self.session, self.item = session_connection, session, item
        self.latencies = []
        self.failure = None
        self.stopping = threading.Event()

    def run(self):
        try:
            while not self.stopping.is_set():
                started = time.monotonic()
                call(self.connection, obj(LOGIN, PROPERTIES), "Get", "ss", ("org.freedesktop.Secret.Collection", "Label"), timeout=30)
                (secret,) = call(self.connection, obj(self.item, ITEM), "GetSecret", "o", (self.session,), timeout=30)
                self.latencies.append(time.monotonic() - started)
                if secret[2] != b"probe":
                    self.failure = "the probe read another secret"
                    return
                time.sleep(0.02)
        except Exception as error:  # reported by the case, with what it was doing
            self.failure = "the probe failed: %r" % (error,)


def with_probe(bus, body):
    """Runs `body` while a probe client reads; returns the probe's slowest answer in seconds."""
    connection = connect(bus)
    session = plain_session(connection)
    item = create(connection, session, {"probe": "1"}, b"probe")
    probe = Probe(bus, item, connection, session)
    probe.start()
    try:
        body()
    finally:
        probe.stopping.set()
        probe.join(60)
    check(probe.failure is None, probe.failure or "")
    check(len(probe.latencies) > 0, "the probe was never answered")
    ordered = sorted(probe.latencies)
    print("the other client's answers: median %.0f ms, 90th percentile %.0f ms, slowest %.0f ms"
          % (ordered[len(ordered) // 2] * 1000, ordered[len(ordered) * 9 // 10] * 1000, ordered[-1] * 1000), flush=True)
    # Its session survived the flood: a client holding few is never the one that gives way.
    (secret,) = call(connection, obj(item, ITEM), "GetSecret", "o", (session,))
    check(secret[2] == b"probe", "the probe's session")
    connection.close()
    return max(probe.latencies), len(probe.latencies)


FLOOD_WORKER = """
import json, os, selectors, sys
sys.path.insert(0, %r)
from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection
from limits import error_name, send as send_message, Incoming, LOGIN, SERVICE, DH
kind, count, per_connection, window, public = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), bytes.fromhex(sys.argv[5])
# Started, then told to go: the interpreters' start is not part of what the other client lives through.
print("ready", flush=True)
sys.stdin.readline()
connections = [open_dbus_connection(bus=os.environ["DBUS_SESSION_BUS_ADDRESS"]) for _ in range(count)]
opened = refused = 0
errors = {}
sent = {id(c): 0 for c in connections}
answered = {id(c): 0 for c in connections}
selector = selectors.DefaultSelector()
if kind == "session":
    call = new_method_call(SERVICE, "OpenSession", "sv", (DH, ("ay", public)))
else:
    call = new_method_call(SERVICE, "Unlock", "ao", ([LOGIN],))
templates = {}
incoming = {id(c): Incoming(c) for c in connections}

def send(connection):
    send_message(connection, call, templates)
    sent[id(connection)] += 1

# Each connection keeps `window` calls in flight: as many as it can get answered, all at once.
for connection in connections:
    selector.register(connection.sock, selectors.EVENT_READ, connection)
    for _ in range(min(window, per_connection)):
        send(connection)
waiting = len(connections)
while waiting:
    for key, _ in selector.select(timeout=600):
        connection = key.data
        if not incoming[id(connection)].read():
            raise ConnectionResetError("the bus closed the connection")
        for message in incoming[id(connection)].messages():
            if message.header.message_type not in (MessageType.method_return, MessageType.error):
                continue
            answered[id(connection)] += 1
            name = error_name(message)
            if name is None:
                opened += 1
            else:
                refused += 1
                errors[name] = errors.get(name, 0) + 1
            if sent[id(connection)] < per_connection:
                send(connection)
            elif answered[id(connection)] == per_connection:
                waiting -= 1
for connection in connections:
    incoming[id(connection)].give_back()
print(json.dumps({"opened": opened, "refused": refused, "errors": errors}), flush=True)
sys.stdin.readline()  # held open until the case has counted what is left
live = 0
for connection in connections:
    xml = connection.send_and_get_reply(new_method_call(DBusAddress("/org/freedesktop/secrets/" + kind, bus_name="org.freedesktop.secrets",
                                        interface="org.freedesktop.DBus.Introspectable"), "Introspect")).body[0]
    live += xml.count("<node name=")
print(json.dumps({"live": live}), flush=True)
sys.stdin.readline()
""" % os.path.dirname(os.path.abspath(__file__))


class Program:
    """A flooding program: this interpreter forked, running FLOOD_WORKER with
    `arguments` and `environment`, its stdin and stdout pipes to the case. A
    process of its own as a python3 started for it was, without the start:
    an interpreter importing jeepney is ~0.1 CPU-s, and a run starts 36
    (issue 38). Forked before the case has threads (the probe starts after)."""

    def __init__(self, arguments, environment):
        child_stdin, stdin = os.pipe()
        stdout, child_stdout = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:
            status = 1
            try:
                os.dup2(child_stdin, 0)
                os.dup2(child_stdout, 1)
                # Nothing of the case's: its connections, its other programs' pipes (their EOF), the provider's.
                os.closerange(3, os.sysconf("SC_OPEN_MAX"))
                sys.stdin, sys.stdout = open(0, "r", closefd=False), open(1, "w", closefd=False)
                os.environ.clear()
                os.environ.update(environment)
                sys.argv = ["-c", *arguments]
                exec(compile(FLOOD_WORKER, "<flood worker>", "exec"), {"__name__": "__flood__"})
                status = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        os.close(child_stdin)
        os.close(child_stdout)
        self.stdin, self.stdout = open(stdin, "w"), open(stdout, "r")

    def wait(self, timeout):
        deadline = time.monotonic() + timeout
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                fail("a flooding program did not end in %d s" % timeout)
            time.sleep(0.01)


class Flood:
    """`processes` programs with `connections` connections in all, each
    connection making `per_connection` calls of `kind` (session: a DH
    OpenSession; prompt: an Unlock of the locked login), `window` in flight."""

    def __init__(self, bus, kind, processes, connections, per_connection, window):
        x = secrets.randbelow(P - 3) + 2
        public = pow(2, x, P).to_bytes(128, "big").hex()
        self.processes = []
        for k in range(processes):
            share = connections // processes + (1 if k < connections % processes else 0)
            self.processes.append(Program([kind, str(share), str(per_connection), str(window), public], bus.environment))
        for p in self.processes:
            check(p.stdout.readline() == "ready\n", "a flooding program did not start")

    def start(self):
        for p in self.processes:
            p.stdin.write("go\n")
            p.stdin.flush()

    def answered(self):
        """Once every call is answered: each program's counts."""
        return [json.loads(p.stdout.readline() or "{}") for p in self.processes]

    def kept(self):
        """How many objects each program holds now."""
        for p in self.processes:
            p.stdin.write("\n")
            p.stdin.flush()
        return [json.loads(p.stdout.readline() or '{"live": -1}')["live"] for p in self.processes]

    def end(self):
        for p in self.processes:
            p.stdin.close()
            p.wait(60)


def session_flood(bus):
    """Programs requesting far more sessions than the provider keeps, each
    connection with WINDOW calls in flight at all times: at most
    SESSIONS_PER_CLIENT per program and SESSIONS in all are kept (a full
    provider closes the oldest session of the program holding the most),
    memory stays bounded, and another client is answered within a second
    throughout. (With every call of 500 connections sent at once, the bus
    daemon, which delivers a client's call after all those before it, is
    what the other client waits for: see docs/ARCHITECTURE.md.)"""
    processes = int(os.environ.get("TEST_FLOOD_PROCESSES", "18"))
    connections = int(os.environ.get("TEST_FLOOD_CONNECTIONS", "18"))
    per_connection = int(os.environ.get("TEST_FLOOD_SESSIONS", "260"))
    window = int(os.environ.get("TEST_FLOOD_WINDOW", "4"))
    provider = Provider(bus)
    outcome = {}
    clients = Flood(bus, "session", processes, connections, per_connection, window)

    def flood():
        started = time.monotonic()
        clients.start()
        outcome["results"] = clients.answered()
        outcome["seconds"] = time.monotonic() - started
        outcome["rss"] = resident(provider.process.pid)
        outcome["cpu"] = cpu_seconds(provider.process.pid)
        outcome["bus"] = cpu_seconds(bus.process.pid)
        outcome["live"] = clients.kept()
        clients.end()

    slowest, answered = with_probe(bus, flood)
    results, live = outcome["results"], outcome["live"]
    check(all("opened" in r for r in results), "a flooding client failed: %r" % (results,))
    opened = sum(r["opened"] for r in results)
    refused = sum(r["refused"] for r in results)
    check(opened + refused == connections * per_connection, "calls unanswered: %d of %d" % (opened + refused, connections * per_connection))
    check(set(name for r in results for name in r["errors"]) <= {LIMITS_EXCEEDED}, "refusals: %r" % (results,))
    check(max(live) <= SESSIONS_PER_CLIENT and sum(live) <= SESSIONS, "sessions kept: %d in all, %d at most per program" % (sum(live), max(live)))
    rss, peak = outcome["rss"]
    print("%d programs, %d connections x %d sessions requested (%d in flight each) in %.1f s: %d opened, %d refused, %d kept; "
          "provider CPU %.1f s (the bus daemon's %.1f s), RSS %.1f MiB (peak %.1f); the other client answered %d times, slowest %.0f ms"
          % (processes, connections, per_connection, window, outcome["seconds"], opened, refused, sum(live), outcome["cpu"], outcome["bus"],
             rss, peak, answered, slowest * 1000), flush=True)
    check(peak < 64, "the provider's memory grew to %.1f MiB" % peak)
    check(slowest < 1, "the other client waited %.2f s" % slowest)
    # A new client still gets a session and its secret.
    check(run(["secret-tool", "lookup", "probe", "1"], bus).stdout == b"probe", "secret-tool after the flood")
    provider.stop()


def prompt_flood(bus):
    """Prompts never answered: at most PROMPTS_PER_CLIENT per program, the
    rest refused at once; past PROMPTS in all, the oldest of the program
    holding the most is dismissed; memory stays bounded and a new client
    still gets its prompt."""
    provider = Provider(bus, environment={"LOCKET_ASKPASS": "", "SSH_ASKPASS": ""})
    locket("lock")
    hog = connect(bus)
    requests = int(os.environ.get("TEST_FLOOD_PROMPTS", "1000"))
    replies = pipelined(hog, [new_method_call(SERVICE, "Unlock", "ao", ([LOGIN],))] * requests)
    made = [r.body[1] for r in replies if error_name(r) is None]
    refused = [error_name(r) for r in replies if error_name(r) is not None]
    check(len(made) == PROMPTS_PER_CLIENT and set(refused) == {LIMITS_EXCEEDED}, "one client's prompts: %d made, %r" % (len(made), set(refused)))
    # More programs, each at its own bound: past PROMPTS in all, the oldest prompts of the biggest holders give way.
    programs = PROMPTS // PROMPTS_PER_CLIENT + 2
    clients = Flood(bus, "prompt", programs, programs, PROMPTS_PER_CLIENT, PROMPTS_PER_CLIENT)
    clients.start()
    results = clients.answered()
    check(all(r.get("opened") == PROMPTS_PER_CLIENT for r in results), "the other programs' prompts: %r" % (results,))
    xml = call(hog, DBusAddress("/org/freedesktop/secrets/prompt", bus_name="org.freedesktop.secrets",
                                interface="org.freedesktop.DBus.Introspectable"), "Introspect")[0]
    alive = xml.count("<node name=") + sum(clients.kept())
    check(alive <= PROMPTS, "%d prompts kept" % alive)
    newcomer = connect(bus)
    unlocked, prompt = call(newcomer, SERVICE, "Unlock", "ao", ([LOGIN],))
    check(prompt.startswith("/org/freedesktop/secrets/prompt/"), "a new client got no prompt: %r" % prompt)
    rss, peak = resident(provider.process.pid)
    print("%d prompts requested by one program: %d made; %d programs more: %d prompts kept in all; provider RSS %.1f MiB (peak %.1f)"
          % (requests, len(made), programs, alive, rss, peak), flush=True)
    check(peak < 64, "the provider's memory grew to %.1f MiB" % peak)
    clients.end()
    hog.close()
    newcomer.close()
    provider.stop()


def refused_calls_leak_nothing(bus):
    """A call answered with an error keeps nothing: the reply begun for it
    was leaked (~0.5 KiB a call), so a client refused over and over grew
    the provider without bound."""
    provider = Provider(bus)
    connection = connect(bus)

    def refuse(count):
        for _ in range(count // 100):
            replies = pipelined(connection, [new_method_call(SERVICE, "NoSuchMethod")] * 100)
            check(all(error_name(r) == "org.freedesktop.DBus.Error.UnknownMethod" for r in replies), "a refusal: %r" % (replies[0].body,))

    refuse(2000)  # the allocator's first growth
    before = resident(provider.process.pid)[0]
    refuse(12000)
    after = resident(provider.process.pid)[0]
    print("12,000 refused calls: provider RSS %.1f -> %.1f MiB" % (before, after), flush=True)
    check(after - before < 2.5, "12,000 refused calls grew the provider by %.1f MiB" % (after - before))
    connection.close()
    provider.stop()


def objects_bounded(bus):
    """Aliases are bounded in number and length; an Unlock or Lock names at most 10,000 objects."""
    provider = Provider(bus)
    connection = connect(bus)
    refused = None
    for n in range(ALIASES + 5):
        try:
            call(connection, SERVICE, "SetAlias", "so", ("a%d" % n, LOGIN))
        except DBusError as error:
            refused = (n, error.name)
            break
    check(refused is not None and refused[1] == LIMITS_EXCEEDED and refused[0] <= ALIASES, "aliases: %r" % (refused,))
    for name in ("x" * 256, "with-dash"):
        try:
            call(connection, SERVICE, "SetAlias", "so", (name, LOGIN))
            fail("the alias %r was taken" % name[:20])
        except DBusError as error:
            check(error.name in ("org.freedesktop.DBus.Error.InvalidArgs", LIMITS_EXCEEDED), error.name)
    for method in ("Unlock", "Lock"):
        try:
            call(connection, SERVICE, method, "ao", ([LOGIN] * 10001,))
            fail("%s of 10,001 objects answered" % method)
        except DBusError as error:
            check(error.name == LIMITS_EXCEEDED, "%s: %s" % (method, error.name))
    connection.close()
    provider.stop()


def private_bus_dies_with_provider(bus):
    """`locket secret-service -- COMMAND`: the private dbus-daemon goes when
    its provider dies, even killed at once (as an abort kills it)."""
    address_file = os.path.join(SCRATCH, "address")
    script = 'printf "%s" "$DBUS_SESSION_BUS_ADDRESS" > "$TEST_DIR/address.new" && mv "$TEST_DIR/address.new" "$TEST_DIR/address"; exec sleep 120'
    provider = subprocess.Popen([LOCKET, "secret-service", "--", "sh", "-c", script], start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: os.path.exists(address_file), 20, "COMMAND did not start")

    def children(pid):
        out = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/stat" % entry) as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) == pid:
                        with open("/proc/%s/comm" % entry) as f:
                            out.append((int(entry), f.read().strip()))
                except (OSError, IndexError):
                    pass
        return out

    kids = children(provider.pid)
    daemons = [pid for pid, name in kids if name == "dbus-daemon"]
    check(len(daemons) == 1, "the provider's children: %r" % kids)
    provider.send_signal(signal.SIGKILL)
    provider.wait(10)

    def gone(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    try:
        wait_for(lambda: gone(daemons[0]), 10, "the private dbus-daemon outlived its provider")
    finally:
        for pid, _ in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def oversized_values_refused(bus):
    """What the command line refuses, the bus refuses (errSecDataTooLarge as
    InvalidArgs), on every path in: a label, an attribute, a type, a
    collection's label (a secret's 16 MiB: DataLimitTests); nothing is stored."""
    provider = Provider(bus)
    connection = connect(bus)
    session = plain_session(connection)
    item = create(connection, session, {"app": "sizes"}, b"v", label="small")
    big = "x" * 70000
    huge = "y" * (1 << 20)
    attempts = [
        ("CreateItem label", lambda: create(connection, session, {"app": "big-label"}, b"v", label=big)),
        ("CreateItem 1 MiB label", lambda: create(connection, session, {"app": "big-label"}, b"v", label=huge)),
        ("CreateItem attribute", lambda: create(connection, session, {"app": big}, b"v")),
        ("Set Label", lambda: call(connection, obj(item, PROPERTIES), "Set", "ssv", (ITEM, "Label", ("s", big)))),
        ("Set Type", lambda: call(connection, obj(item, PROPERTIES), "Set", "ssv", (ITEM, "Type", ("s", big)))),
        ("Set Attributes", lambda: call(connection, obj(item, PROPERTIES), "Set", "ssv", (ITEM, "Attributes", ("a{ss}", {"k": big})))),
        ("Set collection Label", lambda: call(connection, obj(LOGIN, PROPERTIES), "Set", "ssv", ("org.freedesktop.Secret.Collection", "Label", ("s", huge)))),
    ]
    for what, attempt in attempts:
        try:
            attempt()
            fail(what + " of an oversized value answered")
        except DBusError as error:
            check(error.name == "org.freedesktop.DBus.Error.InvalidArgs", "%s: %s" % (what, error.name))
    items = json.loads(locket("dump", "--json").stdout)
    check(len(items) == 1 and items[0]["label"] == "small", "something oversized was stored: %r" % [len(i.get("label", "")) for i in items])
    check(get_property(connection, LOGIN, "org.freedesktop.Secret.Collection", "Label") == "login", "the collection's label")
    size = sum(os.path.getsize(os.path.join(os.environ["XDG_DATA_HOME"], "locket", name))
               for name in os.listdir(os.path.join(os.environ["XDG_DATA_HOME"], "locket")))
    check(size < 4 * 1024 * 1024, "the keychain grew to %d bytes" % size)
    connection.close()
    provider.stop()


def pipelined_calls(bus):
    """10,000 calls sent before any reply is read: every one answered, none
    left in libdbus's queue while the provider sleeps."""
    provider = Provider(bus)
    connection = connect(bus)
    session = plain_session(connection)
    # Replies of a few KiB: writing them, libdbus reads the calls that follow into its queue.
    secret = secrets.token_bytes(4096)
    item = create(connection, session, {"pipelined": "1"}, secret)
    count = 10000
    get_secret = new_method_call(obj(item, ITEM), "GetSecret", "o", (session,))
    get_label = new_method_call(obj(LOGIN, PROPERTIES), "Get", "ss", ("org.freedesktop.Secret.Collection", "Label"))
    messages = [get_secret if n % 2 else get_label for n in range(count)]
    started = time.monotonic()
    replies = pipelined(connection, messages, timeout=30)
    elapsed = time.monotonic() - started
    failed = [(error_name(r), r.body) for r in replies if error_name(r)]
    check(not failed, "%d pipelined calls failed: %r" % (len(failed), failed[:1]))
    check(all((r.body[0][2] == secret) if n % 2 else (r.body == (("s", "login"),)) for n, r in enumerate(replies)),
          "a pipelined call got another's answer")
    print("%d pipelined calls answered in %.2f s (provider CPU %.2f s in all)" % (count, elapsed, cpu_seconds(provider.process.pid)), flush=True)
    connection.close()
    provider.stop()


def one_client_does_not_stall_another(bus):
    """While client A receives a 1 MB secret, client B's call sent just after
    is answered at once, not when some later message wakes the provider."""
    provider = Provider(bus)
    a, b = connect(bus), connect(bus)
    session = plain_session(a)
    item = create(a, session, {"size": "1MB"}, secrets.token_bytes(1 << 20))
    slowest = 0
    for round in range(20):
        serial = next(a.outgoing_serial)
        a.send(new_method_call(obj(item, ITEM), "GetSecret", "o", (session,)), serial=serial)
        time.sleep(0.002)
        started = time.monotonic()
        try:
            label = call(b, obj(LOGIN, PROPERTIES), "Get", "ss", ("org.freedesktop.Secret.Collection", "Label"), timeout=5)
        except TimeoutError:
            fail("round %d: B got no answer while A received its secret" % round)
        slowest = max(slowest, time.monotonic() - started)
        check(label == (("s", "login"),), "B's answer")
        while True:
            message = a.receive(timeout=30)
            if message.header.fields.get(5) == serial:
                check(len(message.body[0][2]) == 1 << 20, "A's secret")
                break
    print("B's slowest answer while A received 1 MB: %.1f ms" % (slowest * 1000), flush=True)
    check(slowest < 1, "B waited %.2f s" % slowest)
    a.close()
    b.close()
    provider.stop()


def new_clients_past_the_read_ahead(bus):
    """New clients whose first calls, sent before the provider knows who
    they are, hold more than libdbus reads ahead (8 MiB): every call is
    answered, and the provider does not spin meanwhile. Their calls wait for
    the bus daemon's word on each client; when that word came on the same
    connection, behind 8 MiB of calls held for it, it was never read."""
    provider = Provider(bus)
    clients = [connect(bus) for _ in range(12)]
    padding = "p" * (1 << 20)
    before = cpu_seconds(provider.process.pid)
    started = time.monotonic()
    outcomes = [None] * len(clients)

    def send_all(k):
        # A method the provider lacks, carrying 1 MiB: cheap to refuse, once its client is known.
        messages = [new_method_call(SERVICE, "NoSuchMethod", "s", (padding,)) for _ in range(2)]
        messages.append(new_method_call(obj(LOGIN, PROPERTIES), "Get", "ss", ("org.freedesktop.Secret.Collection", "Label")))
        outcomes[k] = pipelined(clients[k], messages, timeout=30)

    threads = [threading.Thread(target=send_all, args=(k,)) for k in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    elapsed = time.monotonic() - started
    spent = cpu_seconds(provider.process.pid) - before
    check(all(outcome is not None for outcome in outcomes), "a client's calls were not all answered")
    for replies in outcomes:
        check([error_name(r) for r in replies[:2]] == ["org.freedesktop.DBus.Error.UnknownMethod"] * 2, "a padded call: %r" % (replies[0].body,))
        check(replies[2].body == (("s", "login"),), "a client's Label: %r" % (replies[2].body,))
    print("%d new clients, 24 MiB of calls before they were known: answered in %.2f s, provider CPU %.2f s"
          % (len(clients), elapsed, spent), flush=True)
    check(spent < max(3.0, elapsed / 2), "the provider spun: %.1f s of CPU in %.1f s" % (spent, elapsed))
    for client in clients:
        client.close()
    provider.stop()


def search_at_the_attribute_limit(bus):
    """A search naming the documented maximum of 1,000 attributes finds its
    item; 1,001 is refused as a limit of the query, never as a damaged keychain."""
    provider = Provider(bus)
    connection = connect(bus)
    session = plain_session(connection)
    attributes = {"attribute-%04d" % i: "value-%04d" % i for i in range(998)}
    attributes.update({"service": "many", "username": "me"})
    item = create(connection, session, attributes, b"many")
    for path, interface in (("/org/freedesktop/secrets", "org.freedesktop.Secret.Service"), (LOGIN, "org.freedesktop.Secret.Collection")):
        found = call(connection, obj(path, interface), "SearchItems", "a{ss}", (attributes,))
        check(found[0] == [item], "%s of 1,000 attributes: %r" % (interface, found))
    try:
        call(connection, SERVICE, "SearchItems", "a{ss}", (dict(attributes, extra="x"),))
        fail("a search of 1,001 attributes answered")
    except DBusError as error:
        check(error.name == "org.freedesktop.DBus.Error.InvalidArgs" and "1000" in str(error.args[1]), "1,001: %s %r" % (error.name, error.args))
    connection.close()
    provider.stop()


if __name__ == "__main__":
    main({name: function for name, function in globals().items() if callable(function)
          and getattr(function, "__module__", "") == "__main__" and not name[0].isupper() and name not in
          ("resident", "cpu_seconds", "plain_session", "create", "pipelined", "error_name", "with_probe")})
