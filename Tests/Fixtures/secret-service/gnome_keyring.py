"""locket next to gnome-keyring-daemon (Debian's), asked the same calls
(issue 41, docs/SECRET-SERVICE.md): what real clients do where the Secret
Service API is silent must be answered as gnome-keyring answers it, and each
difference the docs' table lists must be the one there is. Run by
SecretServiceQuirksTests: `python3 gnome_keyring.py CASE`.

Each provider gets a bus of its own and the same sequence of calls (the
ones libsecret, secretstorage, go-keyring, keyring-rs and Chromium make,
named at each); the answers are compared after the parts that name things
differently by design are replaced: an item's path element (gnome-keyring
numbers items, locket names them by their persistent reference)."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import (LOGIN, PASSWORD, SCRATCH, Bus, DBusError, Provider, call, check, connect, fail, get_property, has_owner, main, obj,
                     wait_for)
from provider import ITEM, SERVICE, plain_session

COLLECTION = "org.freedesktop.Secret.Collection"
ROOT = "/org/freedesktop/secrets"


def normal(value):
    """Item paths with their last element as ITEM, prompts' as PROMPT, recursively."""
    if isinstance(value, str):
        value = re.sub(r"^(/org/freedesktop/secrets/prompt)/[^/]+$", r"\1/PROMPT", value)
        return re.sub(r"^(/org/freedesktop/secrets/(?:collection|aliases)/[^/]+)/[^/]+$", r"\1/ITEM", value)
    if isinstance(value, (list, tuple)):
        return type(value)(normal(v) for v in value)
    if isinstance(value, dict):
        return {normal(k): normal(v) for k, v in value.items()}
    return value


def answer(function, *arguments):
    """The normalized answer, or the error's name."""
    try:
        return normal(function(*arguments))
    except DBusError as error:
        return "error " + error.name


def observe(bus):
    """The calls, in order; [(what, answer)]."""
    connection = connect(bus)
    session = plain_session(connection)
    seen = []

    def note(what, function, *arguments):
        seen.append((what, answer(function, *arguments)))

    def create(at, attributes, secret, replace=False, label="item"):
        properties = {ITEM + ".Label": ("s", label), ITEM + ".Attributes": ("a{ss}", attributes)}
        return call(connection, obj(at, COLLECTION), "CreateItem", "a{sv}(oayays)b", (properties, (session, b"", secret, "text/plain"), replace))

    # go-keyring looks for /collection/login among the collections; secret-service crate lists them.
    note("Collections holds login and session", lambda: sorted(set(get_property(connection, ROOT, "org.freedesktop.Secret.Service",
                                                                                "Collections")) & {LOGIN, ROOT + "/collection/session"}))
    for alias in ("default", "login", "session", "nothing"):
        note("ReadAlias " + alias, call, connection, SERVICE, "ReadAlias", "s", (alias,))
    # The paths clients build by hand: libsecret's SECRET_COLLECTION_DEFAULT and Chromium's /aliases/default,
    # go-keyring's /collection/login, secret-tool --collection=session.
    for via in (ROOT + "/aliases/default", ROOT + "/aliases/login", LOGIN, ROOT + "/aliases/session", ROOT + "/collection/session"):
        note("Locked at " + via, get_property, connection, via, COLLECTION, "Locked")
        note("Label at %s is a string" % via, lambda: isinstance(get_property(connection, via, COLLECTION, "Label"), str))
        # go-keyring wants Unlock to return exactly the path it sent.
        note("Unlock of " + via, call, connection, SERVICE, "Unlock", "ao", ([via],))
        item = answer(create, via, {"via": via, "xdg:schema": "org.example.Quirk"}, via.encode())
        seen.append(("CreateItem at " + via, item))
        try:
            made = create(via, {"via": via + "#2", "xdg:schema": "org.example.Quirk"}, b"2")[0]
        except DBusError as error:
            # The calls that need the item are noted as not made, so both runs still ask the same things.
            seen.extend(("%s at %s" % (what, via), "not made: CreateItem failed with " + error.name)
                        for what in ("SearchItems", "Service.SearchItems", "Items", "Item.GetSecret", "Item.Locked"))
            continue
        note("SearchItems at " + via, call, connection, obj(via, COLLECTION), "SearchItems", "a{ss}", ({"via": via},))
        note("Service.SearchItems at " + via, call, connection, SERVICE, "SearchItems", "a{ss}", ({"via": via},))
        note("Items at " + via, lambda: made in get_property(connection, via, COLLECTION, "Items"))
        # The item through the alias's own path (Chromium, libsecret build such paths).
        note("Item.GetSecret at " + via, lambda: call(connection, obj(via + "/" + made.rsplit("/", 1)[1], ITEM), "GetSecret", "o",
                                                           (session,))[0][2])
        note("Item.Locked at " + via, get_property, connection, made, ITEM, "Locked")
    # Chromium: an Unlock of the collection, then Item.GetSecret with no Unlock of the item.
    item = create(ROOT + "/aliases/default", {"application": "chromium", "xdg:schema": "chrome_libsecret_os_crypt_password_v2"}, b"key")[0]
    note("Chromium: Unlock of /aliases/default", call, connection, SERVICE, "Unlock", "ao", ([ROOT + "/aliases/default"],))
    note("Chromium: Item.GetSecret", lambda: call(connection, obj(item, ITEM), "GetSecret", "o", (session,))[0][1:])
    note("Service.GetSecrets", lambda: {k: v[1:] for k, v in call(connection, SERVICE, "GetSecrets", "aoo", ([item], session))[0].items()})
    # keyring-rs: CreateItem with replace and the same attributes is the same item; its secret and content type.
    attributes = {"target": "default", "service": "rs", "username": "u", "application": "rust-keyring"}
    first = create(ROOT + "/aliases/default", attributes, b"first", replace=True)[0]
    second = create(ROOT + "/aliases/default", attributes, b"second", replace=True)[0]
    seen.append(("keyring-rs: CreateItem with replace is the same item", first == second))
    note("keyring-rs: Item.GetSecret", lambda: call(connection, obj(first, ITEM), "GetSecret", "o", (session,))[0][2:])
    note("keyring-rs: Item.Delete", call, connection, obj(first, ITEM), "Delete")
    note("keyring-rs: SearchItems after Delete", call, connection, SERVICE, "SearchItems", "a{ss}", (attributes,))
    # keyring-rs and secretstorage: CreateCollection with the default alias, which ReadAlias names.
    note("differs: CreateCollection with the alias default", call, connection, SERVICE, "CreateCollection", "a{sv}s", ({}, "default"))
    note("differs: CreateCollection with the alias session", call, connection, SERVICE, "CreateCollection", "a{sv}s", ({}, "session"))
    # The documented differences (docs/SECRET-SERVICE.md), observed too.
    plain = create(ROOT + "/aliases/default", {"quirk": "no schema"}, b"x")[0]
    note(NO_SCHEMA, get_property, connection, plain, ITEM, "Attributes")
    note("differs: a path where no object is", get_property, connection, ROOT + "/collection/login/nothing", ITEM, "Label")
    note("differs: SetAlias of another name", call, connection, SERVICE, "SetAlias", "so", ("other", LOGIN))
    # Locked (Lock needs no prompt in either): libsecret and secretstorage read the second list of
    # SearchItems as the locked items, skip what GetSecrets leaves out, and Unlock through a prompt.
    note("Lock of /aliases/default", call, connection, SERVICE, "Lock", "ao", ([ROOT + "/aliases/default"],))
    note("Locked of the locked collection", get_property, connection, LOGIN, COLLECTION, "Locked")
    note("Item.Locked of its item", get_property, connection, item, ITEM, "Locked")
    note("SearchItems of a locked item", call, connection, SERVICE, "SearchItems", "a{ss}", ({"application": "chromium"},))
    note("GetSecrets of a locked item", call, connection, SERVICE, "GetSecrets", "aoo", ([item], session))
    note("Item.GetSecret of a locked item", call, connection, obj(item, ITEM), "GetSecret", "o", (session,))
    note("Unlock of the locked /aliases/default", call, connection, SERVICE, "Unlock", "ao", ([ROOT + "/aliases/default"],))
    note("differs: a locked item's Label", get_property, connection, item, ITEM, "Label")
    connection.close()
    return seen


NO_SCHEMA = "An item made with no xdg:schema: its Attributes"

# What the docs' table says differs, with gnome-keyring's answer and locket's (normalized).
DIFFERENCES = {
    "differs: a locked item's Label": ("item", ""),
    "differs: CreateCollection with the alias default": (("/", "/org/freedesktop/secrets/prompt/PROMPT"),
                                                         ("/org/freedesktop/secrets/collection/login", "/")),
    "differs: CreateCollection with the alias session": ("error org.freedesktop.DBus.Error.NotSupported",
                                                         ("/org/freedesktop/secrets/collection/session", "/")),
    "differs: a path where no object is": ("error org.freedesktop.DBus.Error.UnknownMethod", "error org.freedesktop.DBus.Error.UnknownObject"),
    "differs: SetAlias of another name": ("error org.freedesktop.DBus.Error.NotSupported", ()),
}


class GnomeKeyring:
    """gnome-keyring-daemon's Secret Service on `bus`, its login keyring made and unlocked with the password."""

    def __init__(self, bus):
        home = os.path.join(SCRATCH, "gnome-home")
        os.makedirs(os.path.join(home, "run"), mode=0o700, exist_ok=True)
        env = dict(bus.environment, HOME=home, XDG_DATA_HOME=os.path.join(home, "data"), XDG_RUNTIME_DIR=os.path.join(home, "run"))
        self.process = subprocess.Popen(["gnome-keyring-daemon", "--unlock", "--components=secrets", "--foreground"], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.process.stdin.write(PASSWORD.encode())
        self.process.stdin.close()
        wait_for(lambda: has_owner(bus, "org.freedesktop.secrets") or self.process.poll() is not None, 20,
                 "gnome-keyring-daemon did not take org.freedesktop.secrets")
        check(self.process.poll() is None, "gnome-keyring-daemon exited %r" % self.process.returncode)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def same_answers(bus):
    """The same calls to gnome-keyring-daemon and to locket: the same answers,
    but for the differences docs/SECRET-SERVICE.md lists, which are as listed."""
    if shutil.which("gnome-keyring-daemon") is None:
        print("SKIP: gnome-keyring-daemon is not installed (make test-deps)", flush=True)
        return
    gnome_bus = Bus()
    gnome = GnomeKeyring(gnome_bus)
    try:
        theirs = observe(gnome_bus)
    finally:
        gnome.stop()
        gnome_bus.stop()
    provider = Provider(bus)
    try:
        ours = observe(bus)
    finally:
        provider.stop()
    check([what for what, _ in theirs] == [what for what, _ in ours], "the two runs asked different things")
    wrong = []
    for (what, their), (_, our) in zip(theirs, ours):
        if what == NO_SCHEMA and isinstance(their, dict) and their.get("xdg:schema") == "org.freedesktop.Secret.Generic":
            # gnome-keyring adds the generic schema in some runs and not in others (seen on a clean clone;
            # why is not known here); locket gives back what was stored, which the comparison still checks.
            their = {name: value for name, value in their.items() if name != "xdg:schema"}
        expected = DIFFERENCES.get(what, (their, their))
        if (their, our) != expected:
            wrong.append("%s: gnome-keyring %r, locket %r%s" % (what, their, our, "" if what not in DIFFERENCES else
                                                                 " (the docs say gnome-keyring %r, locket %r)" % expected))
    if wrong:
        fail("; ".join(wrong))
    print("%d answers compared, %d documented differences" % (len(ours), len(DIFFERENCES)), flush=True)


if __name__ == "__main__":
    main({"same_answers": same_answers})
