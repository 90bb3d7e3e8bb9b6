"""One interpreter for a test process's Secret Service cases: started once
by SecretServiceCase (Tests/LocketCLITests/EndToEnd/SecretServiceSupport.swift)
with what the cases import already imported, it forks a process for each
case, which runs `python3 FILE CASE` as that command would: the case's
environment, argv and modules of its own (harness and the case files are
imported in the child, after its environment is set), its stdout and stderr
into files, stdin /dev/null, its own bus, provider and keychain as before.
A python3 with jeepney and cryptography imported takes ~0.1 CPU-s to start;
a fork of this one ~2 ms (issue 38).

    python3 cases.py REQUESTS [MODULE...]

MODULEs are imported here too: the client libraries of a class whose cases
fork clients of their own (harness.Python), imported once a class, not once
a case. REQUESTS is a FIFO: one JSON object a line, {"file", "case", "environment",
"stdout", "stderr"}. For each, this prints `started PID` when the case's
process runs and `ended STATUS` (an exit status, or -SIGNAL) when it has
ended; the test kills PID itself when its case times out. It exits at the
FIFO's end (the test process gone)."""
import importlib
import json
import os
import runpy
import sys

import child

# What the cases import, imported once here; not the case files (harness.py
# and the rest read their environment at import).
PRELOADED = ["hashlib", "hmac", "http.server", "secrets", "selectors", "shutil", "signal", "socket", "sqlite3", "subprocess",
             "tarfile", "threading", "time", "jeepney", "jeepney.io.blocking", "cryptography.hazmat.primitives.ciphers",
             "cryptography.hazmat.primitives.padding"]
for module in PRELOADED + sys.argv[2:]:
    importlib.import_module(module)


def run_case(request):
    """In the forked child: become `python3 FILE CASE`; never returns."""
    def streams():
        null = os.open("/dev/null", os.O_RDONLY)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((null, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)

    def main():
        sys.argv = [request["file"], request["case"]]
        sys.path[0] = os.path.dirname(request["file"])
        runpy.run_path(request["file"], run_name="__main__")
    child.become(streams, request["environment"], main)


def main():
    requests = open(sys.argv[1], "r")
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            run_case(request)
        print("started %d" % pid, flush=True)
        _, wait_status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(wait_status)
        print("ended %d" % code, flush=True)


if __name__ == "__main__":
    main()
