"""pam_locket.so loaded by a real PAM stack (pamtester, libpam-wrapper) for
a real user (SPEC §20): unlocked at login, a wrong keychain password left
locked without failing the login, the password following chauthtok, locked
at close, a hanging locket killed within the bound, the password nowhere
in argv, environments or logs, and bad input. Run by
SecretServiceSessionPAMTests: `python3 pam_cases.py CASE`."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from users import LOCKET, Sampler, User, check, main, other_password, require_pam, skip, wait_for  # noqa: E402

AUTH = ["auth required pam_unix.so", "auth optional MODULE locket=" + LOCKET]
ACCOUNT = ["account required pam_permit.so"]
SESSION = ["session required pam_permit.so", "session optional MODULE locket=" + LOCKET]
PASSWORD = ["password required pam_unix.so", "password optional MODULE locket=" + LOCKET]


def with_user(body, **options):
    require_pam()
    user = User(**options)
    try:
        body(user)
    finally:
        user.remove()


def has_owner(user, address):
    result = user.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                       "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"],
                      environment={"DBUS_SESSION_BUS_ADDRESS": address})
    return b"boolean true" in result.stdout


def login_unlocks():
    """authenticate + open_session: the login keychain unlocked, a provider
    already running says Locked=false at once, and the password was in no
    process's argv or environment and in no log line."""
    def body(user):
        user.init_keychain(interactive=True)  # the unlock hashes long enough for the Sampler to see it
        user.service("login", AUTH + ACCOUNT + SESSION)
        address = user.bus()
        user.start([LOCKET, "secret-service"], environment={"DBUS_SESSION_BUS_ADDRESS": address})
        wait_for(lambda: has_owner(user, address), 20, "the provider did not take the name")
        check(user.locked_over_bus(address), "the keychain should be locked before the login")
        sampler = Sampler(user.password)
        status, logs, output = user.pam("login", ["authenticate", "open_session"], [user.password])
        leaks = sampler.stop()
        check(status == 0, "the login failed: " + output)
        check(not leaks, "the password was seen in %r" % leaks)
        check(sampler.seen, "the sampler never saw locket's child: it proved nothing")
        check(all("--timeout none" in seen for seen in sampler.seen), "argv: %r" % sampler.seen)
        check(user.password not in output, "the password is in the module's output")
        check(any(line.startswith("unlocked ") for line in logs), "no 'unlocked' line: %r" % logs)
        check(user.whenUnlocked(), "locket status says locked after the login")
        check(not user.locked_over_bus(address), "the running provider still says Locked=true")
        status = json.loads(user.locket("--json", "status").stdout)
        check(status["secondsUntilAutoLock"] is None, "the login's unlock should last until locked: %r" % status)
    with_user(body)


def wrong_keychain_password():
    """A keychain whose password is not the login password: left locked and
    logged, the login succeeds; the next login does not try it again (one
    wrong password counted, not one per login)."""
    def body(user):
        another = other_password()
        user.init_keychain(password=another)
        user.service("login", AUTH + ACCOUNT + SESSION)
        for attempt in range(2):
            status, logs, output = user.pam("login", ["authenticate", "open_session"], [user.password])
            check(status == 0, "the login failed: " + output)
            check(not user.whenUnlocked(), "unlocked with the wrong password")
            expected = "does not open" if attempt == 0 else "not tried"
            check(any(expected in line for line in logs), "login %d: no '%s' line: %r" % (attempt + 1, expected, logs))
        status = json.loads(user.locket("--json", "status").stdout)
        check(status["failedAttempts"] == 1, "two logins counted %r wrong passwords" % status["failedAttempts"])
        # Once the keychain's password is the login password, the next login unlocks it.
        changed = user.locket("passwd", input=(another + "\n" + user.password + "\n").encode())
        check(changed.returncode == 0, "passwd: " + changed.stderr.decode())
        user.locket("lock")
        status, logs, output = user.pam("login", ["authenticate", "open_session"], [user.password])
        check(user.whenUnlocked(), "after passwd the login did not unlock: %r" % logs)
    with_user(body)


def chauthtok_rotates():
    """The login password changed (chauthtok as a login with an expired
    password does it, asking the old one): the keychain's follows in one
    transaction; the old password fails, the new one unlocks."""
    def body(user):
        user.init_keychain()
        user.service("passwd", ["auth required pam_unix.so"] + ACCOUNT + PASSWORD)
        status, logs, output = user.pam("passwd", ["chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)"], [user.password, "New-login-2", "New-login-2"])
        check(status == 0, "chauthtok failed: " + output)
        check(any("now has the new login password" in line for line in logs), "no line: %r" % logs)
        check("New-login-2" not in output and user.password not in output, "a password is in the output")
        old = user.locket("unlock", "--password-stdin", input=(user.password + "\n").encode())
        check(old.returncode == 51, "the old password still unlocks: %d" % old.returncode)
        new = user.locket("unlock", "--password-stdin", input=b"New-login-2\n")
        check(new.returncode == 0, "the new password does not unlock: " + new.stderr.decode())
        # Root setting a password gives no old one: nothing changes, and the log says why.
        status, logs, output = user.pam("passwd", ["chauthtok"], ["Root-set-3", "Root-set-3"])
        check(status == 0, "root's chauthtok failed: " + output)
        check(any("no old password" in line for line in logs), "no 'no old password' line: %r" % logs)
        user.locket("lock")
        check(user.locket("unlock", "--password-stdin", input=b"New-login-2\n").returncode == 0, "root's change touched the keychain")
    with_user(body)


def close_session_locks():
    """lock_on_close: the keychain locks when the session closes; not while
    logind lists another live session of the user's."""
    def body(user):
        user.init_keychain()
        user.service("login", AUTH + ACCOUNT + ["session required pam_permit.so", "session optional MODULE lock_on_close locket=" + LOCKET])
        status, logs, output = user.pam("login", ["authenticate", "open_session", "close_session"], [user.password])
        check(status == 0, "the login failed: " + output)
        check(any(line.startswith("unlocked ") for line in logs) and any(line.startswith("locked ") for line in logs), "logs: %r" % logs)
        check(not user.whenUnlocked(), "still unlocked after close_session")
        # Another session of the user's is open (logind's state files, in a directory of the test's own).
        logind = os.path.join(user.root, "logind")
        os.makedirs(logind + "/users")
        os.makedirs(logind + "/sessions")
        with open(f"{logind}/users/{user.uid}", "w") as f:
            f.write("STATE=active\nSESSIONS=7 9\n")
        with open(f"{logind}/sessions/7", "w") as f:
            f.write("STATE=closing\n")
        with open(f"{logind}/sessions/9", "w") as f:
            f.write("STATE=active\n")
        user.service("login", AUTH + ACCOUNT + ["session required pam_permit.so",
                                                  f"session optional MODULE lock_on_close test_logind_dir={logind} locket=" + LOCKET])
        status, logs, output = user.pam("login", ["authenticate", "open_session", "close_session"], [user.password],
                                        environment={"XDG_SESSION_ID": "7"})
        check(any("another session open" in line for line in logs), "logs: %r" % logs)
        check(user.whenUnlocked(), "locked although another session is open")
    with_user(body)


def hanging_locket_is_killed():
    """A locket that hangs (a home on a dead mount, say) is killed at
    max_wait, with what it started, and the login goes on."""
    def body(user):
        hang = os.path.join(user.root, "hang")
        marker = os.path.join(user.home, "grandchild")
        with open(hang, "w") as f:
            f.write(f"#!/bin/sh\nsleep 300 &\necho $! > {marker}\nexec sleep 300\n")
        os.chmod(hang, 0o755)
        user.service("login", AUTH + ACCOUNT + ["session required pam_permit.so", f"session optional MODULE max_wait=1 locket={hang}"])
        started = time.monotonic()
        status, logs, output = user.pam("login", ["authenticate", "open_session"], [user.password])
        elapsed = time.monotonic() - started
        check(status == 0, "the login failed: " + output)
        check(elapsed < 4, "the login waited %.1f s" % elapsed)
        check(any("did not finish within 1 s: killed" in line for line in logs), "logs: %r" % logs)
        with open(marker) as f:
            grandchild = int(f.read())
        wait_for(lambda: not os.path.exists(f"/proc/{grandchild}") or open(f"/proc/{grandchild}/stat").read().split()[2] == "Z", 5,
                 "what the hanging locket started is still running")
    with_user(body)


def bad_input():
    """Each a clear log line, the login going on, nothing changed: no password
    in the conversation, a user with no keychain, a keychain without a
    password, a missing or non-executable locket, a home that is not there."""
    def body(user):
        # No password: an auth stack that asks for none (a key, a token).
        user.service("nopass", ["auth required pam_permit.so", "auth optional MODULE locket=" + LOCKET] + ACCOUNT + SESSION)
        status, logs, output = user.pam("nopass", ["authenticate", "open_session"], [])
        check(status == 0, output)
        check(any("no password at authentication" in line for line in logs), "no-password logs: %r" % logs)
        check(any("no password was kept" in line for line in logs), "no-password logs: %r" % logs)
        # No keychain (and locket not this user's provider): nothing made.
        user.service("login", AUTH + ACCOUNT + SESSION)
        status, logs, output = user.pam("login", ["authenticate", "open_session"], [user.password])
        check(status == 0, output)
        check(any("no keychain at" in line and "nothing to unlock" in line for line in logs), "no-keychain logs: %r" % logs)
        check(not os.path.exists(os.path.join(user.home, ".local/share/locket/login.keychain")), "a keychain was made")
        # A keychain without a password.
        check(user.locket("init", "--no-password").returncode == 0, "init --no-password")
        status, logs, output = user.pam("login", ["authenticate", "open_session"], [user.password])
        check(status == 0 and any("has no password" in line for line in logs), "no-password keychain logs: %r" % logs)
        # A locket that is not there, and one that is not executable.
        plain = os.path.join(user.root, "plain")
        with open(plain, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(plain, 0o644)
        for path, words in [(os.path.join(user.root, "missing"), "cannot run"), (plain, "not an executable file")]:
            user.service("gone", AUTH + ACCOUNT + ["session required pam_permit.so", "session optional MODULE locket=" + path])
            status, logs, output = user.pam("gone", ["authenticate", "open_session"], [user.password])
            check(status == 0, output)
            check(any(words in line for line in logs), "%s: %r" % (path, logs))
        # A locket others could replace is refused too.
        writable = os.path.join(user.root, "writable")
        with open(writable, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(writable, 0o777)
        user.service("gone", AUTH + ACCOUNT + ["session required pam_permit.so", "session optional MODULE locket=" + writable])
        status, logs, output = user.pam("gone", ["authenticate", "open_session"], [user.password])
        check(status == 0 and any("others can write it" in line for line in logs), "writable: %r" % logs)
    with_user(body)
    # A home directory that is not there.
    def missing_home(user):
        user.service("login", AUTH + ACCOUNT + SESSION)
        status, logs, output = user.pam("login", ["authenticate", "open_session"], [user.password])
        check(status == 0, output)
        check(any("no keychain at " + user.home in line for line in logs), "missing home: %r" % logs)
    with_user(missing_home, home=False)


def screen_unlock_setcred():
    """A screen unlocked opens no session: pam_setcred(PAM_REINITIALIZE_CRED)
    after authentication unlocks (pypamtest: pamtester can't call setcred)."""
    try:
        import pypamtest
    except ImportError:
        skip("python3-pypamtest is not installed (make test-deps)")

    def body(user):
        user.init_keychain()
        user.service("unlock", AUTH + ACCOUNT)
        # The password on stdin, never in the script's argv.
        script = f"""
import pypamtest, sys
tests = [pypamtest.TestCase(pypamtest.PAMTEST_AUTHENTICATE), pypamtest.TestCase(pypamtest.PAMTEST_SETCRED, flags={{flags}})]
pypamtest.run_pamtest(username={user.name!r}, service="unlock", tests=tests, echo_off=[sys.stdin.readline().rstrip("\\n")])
"""
        import glob
        env = dict(os.environ, LD_PRELOAD=glob.glob("/usr/lib/*/libpam_wrapper.so")[0], PAM_WRAPPER="1",
                   PAM_WRAPPER_SERVICE_DIR=user.services, PAM_WRAPPER_DEBUGLEVEL="2")
        # ESTABLISH_CRED (a login, whose session opens next) unlocks nothing.
        result = subprocess.run(["/usr/bin/python3", "-c", script.replace("{flags}", "pypamtest.PAMTEST_FLAG_ESTABLISH_CRED")],
                                input=(user.password + "\n").encode(), capture_output=True, env=env, timeout=60)
        check(result.returncode == 0, result.stderr.decode())
        check(not user.whenUnlocked(), "setcred(ESTABLISH_CRED) unlocked")
        result = subprocess.run(["/usr/bin/python3", "-c", script.replace("{flags}", "pypamtest.PAMTEST_FLAG_REINITIALIZE_CRED")],
                                input=(user.password + "\n").encode(), capture_output=True, env=env, timeout=60)
        check(result.returncode == 0, result.stderr.decode())
        check(user.whenUnlocked(), "setcred(REINITIALIZE_CRED) did not unlock: " + result.stderr.decode())
    with_user(body)


def fresh_user_enable_then_login():
    """The issue's 'done when': a fresh user runs `locket secret-service enable`
    once, logs in, and `python3 -m keyring` answers with no prompt: the login
    made the keychain with the login password, and the first client started
    locket through D-Bus activation."""
    def body(user):
        enabled = user.locket("secret-service", "enable")
        check(enabled.returncode == 0, "enable: " + enabled.stderr.decode())
        user.service("login", AUTH + ACCOUNT + SESSION)
        status, logs, output = user.pam("login", ["authenticate", "open_session"], [user.password])
        check(status == 0, output)
        check(any("made the login keychain" in line for line in logs), "logs: %r" % logs)
        address = user.bus()
        check(not has_owner(user, address), "something already owns org.freedesktop.secrets")
        # No askpass and no terminal: a prompt would be dismissed and keyring would fail.
        quiet = {"DBUS_SESSION_BUS_ADDRESS": address, "LOCKET_ASKPASS": "", "SSH_ASKPASS": ""}
        stored = user.run(["/usr/bin/python3", "-m", "keyring", "set", "pypi", "alice"], input=b"pypi-token\n", environment=quiet)
        check(stored.returncode == 0, "keyring set: " + stored.stderr.decode())
        got = user.run(["/usr/bin/python3", "-m", "keyring", "get", "pypi", "alice"], environment=quiet)
        check(got.returncode == 0 and got.stdout == b"pypi-token\n", "keyring get: %r %r" % (got.stdout, got.stderr))
        check(has_owner(user, address), "nothing owns the name")
        found = user.locket("find", "-s", "pypi", "-a", "alice", "-w", "-n")
        check(found.stdout == b"pypi-token", "locket find: %r" % found.stdout)
    with_user(body)


def readme_unit(name):
    """A unit file as README.md shows it (the ```ini block that starts with its path)."""
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "README.md")).read()
    marker = "```ini\n# " + name + "\n"
    check(marker in readme, "README.md shows no " + name)
    return readme.split(marker, 1)[1].split("```", 1)[0]


def unattended_boot_unlock():
    """README's "On a server": the keychain password sealed with systemd-creds
    (the host key: no TPM here), locket-unlock@UID.service's ExecStart run as
    the account with the credential where systemd puts it, and the provider
    the account's bus then starts finds the keychain unlocked."""
    creds = shutil.which("systemd-creds")
    if creds is None:
        skip("systemd-creds is not installed (Debian package systemd)")

    def body(user):
        unit = readme_unit("/etc/systemd/system/locket-unlock@.service")
        keys = dict(line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#"))
        check(keys["User"] == "%i" and keys["Before"] == "user@%i.service", "the unit must run as %i before its user manager: " + unit)
        name, sealed = keys["LoadCredentialEncrypted"].split(":", 1)
        command = keys["ExecStart"].replace("%i", str(user.uid)).split()
        check(command[0] == "/usr/local/bin/locket", "ExecStart: " + keys["ExecStart"])
        # systemd parses it as written (its own binary stands in for locket's path).
        instance = os.path.join(user.root, "units")
        os.mkdir(instance)
        with open(os.path.join(instance, "locket-unlock@.service"), "w") as f:
            f.write(unit.replace("/usr/local/bin/locket", LOCKET).replace("/etc/credstore.encrypted", os.path.join(user.root, "credstore")))
        verified = subprocess.run(["systemd-analyze", "verify", os.path.join(instance, "locket-unlock@%d.service" % user.uid)],
                                  capture_output=True, text=True)
        check(verified.returncode == 0 and "nknown" not in verified.stderr and "Failed" not in verified.stderr,
              "systemd-analyze verify: " + verified.stderr)
        # The account's keychain, locked; one item a program will look up.
        keychain_password = other_password()
        user.init_keychain(password=keychain_password)
        user.locket("unlock", "--password-stdin", input=(keychain_password + "\n").encode())
        added = user.locket("add", "-s", "ci", "-a", "runner", "-w", input=b"ci-token")
        check(added.returncode == 0, added.stderr.decode())
        user.locket("lock", "--all")
        # Sealed as the README says, with the host key in a file of the test's own.
        os.mkdir(os.path.join(user.root, "credstore"))
        sealed = sealed.replace("%i", str(user.uid)).replace("/etc/credstore.encrypted", os.path.join(user.root, "credstore"))
        host_key = {"SYSTEMD_CREDENTIAL_SECRET": os.path.join(user.root, "credential.secret"), "PATH": "/usr/bin:/bin"}
        encrypted = subprocess.run([creds, "encrypt", "--with-key=host", "--name=" + name, "-", sealed], input=(keychain_password + "\n").encode(),
                                   capture_output=True, env=host_key)
        check(encrypted.returncode == 0, "systemd-creds encrypt: " + encrypted.stderr.decode())
        check(keychain_password.encode() not in open(sealed, "rb").read(), "the password is in the clear in " + sealed)
        # What systemd does for LoadCredentialEncrypted= of a User= unit: decrypted into a
        # directory of the unit's, the file 0400 and both the account's.
        decrypted = subprocess.run([creds, "decrypt", "--name=" + name, sealed, "-"], capture_output=True, env=host_key)
        check(decrypted.returncode == 0, "systemd-creds decrypt: " + decrypted.stderr.decode())
        directory = os.path.join(user.root, "credentials")
        os.mkdir(directory, 0o700)
        with open(os.path.join(directory, name), "wb") as f:
            f.write(decrypted.stdout)
        os.chmod(os.path.join(directory, name), 0o400)
        os.chown(os.path.join(directory, name), user.uid, user.gid)
        os.chown(directory, user.uid, user.gid)
        os.chmod(directory, 0o500)
        # ExecStart as systemd runs it for User=: the account's HOME, USER, LOGNAME, SHELL, no runtime directory.
        unlocked = user.run([LOCKET] + command[1:], environment={"SHELL": "/bin/sh", "CREDENTIALS_DIRECTORY": directory})
        check(unlocked.returncode == 0 and unlocked.stderr == b"", "ExecStart: %d %s" % (unlocked.returncode, unlocked.stderr.decode()))
        status = json.loads(user.locket("--json", "status").stdout)
        check(status["whenUnlocked"] == "unlocked" and status["secondsUntilAutoLock"] is None, "status: %r" % status)
        # Later, the account's session: its bus starts the provider (enable, once), which finds the keychain unlocked.
        check(user.locket("secret-service", "enable").returncode == 0, "enable")
        address = user.bus()
        quiet = {"DBUS_SESSION_BUS_ADDRESS": address, "LOCKET_ASKPASS": "", "SSH_ASKPASS": ""}
        looked = user.run(["secret-tool", "lookup", "service", "ci", "username", "runner"], environment=quiet)
        check(looked.returncode == 0 and looked.stdout == b"ci-token", "secret-tool lookup: %r %r" % (looked.stdout, looked.stderr))
        check(not user.locked_over_bus(address), "the provider says Locked=true")
    with_user(body)


if __name__ == "__main__":
    main({name: function for name, function in globals().items() if callable(function) and function.__module__ == "__main__"
          and name not in ("main", "with_user", "has_owner", "readme_unit")})
