"""secretstorage's source distribution (its own test suite), fetched from PyPI
by pip once and kept in a cache directory: clients.py's secretstorage_suite
case reads it there, and `make test` fetches it in the background while the
tests' debug build leaves a core idle (issue 38), so that the case finds it.

`python3 secretstorage_sdist.py CACHE` fetches it unless it is there; on
failure it says so in one line and exits 1 (the case tries again, and skips
saying why)."""
import os
import subprocess
import sys
import tempfile


def archives(cache):
    return sorted(name for name in os.listdir(cache) if name.startswith("secretstorage-") and name.endswith(".tar.gz"))


def fetch(cache):
    """The archive's name in `cache`, fetched if it is not there; else (None, pip's last line)."""
    os.makedirs(cache, exist_ok=True)
    found = archives(cache)
    if found:
        return found[-1], None
    # Fetched beside the cache and moved in whole: a reader never sees half an archive.
    with tempfile.TemporaryDirectory(dir=cache, prefix=".fetch-") as scratch:
        result = subprocess.run(["/usr/bin/python3", "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                                 "--disable-pip-version-check", "-d", scratch, "secretstorage"],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        for name in archives(scratch):
            os.replace(os.path.join(scratch, name), os.path.join(cache, name))
    found = archives(cache)
    if found:
        return found[-1], None
    lines = result.stderr.strip().splitlines()
    return None, lines[-1] if lines else "pip fetched nothing"


if __name__ == "__main__":
    try:
        archive, error = fetch(sys.argv[1])
    except (OSError, subprocess.SubprocessError) as failure:
        archive, error = None, str(failure)
    if archive is None:
        print("secretstorage's source distribution was not fetched (%s): SecretServiceClientsEndToEndTests will try again" % error,
              file=sys.stderr)
        sys.exit(1)
