# Shared by the piuparts scripts (Tests/Package/piuparts), which run as root
# inside the test chroot; Tests/Package/run copies this file beside the
# package, the tarball and the README's tour into $LOCKET_PT_SHARE.
set -eu
share=$LOCKET_PT_SHARE
version=$LOCKET_PT_VERSION
user=alice
# A uid no account of the machine running the test has: the kernel's user
# keyring (where locket keeps unlocked keys) is the machine's, not the chroot's.
uid=64123
home=/home/$user

say() { echo "locket-test: $*"; }
fail() { echo "locket-test: FAIL: $*" >&2; exit 1; }

# COMMAND... as the test user, in a login's plain environment.
as_user() {
    setpriv --reuid=$uid --regid=$uid --init-groups \
        env -i HOME=$home USER=$user LOGNAME=$user SHELL=/bin/sh LANG=C.UTF-8 PATH="${USER_PATH:-/usr/bin:/bin}" "$@"
}

# EXPECTED COMMAND...: the command's stdout must be EXPECTED.
expect() {
    want=$1; shift
    got=$("$@") || fail "$* exited $?"
    [ "$got" = "$want" ] || fail "$*: '$got', expected '$want'"
}

# The README's tour as the test user, with the locket found first on
# USER_PATH; its commented results must show in order.
tour() {
    out=$(cd $home && as_user sh "$share/tour.sh" 2>&1) || fail "the tour exited $?: $out"
    printf '%s\n' "$out" | sed 's/^/    /'
    rest=$out
    for step in ghp_example_token 'exit 36' ghp_rotated_token 'exit 44'; do
        case $rest in *"$step"*) rest=${rest#*"$step"} ;; *) fail "the tour's output lacks '$step' where the README shows it" ;; esac
    done
    [ ! -e $home/.local/share/locket/tour.keychain ] || fail "the tour left its keychain"
}

# Every file under the test user's home with its digest, in order: what
# remove and purge must leave as it is.
home_digest() { (cd $home && find . \( -type f -o -type l \) -print | LC_ALL=C sort | while read -r f; do
    if [ -L "$f" ]; then echo "link $(readlink "$f") $f"; else sha256sum "$f"; fi; done); }

# Seconds since the time in FILE (date +%s.%N).
since() { awk -v a="$(cat "$1")" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
