#!/usr/bin/env bash
# Makes the format-1 keychain fixtures with a format-1 release binary ($1).
# Run once; the output is committed under Tests/Fixtures/format1/.
set -euo pipefail
bin=$1; out=$2
rm -rf "$out"; mkdir -p "$out"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
chmod 700 "$work"
run() { HOME=$work/h XDG_DATA_HOME=$work/h/data XDG_STATE_HOME=$work/h/state XDG_RUNTIME_DIR=$work/h/run LOCKET_SESSION=dir "$bin" "$@"; }
mkdir -p $work/h/run; chmod 700 $work/h $work/h/run
pw='format one fixture'
printf '%s\n' "$pw" | run -k fixture init --password-stdin
add() { printf '%s' "$1" | { shift; run -k fixture add "$@" --data-file -; }; }
add 'gh-token-1' -s github -a deploy -l "GitHub deploy" -j "rotated monthly" -D "token"
add 'second' -s github -a ci --access-group T.shared
add 'ck-secret' -s backup -a nightly --accessible after-first-unlock
add 'dk-secret' -s boot -a early --accessible always 2>/dev/null
add 'aku-secret' -s local -a only --accessible when-unlocked-this-device-only
add 'cku-secret' -s local -a background --accessible after-first-unlock-this-device-only
add 'dku-secret' -s local -a always --accessible always-this-device-only 2>/dev/null
add 'akpu-secret' -s local -a passcode --accessible when-passcode-set-this-device-only
add 'päßwörd ✓' -s 'ünïcödé service' -a 'ユーザー' -l 'label with spaces' -G 'generic-bytes' -c abcd -C wxyz
printf 'bin\x00ary\xff\x01' | run -k fixture add -s binary -a blob --data-file -
add 'https-pw' --class inet -s example.com -a alice -r https -P 8443 -p /repo.git -d realm -t http-basic -l "example login"
add 'ssh-pw' --class inet -s host.internal -a bob -r ssh
add 'app-secret' -s app -a user --access-group ABCDE12345.com.example.app
printf 'protocol=https\nhost=git.example.org\nusername=carol\npassword=git-secret\npassword_expiry_utc=2000000000\noauth_refresh_token=refresh-xyz\n\n' | run -k fixture credential store
run -k fixture --json dump --data > "$out/expected.json"
run -k fixture lock --all
cp "$work/h/data/locket/fixture.keychain" "$out/fixture.keychain"
[ -f "$work/h/data/locket/fixture.keychain-wal" ] && [ -s "$work/h/data/locket/fixture.keychain-wal" ] && { echo "WAL not empty" >&2; exit 1; }
cp "$work/h/state/locket/device.key" "$out/device.key"
printf '%s\n' "$pw" > "$out/password"
# A keychain without a password.
run -k nopass init --no-password
printf 'np-secret' | run -k nopass add -s plain -a user --data-file -
printf 'np-tdo' | run -k nopass add -s plain -a device --accessible when-unlocked-this-device-only --data-file -
run -k nopass --json dump --data > "$out/nopass-expected.json"
cp "$work/h/data/locket/nopass.keychain" "$out/nopass.keychain"
chmod 600 "$out"/*.keychain "$out"/device.key
echo "made by: $("$bin" --version) at $(git -C /work/main rev-parse --short HEAD)" > "$out/README"
ls -la "$out"
