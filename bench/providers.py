"""What bench/secret-service and bench/chromium share: private buses, the two
providers on them (locket secret-service and gnome-keyring-daemon, each
unlocked), and every process they start, stopped however the bench ends."""
import os
import subprocess
import sys
import time

HOME = os.environ["HOME"]
LOCKET = os.environ["LOCKET_BIN"]
PASSWORD = "bench password"

CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:dir={dir}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
<limit name="max_message_size">1000000000</limit></busconfig>
"""

# Every process started here, in order.
STARTED = []


def start(arguments, **options):
    process = subprocess.Popen(arguments, **options)
    STARTED.append(process)
    return process


def stop(processes):
    for process in processes:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def run(main):
    """Runs `main`, then stops every process started, last first, whatever happened."""
    try:
        main()
    finally:
        stop(reversed(STARTED))


def bus(name):
    """A dbus-daemon of its own (no activation: only what is started for it answers): (process, environment)."""
    directory = os.path.join(HOME, name)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(os.path.join(directory, "bus.conf"), "w") as f:
        f.write(CONFIG.format(dir=directory))
    process = start(["dbus-daemon", "--config-file=" + os.path.join(directory, "bus.conf"), "--nofork", "--nopidfile", "--print-address=1"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return process, dict(os.environ, DBUS_SESSION_BUS_ADDRESS=process.stdout.readline().strip())


def wait_for_service(env):
    for _ in range(500):
        if subprocess.run(["/usr/bin/python3", "-c", "import secretstorage,sys; sys.exit(0 if secretstorage.check_service_availability(secretstorage.dbus_init()) else 1)"],
                          env=env, capture_output=True).returncode == 0:
            return
        time.sleep(0.05)
    sys.exit("the Secret Service did not come up")


def locket(env):
    """A login keychain of its own (PASSWORD, unlocked) and `locket secret-service` serving it on env's bus."""
    subprocess.run([LOCKET, "init", "--password-stdin", "--kdf", "interactive"], input=(PASSWORD + "\n").encode(), check=True)
    provider = start([LOCKET, "secret-service"], env=env, stderr=subprocess.DEVNULL)
    wait_for_service(env)
    return provider


def gnome_keyring(env):
    """gnome-keyring-daemon's Secret Service on env's bus, its login keyring made and unlocked with PASSWORD."""
    gnome = start(["gnome-keyring-daemon", "--unlock", "--components=secrets", "--foreground"], env=env,
                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gnome.stdin.write(PASSWORD.encode())
    gnome.stdin.close()
    wait_for_service(env)
    return gnome
