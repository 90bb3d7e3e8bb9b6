#!/usr/bin/env python3
"""Writes security-dump.txt: what macOS `security dump-keychain -d` prints for
a handful of items, produced by the same printing rules as Apple's
SecurityTool (SecurityTool/macOS/keychain_utilities.c: print_keychain_item_attributes,
print_buffer, print_buffer_hex, print_buffer_ascii, print_uint32), so the
fixture matches its output byte for byte. Attribute order is the order
SecKeychainAttributeInfoForItemID reports (the schema's, sorted as the tool
shows them: integer tags first, then four-char codes)."""
import struct, sys

def print_buffer(data: bytes) -> str:
    out = []
    printable = [b >= 0x20 and b <= 0x7e and b != 0x5c for b in data]
    hexa = not all(printable)
    ascii_ = any(printable)
    if hexa:
        out.append("0x" + "".join("%02X" % b for b in data))
        if ascii_:
            out.append(" ")
        out.append(" ")
    if ascii_:
        out.append('"')
        for b, p in zip(data, printable):
            out.append(chr(b) if p else "\\%o%o%o" % ((b >> 6) & 7, (b >> 3) & 7, b & 7))
        out.append('"')
    return "".join(out)

def u32(n: int) -> str:
    return print_buffer(struct.pack(">I", n))

def tag(t) -> str:
    return u32(t) if isinstance(t, int) else print_buffer(t.encode())

GENP = [(7, "blob"), (8, "blob"), ("acct", "blob"), ("cdat", "timedate"), ("crtr", "uint32"), ("cusi", "sint32"),
        ("desc", "blob"), ("gena", "blob"), ("icmt", "blob"), ("invi", "sint32"), ("mdat", "timedate"), ("nega", "sint32"),
        ("prot", "blob"), ("scrp", "sint32"), ("svce", "blob"), ("type", "uint32")]
INET = [(7, "blob"), (8, "blob"), ("acct", "blob"), ("atyp", "blob"), ("cdat", "timedate"), ("crtr", "uint32"),
        ("cusi", "sint32"), ("desc", "blob"), ("icmt", "blob"), ("invi", "sint32"), ("mdat", "timedate"), ("nega", "sint32"),
        ("path", "blob"), ("port", "uint32"), ("prot", "blob"), ("ptcl", "uint32"), ("scrp", "sint32"), ("sdmn", "blob"),
        ("srvr", "blob"), ("type", "uint32")]
# A private key's attributes are integer tags (CSSM key schema); a few suffice.
KEY = [(0, "uint32"), (1, "blob"), (2, "blob"), (6, "blob"), (9, "blob"), (10, "uint32")]

def item(out, klass, schema, values, data=None, keychain="/Users/alice/Library/Keychains/login.keychain-db"):
    out.append("keychain: " + print_buffer(keychain.encode()) + "\n")
    out.append("version: 512\n")
    out.append("class: " + (print_buffer(klass.encode()) if isinstance(klass, str) else u32(klass)) + "\n")
    out.append("attributes:\n")
    if values is None:  # SecKeychainItemCopyAttributesAndData failed (access denied): the block stops here
        return
    for t, fmt in schema:
        v = values.get(t)
        line = "    " + tag(t) + "<" + fmt + ">="
        if v is None:
            line += "<NULL>"
        elif fmt in ("uint32", "sint32"):
            line += u32(v)
        else:
            line += print_buffer(v if isinstance(v, bytes) else v.encode())
        out.append(line + "\n")
    if data is not None:
        out.append("data:\n" + print_buffer(data) + "\n")

def date(s): return s.encode() + b"\0"

out = []
# 1. A plain generic password.
item(out, "genp", GENP, {7: "GitHub token", "acct": "alice", "cdat": date("20190101120000Z"), "mdat": date("20200202123456Z"),
     "svce": "GitHub token", "desc": "application password", "icmt": "for the CI", "gena": b"\x01\x02xyz"},
     b"ghp_abcdef123456")
# 2. An internet password on 443 (hex only), https, form auth.
item(out, "inet", INET, {7: "github.com", "acct": "alice@example.com", "atyp": "form", "cdat": date("20210315080910Z"),
     "mdat": date("20210315080910Z"), "path": "login", "port": 443, "ptcl": int.from_bytes(b"htps", "big"),
     "sdmn": "", "srvr": "github.com", "desc": "Web form password", "icmt": "default"},
     b'pa"ss\\word')
# 3. Port 80: one printable byte, so hex and text; unicode in account and label (octal escapes); a binary secret.
item(out, "inet", INET, {7: "intranet ü", "acct": "jürgen", "atyp": "dflt", "port": 80, "ptcl": int.from_bytes(b"http", "big"),
     "srvr": "intranet.example", "path": ""}, bytes([0, 1, 2, 0xff, 0x41]))
# 4. An empty secret, multi-line comment.
item(out, "genp", GENP, {7: "empty", "acct": "", "svce": "empty", "icmt": "line one\nline \"two\""}, b"")
# 5. Access denied while dumping: attributes: and nothing more.
item(out, "genp", GENP, None)
# 6. A certificate and a private key: not passwords.
item(out, 0x80001000, [(1, "uint32"), (2, "uint32"), ("alis", "blob"), ("labl", "blob")], {1: 1, 2: 3, "alis": "a@example.com", "labl": "Alice"})
item(out, 0x10, KEY, {0: 16, 1: "Alice key", 2: b"\x00\x11\x22", 6: "Alice key", 9: b"\x99\x88", 10: 42}, b"\x30\x82\x01")
# 7. A "never remember" entry (nega = 1), and a duplicate of item 1.
item(out, "inet", INET, {7: "bank.example", "acct": "", "nega": 1, "ptcl": int.from_bytes(b"htps", "big"), "srvr": "bank.example", "port": 0},
     b" ")
item(out, "genp", GENP, {7: "GitHub token", "acct": "alice", "svce": "GitHub token"}, b"other")
# 8. Another keychain in the same dump, a generic password with creator and type codes.
item(out, "genp", GENP, {7: "Wi-Fi", "acct": "home-net", "svce": "AirPort", "crtr": int.from_bytes(b"aapl", "big"),
     "type": int.from_bytes(b"note", "big")}, b"wifi pass phrase", keychain="/Library/Keychains/System.keychain")
sys.stdout.write("".join(out))
