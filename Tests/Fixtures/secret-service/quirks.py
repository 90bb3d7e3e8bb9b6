"""What real clients do that the Secret Service API leaves open, answered as
gnome-keyring answers (issue 41, docs/SECRET-SERVICE.md): each with the
client that does it where Debian packages one, else its exact call sequence
(from the client's source, named in each case). Run by
SecretServiceQuirksTests: `python3 quirks.py CASE`."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import (LOGIN, PASSWORD, Provider, askpass, call, check, connect, get_property, locket, main, obj, run)
from provider import ITEM, SERVICE, completed, create, plain_session

ALIAS_DEFAULT = "/org/freedesktop/secrets/aliases/default"
SESSION = "/org/freedesktop/secrets/collection/session"
COLLECTION = "org.freedesktop.Secret.Collection"


def unlock_then_item_get_secret(bus):
    """Chromium (KeePassXC #13596): Unlock of the collection, then
    Item.GetSecret on its item with no Unlock of the item. An unlocked
    collection's items are unlocked: the secret comes, the item says Locked false."""
    provider = Provider(bus, environment={"LOCKET_ASKPASS": askpass(PASSWORD)})
    connection = connect(bus)
    session = plain_session(connection)
    item = create(connection, session, {"application": "chromium", "xdg:schema": "chrome_libsecret_os_crypt_password_v2"}, b"chromium-key")
    locket("lock")
    check(get_property(connection, item, ITEM, "Locked") is True, "the item of a locked keychain says unlocked")
    unlocked, prompt = call(connection, SERVICE, "Unlock", "ao", ([ALIAS_DEFAULT],))
    check(unlocked == [] and prompt != "/", "Unlock of the locked default collection: %r" % ((unlocked, prompt),))
    dismissed, result = completed(connection, prompt)
    check(not dismissed and result == ("ao", [ALIAS_DEFAULT]), "Completed: %r" % ((dismissed, result),))
    # No Unlock of the item: straight to its secret, as Chromium does.
    (_, _, value, _), = call(connection, obj(item, ITEM), "GetSecret", "o", (session,))
    check(value == b"chromium-key", "Item.GetSecret after the collection's Unlock: %r" % value)
    check(get_property(connection, item, ITEM, "Locked") is False, "the item of the unlocked collection says locked")
    check(call(connection, SERVICE, "GetSecrets", "aoo", ([item], session)) == ({item: (session, b"", b"chromium-key", "text/plain")},),
          "Service.GetSecrets after the collection's Unlock")
    # An Unlock of the item now (libsecret's order) needs no prompt.
    check(call(connection, SERVICE, "Unlock", "ao", ([item],)) == ([item], "/"), "Unlock of an item of an unlocked collection")
    connection.close()
    provider.stop()


def alias_and_collection_paths(bus):
    """The paths clients build by hand, answered as gnome-keyring answers them:
    /aliases/default (libsecret's SECRET_COLLECTION_DEFAULT, Chromium; KeePassXC
    #7575, #7839), /aliases/login and /collection/login (go-keyring's
    GetLoginCollection), /aliases/session and /collection/session; ReadAlias of
    each; item paths under an alias; what comes back is the collection's own path."""
    provider = Provider(bus)
    connection = connect(bus)
    session = plain_session(connection)
    collections = get_property(connection, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Collections")
    check(collections == [LOGIN, SESSION], "Collections: %r (gnome-keyring: login and session)" % (collections,))
    for alias, path in [("default", LOGIN), ("login", LOGIN), ("session", SESSION), ("nothing", "/")]:
        check(call(connection, SERVICE, "ReadAlias", "s", (alias,)) == (path,), "ReadAlias %s" % alias)
    for via, home in [(ALIAS_DEFAULT, LOGIN), ("/org/freedesktop/secrets/aliases/login", LOGIN), (LOGIN, LOGIN),
                      ("/org/freedesktop/secrets/aliases/session", SESSION), (SESSION, SESSION)]:
        label = get_property(connection, via, COLLECTION, "Label")
        check(isinstance(label, str), "Label at %s" % via)
        properties = {ITEM + ".Label": ("s", "via " + via), ITEM + ".Attributes": ("a{ss}", {"via": via})}
        item, prompt = call(connection, obj(via, COLLECTION), "CreateItem", "a{sv}(oayays)b",
                            (properties, (session, b"", via.encode(), "text/plain"), False))
        check(item.startswith(home + "/") and prompt == "/", "CreateItem at %s gave %s" % (via, item))
        check(call(connection, obj(via, COLLECTION), "SearchItems", "a{ss}", ({"via": via},)) == ([item],), "SearchItems at %s" % via)
        check(call(connection, SERVICE, "SearchItems", "a{ss}", ({"via": via},)) == ([item], []), "Service.SearchItems of %s's item" % via)
        check(item in get_property(connection, via, COLLECTION, "Items"), "Items at %s" % via)
        under_alias = via + "/" + item.rsplit("/", 1)[1]
        (_, _, value, _), = call(connection, obj(under_alias, ITEM), "GetSecret", "o", (session,))
        check(value == via.encode(), "GetSecret at %s" % under_alias)
    # CreateCollection with an alias that exists: that collection, no prompt (keyring-rs, secretstorage).
    check(call(connection, SERVICE, "CreateCollection", "a{sv}s", ({}, "session")) == (SESSION, "/"), "CreateCollection of the session alias")
    connection.close()
    provider.stop()


def session_collection(bus):
    """secret-tool store --collection=session (libsecret's SECRET_COLLECTION_SESSION):
    kept while the provider runs, never in the login keychain, never locked,
    gone when the provider stops; nothing of it left on disk."""
    provider = Provider(bus)
    run(["secret-tool", "store", "--collection=session", "--label", "transient", "kind", "session-only"], bus, input=b"for now")
    check(run(["secret-tool", "lookup", "kind", "session-only"], bus).stdout == b"for now", "lookup of a session item")
    check(locket("find", "--attr", "kind=session-only", check_status=False).returncode == 44, "the session item is in the login keychain")
    run(["secret-tool", "store", "--collection=login", "--label", "kept", "kind", "kept"], bus, input=b"kept")
    check(locket("find", "--attr", "kind=kept", "-w", "-n").stdout == b"kept", "--collection=login did not reach the login keychain")
    locket("lock")
    connection = connect(bus)
    check(get_property(connection, SESSION, COLLECTION, "Locked") is False, "locket lock locked the session collection")
    check(get_property(connection, LOGIN, COLLECTION, "Locked") is True, "the login collection is not locked")
    check(run(["secret-tool", "lookup", "kind", "session-only"], bus).stdout == b"for now", "lookup of a session item while login is locked")
    directories = [d for d in os.listdir(os.environ["XDG_RUNTIME_DIR"]) if d.startswith("locket-session-")]
    check(len(directories) == 1, "the session collection's directory: %r" % directories)
    connection.close()
    provider.stop()
    check(not any(d.startswith("locket-session-") for d in os.listdir(os.environ["XDG_RUNTIME_DIR"])), "the session collection outlived its provider")
    provider = Provider(bus)
    check(run(["secret-tool", "lookup", "kind", "session-only"], bus, expect=1).stdout == b"", "a session item outlived its provider")
    provider.stop()


def keyring_rs_sequence(bus):
    """keyring-rs 3 (its secret_service.rs over the secret-service crate):
    ReadAlias("default"), the collection's Locked, CreateItem with replace
    and its four attributes (again: the same item), SearchItems by target,
    service and username, Item.GetSecret; its delete: Item.Delete."""
    provider = Provider(bus)
    connection = connect(bus)
    session = plain_session(connection)
    (default,) = call(connection, SERVICE, "ReadAlias", "s", ("default",))
    check(default == LOGIN, "ReadAlias default: %r" % default)
    check(get_property(connection, default, COLLECTION, "Locked") is False, "Locked")
    attributes = {"target": "default", "service": "rs-service", "username": "rs-user", "application": "rust-keyring"}
    first = create(connection, session, attributes, b"first", label="rs-user@rs-service", replace=True)
    second = create(connection, session, attributes, b"second", label="rs-user@rs-service", replace=True)
    check(first == second, "CreateItem with replace made a second item: %s %s" % (first, second))
    unlocked, locked = call(connection, SERVICE, "SearchItems", "a{ss}", ({"target": "default", "service": "rs-service", "username": "rs-user"},))
    check(unlocked == [first] and locked == [], "SearchItems: %r %r" % (unlocked, locked))
    (_, _, value, content_type), = call(connection, obj(first, ITEM), "GetSecret", "o", (session,))
    check(value == b"second" and content_type == "text/plain", "GetSecret: %r %r" % (value, content_type))
    check(locket("find", "-s", "rs-service", "-a", "rs-user", "-w", "-n").stdout == b"second", "locket find of keyring-rs's item")
    check(call(connection, obj(first, ITEM), "Delete") == ("/",), "Item.Delete")
    check(locket("find", "-s", "rs-service", check_status=False).returncode == 44, "Item.Delete left the item")
    connection.close()
    provider.stop()


if __name__ == "__main__":
    main({"unlock_then_item_get_secret": unlock_then_item_get_secret, "alias_and_collection_paths": alias_and_collection_paths,
          "session_collection": session_collection, "keyring_rs_sequence": keyring_rs_sequence})
