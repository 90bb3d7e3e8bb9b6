"""Run by SecretServiceEndToEndTests as `locket secret-service -- python3
terminal_client.py` at a pseudo-terminal: unlocks the locked login
collection through a prompt that the provider asks at that terminal."""
from jeepney import DBusAddress, MatchRule, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

LOGIN = "/org/freedesktop/secrets/collection/login"
connection = open_dbus_connection(bus="SESSION")
service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Service")
unlocked, prompt = connection.send_and_get_reply(new_method_call(service, "Unlock", "ao", ([LOGIN],))).body
assert prompt != "/", "the keychain was not locked"
rule = MatchRule(type="signal", interface="org.freedesktop.Secret.Prompt", member="Completed", path=prompt)
with connection.filter(rule) as queue:
    address = DBusAddress(prompt, bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Prompt")
    connection.send_and_get_reply(new_method_call(address, "Prompt", "s", ("",)))
    dismissed, result = connection.recv_until_filtered(queue, timeout=20).body
print("\nCOMPLETED dismissed=%s result=%s" % (dismissed, result[1]))
