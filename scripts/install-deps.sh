#!/usr/bin/env bash
# Installs the Debian packages Parley builds and tests with, only those missing (idempotent).
# Runs apt-get as root, or through sudo when available.
#   scripts/install-deps.sh          what the build needs
#   scripts/install-deps.sh --test   also what the tests need: tmux, man-db and groff for the
#                                    terminal chat's and the manual page's tests, zsh and fish for
#                                    the completion scripts', Chromium, an emoji font and python3
#                                    for the web UI's browser tests, schemathesis (pinned, from
#                                    PyPI, in a virtual environment at .build/schemathesis) for its
#                                    API contract test, and the QR decoder zxing-cpp (pinned, from
#                                    PyPI, at .build/qr-decoder) for the QR code tests (without root
#                                    outside CI, a warning: those tests are then skipped)
set -euo pipefail

packages=(libsodium-dev libsqlite3-dev libncurses-dev libmicrohttpd-dev libqrencode-dev pkg-config)
optional=false
if [ "${1:-}" = "--test" ]; then
    # tmux drives the terminal chat's tests; man-db and groff-base render the manual page; zsh
    # and fish run the completion scripts; Chromium, an emoji font and python3 the web UI's;
    # systemd (systemd-analyze) and adduser the Debian package's test.
    packages=(tmux man-db groff-base zsh fish chromium fonts-noto-color-emoji python3 python3-venv systemd adduser)
    [ "${CI:-}" = "true" ] || optional=true
fi

# The API contract test's tester: schemathesis, pinned, in its own virtual environment under
# .build (nothing installed system-wide from PyPI). Run after the Debian packages (python3-venv).
SCHEMATHESIS_VERSION=4.32.5
install_schemathesis() {
    [ "${1:-}" = "--test" ] || return 0
    local venv
    venv="$(cd "$(dirname "$0")/.." && pwd)/.build/schemathesis"
    if [ -x "$venv/bin/st" ] && [ "$("$venv/bin/st" --version 2>/dev/null)" = "st, version $SCHEMATHESIS_VERSION" ]; then
        return 0
    fi
    if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
        if $optional; then
            echo "parley: warning: python3-venv is missing; the API contract test will be skipped (as root: apt-get install python3-venv)" >&2
            return 0
        fi
        echo "parley: python3-venv is missing; install it as root: apt-get install python3-venv" >&2
        return 1
    fi
    echo "Installing schemathesis $SCHEMATHESIS_VERSION in $venv ..."
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" || {
        rm -rf "$venv"
        if $optional; then
            echo "parley: warning: cannot install schemathesis from PyPI; the API contract test will be skipped" >&2
            return 0
        fi
        echo "parley: cannot install schemathesis $SCHEMATHESIS_VERSION from PyPI" >&2
        return 1
    }
}

# The QR code tests' decoder: zxing-cpp's Python binding, pinned, from a wheel (no compiler), in
# its own virtual environment under .build.
ZXING_CPP_VERSION=3.1.1
install_qr_decoder() {
    [ "${1:-}" = "--test" ] || return 0
    local venv
    venv="$(cd "$(dirname "$0")/.." && pwd)/.build/qr-decoder"
    if [ -x "$venv/bin/python3" ] && [ "$("$venv/bin/python3" -c 'import importlib.metadata as m; print(m.version("zxing-cpp"))' 2>/dev/null)" = "$ZXING_CPP_VERSION" ]; then
        return 0
    fi
    if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
        if $optional; then
            echo "parley: warning: python3-venv is missing; the QR decoding tests will be skipped (as root: apt-get install python3-venv)" >&2
            return 0
        fi
        echo "parley: python3-venv is missing; install it as root: apt-get install python3-venv" >&2
        return 1
    fi
    echo "Installing zxing-cpp $ZXING_CPP_VERSION in $venv ..."
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: "zxing-cpp==$ZXING_CPP_VERSION" || {
        rm -rf "$venv"
        if $optional; then
            echo "parley: warning: cannot install zxing-cpp from PyPI; the QR decoding tests will be skipped" >&2
            return 0
        fi
        echo "parley: cannot install zxing-cpp $ZXING_CPP_VERSION from PyPI" >&2
        return 1
    }
}

install_packages() {
    missing=()
    for package in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0

    if [ "$(id -u)" -eq 0 ]; then
        apt=(apt-get)
    elif command -v sudo >/dev/null 2>&1; then
        apt=(sudo apt-get)
    elif $optional; then
        echo "parley: warning: missing ${missing[*]}; the browser tests will be skipped (as root: apt-get install ${missing[*]})" >&2
        return 0
    else
        echo "parley: missing packages: ${missing[*]}; install them as root: apt-get install ${missing[*]}" >&2
        return 1
    fi
    echo "Installing ${missing[*]} ..."
    export DEBIAN_FRONTEND=noninteractive
    "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
        "${apt[@]}" update -qq >/dev/null
        "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null
    }
}

install_packages
install_schemathesis "${1:-}"
install_qr_decoder "${1:-}"
