#!/usr/bin/env bash
# Installs the Debian packages Parley builds and tests with, only those missing (idempotent);
# tmux drives the terminal chat's tests.
# Runs apt-get as root, or through sudo when available.
set -euo pipefail

packages=(libsodium-dev libsqlite3-dev libncurses-dev pkg-config tmux)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    apt=(apt-get)
elif command -v sudo >/dev/null 2>&1; then
    apt=(sudo apt-get)
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
