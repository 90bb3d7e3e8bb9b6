"""A forked child becoming a python3 program of its own, as if started
with `python3`: the case processes of cases.py, harness.Python's clients
(issue 38: a fork of a warm interpreter instead of a start)."""
import os
import sys
import traceback


def become(streams, environment, main):
    """In a forked child: `streams()` puts its stdin, stdout and stderr on
    descriptors 0-2; every other descriptor is closed (nothing of the
    parent's: its pipes' ends, its connections), the environment is
    `environment`, and `main()` runs as the program. Exits with the status
    python3 would (SystemExit's code; 1 and the traceback for any other
    exception); never returns."""
    status = 1
    try:
        streams()
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        sys.stdin, sys.stdout, sys.stderr = open(0, "r", closefd=False), open(1, "w", closefd=False), open(2, "w", closefd=False)
        os.environ.clear()
        os.environ.update(environment)
        main()
        status = 0
    except SystemExit as exit:
        if exit.code is None:
            status = 0
        elif isinstance(exit.code, int):
            status = exit.code
        else:
            print(exit.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(status)
