"""The real clients against `locket secret-service` (SPEC §18): secret-tool,
python secretstorage (and its own test suite), python keyring,
docker-credential-secretservice, git's libsecret credential helper, and a
plain-session client. Run by SecretServiceClientsEndToEndTests, one case each:
`python3 clients.py CASE`."""
import json
import os
import shutil
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import (LOCKET, LOGIN, SCRATCH, Provider, assert_not_on_disk, call, check, connect, fail, get_property,
                     locket, main, obj, python, run)
import secretstorage_sdist

BINARY = bytes(range(256)) + b"\x00\xff\xfe end"
# What `python3 -m keyring` imports before it looks for a backend, imported
# once in the case for the forks that stand for each python3 (harness.Python).
KEYRING = ["keyring", "keyring.cli", "keyring.backends.SecretService"]


def secret_tool(bus):
    provider = Provider(bus)
    run(["secret-tool", "store", "--label", "Deploy token", "service", "github", "username", "deploy", "team", "platform"],
        bus, input=b"ghp_bus_token")
    check(run(["secret-tool", "lookup", "service", "github", "username", "deploy"], bus).stdout == b"ghp_bus_token",
          "secret-tool lookup gave another secret")
    # What the bus made is a locket item: find -s -a -w, the free-form attribute with --attr.
    check(locket("find", "-s", "github", "-a", "deploy", "-w", "-n").stdout == b"ghp_bus_token", "locket find missed the bus's item")
    item = json.loads(locket("find", "--attr", "team=platform", "--json").stdout)
    check(item["label"] == "Deploy token" and item["attributes"] == {"team": "platform"}, "attributes as JSON: %r" % item)
    # ... and the reverse: an item added by locket, found by secret-tool.
    locket("add", "-s", "npm", "-a", "ci", "-w", input=b"npm_token\n")
    check(run(["secret-tool", "lookup", "service", "npm", "username", "ci"], bus).stdout == b"npm_token", "secret-tool missed locket's item")
    # Binary secrets, byte for byte, both ways.
    run(["secret-tool", "store", "--label", "bin", "kind", "binary"], bus, input=BINARY)
    check(run(["secret-tool", "lookup", "kind", "binary"], bus).stdout == BINARY, "a binary secret came back changed")
    check(locket("find", "--attr", "kind=binary", "-w", "-n").stdout == BINARY, "locket read the binary secret changed")
    # search --all lists every match, with its attributes.
    run(["secret-tool", "store", "--label", "second", "service", "github", "username", "other"], bus, input=b"x")
    searched = run(["secret-tool", "search", "--all", "service", "github"], bus)
    out = (searched.stdout + searched.stderr).decode()  # secret-tool prints the attributes on stderr
    check(out.count("attribute.service = github") == 2 and "attribute.team = platform" in out, "secret-tool search --all: " + out)
    # store again: the same attributes replace the item (libsecret passes replace).
    run(["secret-tool", "store", "--label", "Deploy token", "service", "github", "username", "deploy", "team", "platform"],
        bus, input=b"ghp_rotated")
    check(len(json.loads(locket("find", "-s", "github", "-a", "deploy", "--all", "--json").stdout)) == 1, "store made a second item")
    check(locket("find", "-s", "github", "-a", "deploy", "-w", "-n").stdout == b"ghp_rotated", "store did not replace the secret")
    # Sealed and blind-indexed: no attribute value, label or secret in the clear.
    assert_not_on_disk("platform", "github", "deploy", "Deploy token", "ghp_rotated", "binary")
    run(["secret-tool", "clear", "service", "github"], bus)
    check(locket("find", "-s", "github", check_status=False).returncode == 44, "secret-tool clear left an item")
    provider.stop()


def empty_attribute_values(bus):
    """An empty attribute value is a value (issue 44): stored, matched and
    returned, so storing again with the same attributes replaces the item."""
    provider = Provider(bus)
    for value in (b"one", b"two", b"three"):
        run(["secret-tool", "store", "--label", "L", "service", "s", "username", ""], bus, input=value)
    check(run(["secret-tool", "lookup", "service", "s", "username", ""], bus).stdout == b"three",
          "secret-tool lookup after three stores with username '' did not give the last")
    items = json.loads(locket("find", "-s", "s", "--all", "--json").stdout)
    check(len(items) == 1, "three stores with username '' made %d items" % len(items))
    searched = run(["secret-tool", "search", "--all", "service", "s"], bus)
    out = (searched.stdout + searched.stderr).decode()
    check("attribute.username = \n" in out, "the empty username did not come back: " + out)
    # keyring's set and get (what `python3 -m keyring` calls) in one python3: each start importing keyring is ~0.25 CPU-s (issue 38).
    script = "import keyring\nfor value in ('one', 'two', 'three'):\n    keyring.set_password('svc', '', value)\nprint(keyring.get_password('svc', ''))\n"
    check(python(["-c", script], bus, preload=KEYRING).stdout == b"three\n",
          "python keyring get after three sets with username '' did not give the last")
    check(len(json.loads(locket("find", "-s", "svc", "--all", "--json").stdout)) == 1, "keyring set made more than one item")
    # Present and empty is not absent: an item without a username is not matched by username ''.
    run(["secret-tool", "store", "--label", "M", "service", "t"], bus, input=b"no-user")
    check(run(["secret-tool", "lookup", "service", "t", "username", ""], bus, expect=None).stdout == b"",
          "username '' matched an item that has no username")
    check(run(["secret-tool", "lookup", "service", "t"], bus).stdout == b"no-user", "the item without a username")
    provider.stop()


def secretstorage_client(bus):
    provider = Provider(bus)
    script = """
import secretstorage, sys
connection = secretstorage.dbus_init()
collection = secretstorage.get_default_collection(connection)
assert collection.collection_path in ('/org/freedesktop/secrets/aliases/default', '/org/freedesktop/secrets/collection/login'), collection.collection_path
assert collection.get_label() == 'login'
assert not collection.is_locked()
item = collection.create_item('bin', {'application': 'app', 'xdg:schema': 'org.example.Bin'}, sys.stdin.buffer.read(), content_type='application/octet-stream')
assert item.get_secret_content_type() == 'application/octet-stream'
found = list(collection.search_items({'application': 'app'}))
assert found == [item], found
sys.stdout.buffer.write(found[0].get_secret())
"""
    out = python(["-c", script], bus, input=BINARY, preload=["secretstorage"]).stdout
    check(out == BINARY, "secretstorage's DH session changed a binary secret")
    check(locket("find", "--attr", "xdg:schema=org.example.Bin", "-w", "-n").stdout == BINARY, "locket read it changed")
    provider.stop()


def secretstorage_suite(bus):
    """secretstorage's own tests, from its source distribution (fetched from PyPI, cached: secretstorage_sdist)."""
    cache = os.environ["SECRETSTORAGE_CACHE"]
    archive, error = secretstorage_sdist.fetch(cache)
    if archive is None:
        print("SKIP: secretstorage's source distribution could not be fetched from PyPI: " + error)
        return
    with tarfile.open(os.path.join(cache, archive)) as tar:
        for member in tar.getmembers():
            check(not member.name.startswith("/") and ".." not in member.name.split("/"), "a path outside the archive: " + member.name)
        tar.extractall(SCRATCH)
    source = os.path.join(SCRATCH, archive[:-len(".tar.gz")])
    provider = Provider(bus)
    result = run(["/usr/bin/python3", os.path.join(source, "tests", "run_tests.py")], bus, expect=None)
    print(result.stderr.decode(errors="replace"))
    check(result.returncode == 0, "secretstorage's test suite failed")
    check(b"\nOK" in result.stderr, "secretstorage's test suite ran nothing")
    provider.stop()


def python_keyring(bus):
    provider = Provider(bus)
    python(["-m", "keyring", "set", "pypi", "alice"], bus, input=b"pypi-token\n", preload=KEYRING)
    check(python(["-m", "keyring", "get", "pypi", "alice"], bus).stdout == b"pypi-token\n", "keyring get")
    # One python3 for what is asked through the library (each start importing keyring is ~0.25 CPU-s; issue 38):
    # the backend it chooses with nothing configured (asked first), then the SecretService backend itself, by name.
    script = """
import keyring
print(type(keyring.get_keyring()).__module__, [type(b).__module__ for b in getattr(keyring.get_keyring(), 'backends', [])])
import keyring.backends.SecretService as s
k = s.Keyring()
assert k.priority > 0
k.set_password('svc', 'bob', 'via-secretservice')
print(s.Keyring().get_password('pypi', 'alice'))
"""
    backend, got = python(["-c", script], bus).stdout.decode().split("\n", 1)
    check("SecretService" in backend or "libsecret" in backend, "keyring chose no Secret Service backend: " + backend)
    check(got == "pypi-token\n", "SecretService backend get")
    check(locket("find", "-s", "svc", "-a", "bob", "-w", "-n").stdout == b"via-secretservice", "locket missed keyring's item")
    python(["-m", "keyring", "del", "pypi", "alice"], bus)
    check(locket("find", "-s", "pypi", check_status=False).returncode == 44, "keyring del left the item")
    provider.stop()


def docker_credentials(bus):
    provider = Provider(bus)
    helper = shutil.which("docker-credential-secretservice")
    check(helper is not None, "no docker-credential-secretservice")
    run([helper, "store"], bus, input=b'{"ServerURL":"https://registry.example:5000","Username":"ci","Secret":"reg-token"}')
    got = json.loads(run([helper, "get"], bus, input=b"https://registry.example:5000").stdout)
    check(got == {"ServerURL": "https://registry.example:5000", "Username": "ci", "Secret": "reg-token"}, "get: %r" % got)
    check(json.loads(run([helper, "list"], bus).stdout) == {"https://registry.example:5000": "ci"}, "list")
    check(locket("find", "--attr", "server=https://registry.example:5000", "-w", "-n").stdout == b"reg-token", "locket missed docker's item")
    run([helper, "erase"], bus, input=b"https://registry.example:5000")
    check(json.loads(run([helper, "list"], bus).stdout) == {}, "erase left the item")
    provider.stop()


def git_libsecret(bus):
    source = "/usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c"
    if not os.path.exists(source):
        print("SKIP: Debian's git ships no %s here" % source)
        return
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsecret-1", "glib-2.0"], capture_output=True, text=True)
    if flags.returncode != 0:
        print("SKIP: libsecret-1-dev is not installed (pkg-config libsecret-1)")
        return
    helper = os.path.join(SCRATCH, "git-credential-libsecret")
    subprocess.run(["cc", "-O1", "-o", helper, source, *flags.stdout.split()], check=True)
    provider = Provider(bus)
    run([helper, "store"], bus, input=b"protocol=https\nhost=git.example.com\nusername=alice\npassword=git-pw\n\n")
    out = run([helper, "get"], bus, input=b"protocol=https\nhost=git.example.com\n\n").stdout.decode()
    check("username=alice" in out and "password=git-pw" in out, "git-credential-libsecret get: " + out)
    # git's schema keeps its own attribute names: user and server, free-form in locket.
    check(locket("find", "--attr", "server=git.example.com", "--attr", "user=alice", "-w", "-n").stdout == b"git-pw", "locket missed git's item")
    run([helper, "erase"], bus, input=b"protocol=https\nhost=git.example.com\nusername=alice\n\n")
    check(run([helper, "get"], bus, input=b"protocol=https\nhost=git.example.com\n\n").stdout == b"", "erase left the credential")
    provider.stop()


def plain_session(bus):
    """A client of the plain algorithm, by hand (jeepney): the secret crosses as it is."""
    provider = Provider(bus)
    connection = connect(bus)
    output, session = call(connection, obj("/org/freedesktop/secrets", "org.freedesktop.Secret.Service"), "OpenSession", "sv", ("plain", ("s", "")))
    check(output == ("s", ""), "plain OpenSession output: %r" % (output,))
    properties = {"org.freedesktop.Secret.Item.Label": ("s", "plain"), "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"via": "plain"})}
    item, prompt = call(connection, obj(LOGIN, "org.freedesktop.Secret.Collection"), "CreateItem", "a{sv}(oayays)b",
                        (properties, (session, b"", BINARY, "application/octet-stream"), False))
    check(prompt == "/", "CreateItem wanted a prompt")
    (got,) = call(connection, obj(item, "org.freedesktop.Secret.Item"), "GetSecret", "o", (session,))
    check(got == (session, b"", BINARY, "application/octet-stream"), "plain GetSecret: %r" % (got[:2],))
    attributes = get_property(connection, item, "org.freedesktop.Secret.Item", "Attributes")
    check(attributes == {"via": "plain"}, "Attributes: %r" % (attributes,))
    check(locket("find", "--attr", "via=plain", "-w", "-n").stdout == BINARY, "locket read it changed")
    connection.close()
    provider.stop()


def bus_items_in_updates_and_backups(bus):
    """Items made by secret-tool are unique by reference: add -U changes only
    the item made by add; update edits their free-form attributes; a backup
    carries those attributes into a fresh keychain, where secret-tool finds
    the items by them again."""
    provider = Provider(bus)
    for n, label in (("1", "L1"), ("2", "L2")):
        run(["secret-tool", "store", "--label", label, "service", "gh", "username", "bob", "n", n], bus, input=b"bus " + n.encode())
    locket("add", "-s", "gh", "-a", "bob", "-l", "CLI", "-w", input=b"cli\n")
    locket("add", "-U", "-s", "gh", "-a", "bob", "-l", "CLI2", "-w", input=b"rotated\n")
    for n, label in (("1", "L1"), ("2", "L2")):
        item = json.loads(locket("find", "--attr", "n=" + n, "--json").stdout)
        check(item["label"] == label, "add -U changed the bus item's label: %r" % item)
        check(run(["secret-tool", "lookup", "n", n], bus).stdout == b"bus " + n.encode(), "add -U changed the bus item's secret")
    items = json.loads(locket("find", "-s", "gh", "-a", "bob", "--all", "--json").stdout)
    check(sorted(i["label"] for i in items) == ["CLI2", "L1", "L2"], "after add -U: %r" % [i["label"] for i in items])
    # update edits one free-form attribute and keeps the others; secret-tool sees the change.
    locket("update", "--attr", "n=2", "--set-attr", "n=two", "--set-attr", "team=platform")
    locket("update", "--attr", "n=two", "--remove-attr", "team")
    check(run(["secret-tool", "lookup", "n", "two", "service", "gh"], bus).stdout == b"bus 2", "secret-tool missed the edited item")
    check(run(["secret-tool", "lookup", "n", "2"], bus, expect=None).stdout == b"", "the old value still finds the item")
    edited = json.loads(locket("find", "--attr", "n=two", "--json").stdout)
    check(edited["attributes"] == {"n": "two"} and edited["label"] == "L2", "update lost or kept attributes: %r" % edited)
    provider.stop()

    backup = os.path.join(SCRATCH, "bus.backup")
    locket("export", "--format", "backup", "--kdf", "interactive", "--passphrase-stdin", "-o", backup, input=b"backup pass\n")
    locket("-k", "fresh", "init", "--no-password")
    locket("-k", "fresh", "import", backup, "--passphrase-stdin", input=b"backup pass\n")
    provider = Provider(bus, "-k", "fresh")
    check(run(["secret-tool", "lookup", "service", "gh", "username", "bob", "n", "1"], bus).stdout == b"bus 1",
          "secret-tool lookup missed a restored bus item")
    check(run(["secret-tool", "lookup", "n", "two"], bus).stdout == b"bus 2", "secret-tool lookup missed the restored edit")
    searched = run(["secret-tool", "search", "--all", "service", "gh"], bus)
    out = (searched.stdout + searched.stderr).decode()
    check("attribute.n = 1" in out and "attribute.n = two" in out and out.count("attribute.username = bob") == 3,
          "secret-tool search --all after restore: " + out)
    restored = json.loads(locket("-k", "fresh", "find", "-s", "gh", "-a", "bob", "--all", "--json").stdout)
    check(sorted(i["label"] for i in restored) == ["CLI2", "L1", "L2"], "restored: %r" % [i["label"] for i in restored])
    provider.stop()


if __name__ == "__main__":
    main({name: function for name, function in globals().items() if callable(function) and not name.startswith("_")
          and function.__module__ == "__main__"})
