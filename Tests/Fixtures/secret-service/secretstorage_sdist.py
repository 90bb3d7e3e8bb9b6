"""secretstorage's source distribution (its own test suite), fetched from PyPI
once and kept in a cache directory: clients.py's secretstorage_suite case
reads it there, and `make test` fetches it in the background while the
tests' debug build leaves a core idle (issue 38), so that the case finds it.

The archive is read straight from PyPI's JSON API and checked against the
SHA-256 digest listed there: 0.1 CPU-s, where `pip download --no-binary`
took 5-8 (it builds the package's metadata in a fresh environment with
setuptools installed into it) and ~14 s. pip stays the fallback, for a
machine that reaches PyPI only through an index pip is configured for.

`python3 secretstorage_sdist.py CACHE` fetches it unless it is there; on
failure it says so in one line and exits 1 (the case tries again, and skips
saying why)."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.request


def archives(cache):
    return sorted(name for name in os.listdir(cache) if name.startswith("secretstorage-") and name.endswith(".tar.gz"))


def fetch(cache):
    """The archive's name in `cache`, fetched if it is not there; else (None, why not)."""
    os.makedirs(cache, exist_ok=True)
    found = archives(cache)
    if found:
        return found[-1], None
    # Fetched beside the cache and moved in whole: a reader never sees half an archive.
    with tempfile.TemporaryDirectory(dir=cache, prefix=".fetch-") as scratch:
        try:
            download(scratch)
            error = None
        except (OSError, ValueError, KeyError, IndexError) as failure:
            result = subprocess.run(["/usr/bin/python3", "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                                     "--disable-pip-version-check", "-d", scratch, "secretstorage"],
                                    stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
            lines = result.stderr.strip().splitlines()
            error = "PyPI: %s; pip: %s" % (failure, lines[-1] if lines else "fetched nothing")
        for name in archives(scratch):
            os.replace(os.path.join(scratch, name), os.path.join(cache, name))
    found = archives(cache)
    if found:
        return found[-1], None
    return None, error or "fetched nothing"


def download(directory):
    """The latest release's source archive from PyPI's JSON API into `directory`, its SHA-256 checked."""
    with urllib.request.urlopen("https://pypi.org/pypi/secretstorage/json", timeout=60) as response:
        release = json.load(response)
    sdist = [entry for entry in release["urls"] if entry["packagetype"] == "sdist"][0]
    name = os.path.basename(sdist["filename"])
    if not (name.startswith("secretstorage-") and name.endswith(".tar.gz")):
        raise ValueError("unexpected archive name %r" % name)
    with urllib.request.urlopen(sdist["url"], timeout=60) as response:
        data = response.read(64 << 20)
    if hashlib.sha256(data).hexdigest() != sdist["digests"]["sha256"]:
        raise ValueError("%s does not match its SHA-256 digest" % name)
    with open(os.path.join(directory, name), "wb") as archive:
        archive.write(data)


if __name__ == "__main__":
    try:
        archive, error = fetch(sys.argv[1])
    except (OSError, subprocess.SubprocessError) as failure:
        archive, error = None, str(failure)
    if archive is None:
        print("secretstorage's source distribution was not fetched (%s): SecretServiceClientsEndToEndTests will try again" % error,
              file=sys.stderr)
        sys.exit(1)
