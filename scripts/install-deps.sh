#!/usr/bin/env bash
# Installs the Debian packages Parley builds and tests with, only those missing (idempotent).
# Runs apt-get as root, or through sudo when available.
#   scripts/install-deps.sh          what the build needs
#   scripts/install-deps.sh --test   also what the tests need: tmux, man-db and groff for the
#                                    terminal chat's and the manual page's tests, zsh and fish for
#                                    the completion scripts', Chromium, an emoji font and python3
#                                    for the web UI's browser tests (without root outside CI, a
#                                    warning: those tests are then skipped)
set -euo pipefail

packages=(libsodium-dev libsqlite3-dev libncurses-dev libmicrohttpd-dev pkg-config)
optional=false
if [ "${1:-}" = "--test" ]; then
    # tmux drives the terminal chat's tests; man-db and groff-base render the manual page; zsh
    # and fish run the completion scripts; Chromium, an emoji font and python3 the web UI's;
    # systemd (systemd-analyze) and adduser the Debian package's test.
    packages=(tmux man-db groff-base zsh fish chromium fonts-noto-color-emoji python3 systemd adduser)
    [ "${CI:-}" = "true" ] || optional=true
fi
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    apt=(apt-get)
elif command -v sudo >/dev/null 2>&1; then
    apt=(sudo apt-get)
elif $optional; then
    echo "parley: warning: missing ${missing[*]}; the browser tests will be skipped (as root: apt-get install ${missing[*]})" >&2
    exit 0
else
    echo "parley: missing packages: ${missing[*]}; install them as root: apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "Installing ${missing[*]} ..."
export DEBIAN_FRONTEND=noninteractive
"${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    "${apt[@]}" update -qq >/dev/null
    "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null
}
