"""What the session keyring's cases share (SPEC §20): a real user made for
the test and removed after it, a PAM service directory of the test's own
that loads pam_locket.so from the build tree (libpam-wrapper: no file in
/etc/pam.d is read or written), pamtester runs with the module's log lines,
a session bus run as that user, and a sampler that watches every process's
argv and environment for the password.

Environment (SecretServiceSessionTests): LOCKET_BIN, LOCKET_PAM_MODULE,
TEST_DIR, TEST_KEYCHAINS (SecretServiceSessionPAMTests) and the sandbox's
variables.
"""
import glob
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "secret-service"))
from harness import LOCKET, SCRATCH, check, fail, wait_for  # noqa: E402

MODULE = os.environ.get("LOCKET_PAM_MODULE", "")
# The keychains the test made for its case, in-process at the tests' Argon2id
# cost: NAME/password, NAME/login.keychain and NAME/device.key, NAME `login`
# (the user's login password) and `other` (another password).
KEYCHAINS = os.environ.get("TEST_KEYCHAINS", "")


def made_password(name, default):
    """The password of the keychain the test made as NAME, or `default` when it made none (the case run by hand)."""
    if not KEYCHAINS:
        return default
    with open(os.path.join(KEYCHAINS, name, "password")) as f:
        return f.read()


def other_password():
    """A keychain password that is not the login password."""
    return made_password("other", "another-password")


def tool(name):
    """A program's path, the administrator's directories included (the tests' PATH has none)."""
    return shutil.which(name, path="/usr/sbin:/sbin:" + os.environ.get("PATH", "/usr/bin:/bin"))


def skip(reason):
    print("SKIP: " + reason, flush=True)
    sys.exit(0)


def require_pam():
    if os.geteuid() != 0:
        skip("the PAM cases make a real user: they run as root (CI does)")
    for name in ["pamtester", "useradd", "userdel", "chpasswd", "dbus-daemon", "dbus-send"]:
        if tool(name) is None:
            skip(name + " is not installed (make test-deps)")
    if not glob.glob("/usr/lib/*/libpam_wrapper.so"):
        skip("libpam-wrapper is not installed (make test-deps)")
    if not os.path.exists(MODULE):
        skip(MODULE + " is not built (make pam)")


def activating_bus_config(where, listen):
    """A session bus configuration as a login's: the standard service
    directories (the user's $XDG_DATA_HOME/dbus-1/services first, then
    $XDG_DATA_DIRS'), listening in `listen`; written in `where`, its path returned."""
    config = os.path.join(where, "bus.conf")
    with open(config, "w") as f:
        f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:dir={listen}</listen><auth>EXTERNAL</auth>
<standard_session_servicedirs/>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
""")
    return config


class User:
    """A real account: uid, home in a directory of the test's own (not /home),
    a login password. `remove()` locks its keychains (the kernel keeps a
    user's keyring after the account is gone) and deletes it."""

    def __init__(self, password=None, home=True):
        # Each test's own, so that the sampler of one never sees another's.
        password = password or made_password("login", "Login-pw-" + secrets.token_hex(6))
        self.root = tempfile.mkdtemp(prefix="locket-pam.")
        os.chmod(self.root, 0o755)
        self.name = "lkt" + secrets.token_hex(5)
        self.home = os.path.join(self.root, "home")
        self.password = password
        result = subprocess.run([tool("useradd"), "-M", "-N", "-d", self.home, "-s", "/bin/sh", self.name], capture_output=True, text=True)
        if result.returncode != 0:
            shutil.rmtree(self.root, ignore_errors=True)
            fail("useradd: " + result.stderr)
        entry = pwd.getpwnam(self.name)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        if home:
            os.mkdir(self.home, 0o700)
            os.chown(self.home, self.uid, self.gid)
        self.set_password(password)
        self.services = os.path.join(self.root, "pam.d")
        os.mkdir(self.services)
        with open(os.path.join(self.services, "other"), "w") as f:
            f.write("auth required pam_deny.so\naccount required pam_deny.so\npassword required pam_deny.so\nsession required pam_deny.so\n")
        self.processes = []

    def set_password(self, password):
        # yescrypt as Debian's PAM hashes it, at its lowest cost: the login
        # password is checked by pam_unix at every login of the cases, and the
        # default cost is ~27 ms of CPU a check, 1.5 at the lowest (issue 38).
        result = subprocess.run([tool("chpasswd"), "-c", "YESCRYPT", "-s", "1"], input=f"{self.name}:{password}\n",
                                capture_output=True, text=True)
        check(result.returncode == 0, "chpasswd: " + result.stderr)
        self.password = password

    @property
    def environment(self):
        """What a login gives the user's processes (and the module gives locket)."""
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name, "PATH": "/usr/local/bin:/usr/bin:/bin"}

    def run(self, arguments, input=None, environment=None, timeout=60):
        env = dict(self.environment, **(environment or {}))
        return subprocess.run(arguments, input=input, capture_output=True, env=env, user=self.uid, group=self.gid,
                              extra_groups=[], cwd="/", timeout=timeout)

    def locket(self, *arguments, input=None, environment=None):
        return self.run([LOCKET, *arguments], input=input, environment=environment)

    def start(self, arguments, environment=None):
        env = dict(self.environment, **(environment or {}))
        process = subprocess.Popen(arguments, env=env, user=self.uid, group=self.gid, extra_groups=[], cwd="/",
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.processes.append(process)
        return process

    def init_keychain(self, password=None, interactive=False):
        """The login keychain with `password` (default: the login password),
        locked: what a login finds. The one the test made with that password,
        put in the home as the user's own; else made by the user with `locket
        init`. The test's are made at the tests' Argon2id cost, so that the
        user's every unlock hashes at it too: `locket init` here would cost
        INTERACTIVE (64 MiB), and so would each unlock after it (15 of the
        class's 21 hashes at that cost, ~2 CPU-s; issue 38).
        `interactive`: made by `locket init` at INTERACTIVE even so, for a
        case whose Sampler must see the unlocking child: at the tests' cost
        it lived a few milliseconds, less than one scan of /proc, and a fast
        machine's login ended before the sampler saw it."""
        password = password or self.password
        for name in ("login", "other"):
            if not interactive and made_password(name, None) == password:
                self.install_keychain(os.path.join(KEYCHAINS, name))
                return
        result = self.locket("init", "--password-stdin", "--kdf", "interactive", input=(password + "\n").encode())
        check(result.returncode == 0, "locket init: " + result.stderr.decode())
        self.locket("lock")

    def install_keychain(self, made):
        """The keychain and device secret in directory `made` copied to where
        `locket init` would put them for this user, with the owner and modes
        it would give them (no session: locked)."""
        for source, place in (("login.keychain", [".local", "share", "locket"]), ("device.key", [".local", "state", "locket"])):
            directory = self.home
            for name in place:
                directory = os.path.join(directory, name)
                if not os.path.isdir(directory):
                    os.mkdir(directory, 0o700)
                    os.chown(directory, self.uid, self.gid)
            target = os.path.join(directory, source)
            shutil.copyfile(os.path.join(made, source), target)
            os.chmod(target, 0o600)
            os.chown(target, self.uid, self.gid)

    def whenUnlocked(self):
        import json
        result = self.locket("--json", "status")
        check(result.returncode == 0, "locket status: " + result.stderr.decode())
        return json.loads(result.stdout)["whenUnlocked"] == "unlocked"

    def service(self, name, lines):
        """A PAM service file in the test's own directory; `MODULE` in a line is the module under test."""
        with open(os.path.join(self.services, name), "w") as f:
            f.write("\n".join(line.replace("MODULE", MODULE) for line in lines) + "\n")

    def pam(self, service, operations, answers, environment=None, timeout=60):
        """pamtester SERVICE USER OPERATIONS with `answers` on its stdin, through
        libpam-wrapper; (exit status, the module's log lines, all output)."""
        env = dict(os.environ, LD_PRELOAD=glob.glob("/usr/lib/*/libpam_wrapper.so")[0], PAM_WRAPPER="1",
                   PAM_WRAPPER_SERVICE_DIR=self.services, PAM_WRAPPER_DEBUGLEVEL="2", **(environment or {}))
        result = subprocess.run(["pamtester", "-v", service, self.name, *operations], input="".join(a + "\n" for a in answers).encode(),
                                capture_output=True, env=env, timeout=timeout)
        output = (result.stdout + result.stderr).decode(errors="replace")
        logs = [line.split("): ", 1)[1] for line in output.splitlines() if "SYSLOG(" in line and "): " in line]
        return result.returncode, logs, output

    def bus(self):
        """A session bus of this user's (so the user's clients and provider may use it), its service directories
        the standard ones for the user's XDG variables; returns its address."""
        directory = os.path.join(self.home, "bus")
        os.makedirs(directory, exist_ok=True)
        os.chown(directory, self.uid, self.gid)
        config = activating_bus_config(self.root, directory)
        os.chmod(config, 0o644)
        daemon = self.start(["dbus-daemon", "--config-file=" + config, "--nofork", "--nopidfile", "--print-address=1"],
                            environment={"XDG_DATA_DIRS": os.path.join(self.root, "share")})
        address = daemon.stdout.readline().decode().strip()
        check(address.startswith("unix:"), "dbus-daemon printed no address")
        return address

    def locked_over_bus(self, address, collection="login"):
        result = self.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.secrets",
                           "/org/freedesktop/secrets/collection/" + collection, "org.freedesktop.DBus.Properties.Get",
                           "string:org.freedesktop.Secret.Collection", "string:Locked"],
                          environment={"DBUS_SESSION_BUS_ADDRESS": address})
        check(result.returncode == 0, "dbus-send Locked: " + result.stderr.decode())
        text = result.stdout.decode()
        check("boolean" in text, "no boolean in " + text)
        return "boolean true" in text

    def remove(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    process.kill()
        # Keys left in the user's kernel keyring would outlive the account.
        try:
            self.locket("lock", "--all")
        except Exception:
            pass
        subprocess.run([tool("userdel"), self.name], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


class Sampler:
    """Reads every process's argv and environment over and over while a
    login runs: the password must be in none of them. Records the locket
    processes it saw, so a test knows the sampling covered the child."""

    def __init__(self, secret):
        self.secret = secret.encode()
        self.leaks = []
        self.seen = []
        self.running = True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        own = str(os.getpid())
        while self.running:
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or entry == own:
                    continue
                for part in ["cmdline", "environ"]:
                    try:
                        with open(f"/proc/{entry}/{part}", "rb") as f:
                            data = f.read()
                    except OSError:
                        continue
                    if self.secret in data:
                        self.leaks.append((entry, part, data[:200]))
                    if part == "cmdline" and data.startswith(b"locket\0pam\0"):
                        self.seen.append(data.replace(b"\0", b" ").decode(errors="replace"))

    def stop(self):
        self.running = False
        self.thread.join(10)
        return self.leaks


def main(cases):
    name = sys.argv[1]
    cases[name]()
    print("OK " + name, flush=True)
