#!/usr/bin/env bash
# Installs the Debian package as a user would and checks it (root only; CI runs it): `dpkg -i`, the
# binary and its manual page, the units pass `systemd-analyze verify`, the system user and its
# data directory, a first message written as that user (timed from the install), then `dpkg -r`
# leaves nothing of the package behind but the data.
#   scripts/test-package.sh PACKAGE.deb
set -euo pipefail
package=${1:?usage: scripts/test-package.sh PACKAGE.deb}
[ "$(id -u)" -eq 0 ] || { echo "test-package: run as root (it installs and removes a package)" >&2; exit 1; }
if dpkg-query -W -f='${Status}' parley 2>/dev/null | grep -q "install ok installed"; then
    echo "test-package: a parley package is installed already; remove it first (dpkg -r parley)" >&2
    exit 1
fi
fail() { echo "test-package: $*" >&2; exit 1; }
existed_before=false
[ -e /var/lib/parley ] && existed_before=true

start=$(date +%s%N)
dpkg -i "$package" >/dev/null || fail "dpkg -i $package failed"
installed=$(date +%s%N)

version=$(dpkg-deb -f "$package" Version)
[ "$(/usr/bin/parley --version)" = "parley $version" ] || fail "parley --version does not say $version"
man_err=$(MANPAGER=cat MANWIDTH=80 man parley 2>&1 >/dev/null) || fail "man parley failed: $man_err"
[ -z "$man_err" ] || fail "man parley warned: $man_err"
for unit in /lib/systemd/system/parley.service /usr/lib/systemd/user/parley.service; do
    verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify $unit: $verify"
    [ -z "$verify" ] || fail "systemd-analyze verify $unit warned: $verify"
done
getent passwd parley >/dev/null || fail "the package made no parley user"
[ "$(stat -c '%U %a' /var/lib/parley)" = "parley 700" ] || fail "/var/lib/parley is not the parley user's, mode 700"

# The first message, as the service's user, in the service's data directory.
as_parley() { runuser -u parley -- env HOME=/var/lib/parley /usr/bin/parley --data-dir /var/lib/parley "$@"; }
as_parley init --nick field >/dev/null
as_parley join lobby >/dev/null
as_parley send --room lobby "first message" >/dev/null
as_parley history --room lobby | grep -q "first message" || fail "the first message is not in the history"
written=$(date +%s%N)
echo "test-package: installed in $(( (installed - start) / 1000000 )) ms; first message $(( (written - start) / 1000000 )) ms after the install began"

dpkg -r parley >/dev/null || fail "dpkg -r parley failed"
left=()
while read -r path; do
    [ -e "/$path" ] && [ ! -d "/$path" ] && left+=("/$path")
done < <(dpkg-deb -c "$package" | awk '{print $6}' | sed 's|^\./||')
[ ${#left[@]} -eq 0 ] || fail "dpkg -r left package files behind: ${left[*]}"
[ -f /var/lib/parley/parley.db ] || fail "dpkg -r removed the data (/var/lib/parley/parley.db)"
# Leave the machine as it was: the package's record purged, the test's data gone.
dpkg -P parley >/dev/null
$existed_before || rm -rf /var/lib/parley
echo "test-package: $package installs, works and removes cleanly (the data stays)"
