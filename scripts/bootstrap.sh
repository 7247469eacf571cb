#!/usr/bin/env bash
# Provide a free-threaded CPython 3.14 (no GIL) and the project's .venv, idempotently.
#
# Order of preference for the interpreter:
#   1. $SEER_PYTHON, if set (it must be free-threaded);
#   2. a free-threaded python3.14t / python3.15t on PATH;
#   3. the interpreter this script built earlier in $SEER_CACHE (default ~/.cache/seer);
#   4. `uv python install 3.14t`, when uv is present and works;
#   5. CPython 3.14.7 built from source with --disable-gil into $SEER_CACHE.
# Then .venv is created with it (or reused) and the project is installed editable with
# the extras in $SEER_EXTRAS (default: all); with the marl extra also mpe2, without its
# pygame-ce requirement (no 3.14t wheel; install_mpe2 in venv-lib.sh).  A second run
# finishes in seconds.
#
# Usage: scripts/bootstrap.sh [--interpreter-only]
# Prints the venv's python (or, with --interpreter-only, the base interpreter) on stdout.
set -euo pipefail
# say, die ([bootstrap] before each message), make_venv and install_project: shared with
# scripts/gil-venv.sh.
LOG_TAG=bootstrap
# shellcheck source=scripts/venv-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/venv-lib.sh"

CPYTHON_VERSION=3.14.7
CPYTHON_SHA256=3b48dac8fb59f62eaa67ac83c1eb12bda1b7a08406dd286e252c11a66be27f81
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${SEER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/seer}"
PREFIX="$CACHE/cpython-${CPYTHON_VERSION}t"
VENV="${SEER_VENV:-$ROOT/.venv}"
EXTRAS="${SEER_EXTRAS:-all}"

# True when "$1" runs and is a free-threaded build of Python >= 3.14.
is_free_threaded() {
    [ -x "$(command -v "$1" 2>/dev/null)" ] || return 1
    "$1" - <<'PY' 2>/dev/null
import sys, sysconfig
ok = sysconfig.get_config_var("Py_GIL_DISABLED") == 1 and sys.version_info >= (3, 14)
sys.exit(0 if ok else 1)
PY
}

find_interpreter() {
    if [ -n "${SEER_PYTHON:-}" ]; then
        is_free_threaded "$SEER_PYTHON" \
            || die "SEER_PYTHON=$SEER_PYTHON is not a free-threaded Python >= 3.14 (Py_GIL_DISABLED != 1)"
        say "using \$SEER_PYTHON: $SEER_PYTHON"
        PYTHON="$(command -v "$SEER_PYTHON")"; return 0
    fi
    local cand
    for cand in python3.14t python3.15t; do
        if is_free_threaded "$cand"; then
            PYTHON="$(command -v "$cand")"; say "found free-threaded $cand on PATH: $PYTHON"; return 0
        fi
    done
    if is_free_threaded "$PREFIX/bin/python3.14t"; then
        PYTHON="$PREFIX/bin/python3.14t"; say "reusing the interpreter built earlier: $PYTHON"; return 0
    fi
    return 1
}

try_uv() {
    command -v uv >/dev/null 2>&1 || return 1
    say "trying: uv python install 3.14t"
    if uv python install 3.14t >&2; then
        local p
        p="$(uv python find 3.14t 2>/dev/null || true)"
        if [ -n "$p" ] && is_free_threaded "$p"; then PYTHON="$p"; say "uv gave $PYTHON"; return 0; fi
    fi
    say "uv could not provide a free-threaded 3.14; falling back to a source build"
    return 1
}

# Debian mirror URIs named by this machine's own apt configuration.
debian_mirrors() {
    {
        grep -hE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -E 's/^[[:space:]]*URIs:[[:space:]]*//' | tr ' ' '\n'
        grep -hE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | sed -E 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/'
    } | grep -E '^https?://' | grep -v -- '-security' | sed -E 's#/+$##' | awk '!seen[$0]++'
}

fetch_source() {
    local dest="$1" url
    local urls=("https://www.python.org/ftp/python/${CPYTHON_VERSION}/Python-${CPYTHON_VERSION}.tar.xz")
    while IFS= read -r m; do
        [ -n "$m" ] && urls+=("$m/pool/main/p/python3.14/python3.14_${CPYTHON_VERSION}.orig.tar.xz")
    done < <(debian_mirrors)
    for url in "${urls[@]}"; do
        say "downloading $url"
        if curl -fsSL --connect-timeout 10 --retry 2 -o "$dest.part" "$url"; then
            if echo "$CPYTHON_SHA256  $dest.part" | sha256sum -c --status; then
                mv "$dest.part" "$dest"; say "sha256 verified"; return 0
            fi
            say "sha256 mismatch for $url; discarding it"
        fi
        rm -f "$dest.part"
    done
    die "could not download a verified CPython ${CPYTHON_VERSION} source tarball (tried: ${urls[*]})"
}

install_build_deps() {
    local pkgs=(build-essential pkg-config libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev
                libsqlite3-dev libreadline-dev uuid-dev)
    local missing=() p
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        say "installing build dependencies: ${missing[*]}"
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2 \
            || die "apt-get could not install: ${missing[*]}"
    else
        say "warning: missing build dependencies (${missing[*]}); not root, so continuing without them"
    fi
}

build_from_source() {
    mkdir -p "$CACHE"
    local tarball="$CACHE/Python-${CPYTHON_VERSION}.tar.xz"
    [ -f "$tarball" ] && echo "$CPYTHON_SHA256  $tarball" | sha256sum -c --status || fetch_source "$tarball"
    install_build_deps
    local src; src="$(mktemp -d "$CACHE/build.XXXXXX")"
    tar -xJf "$tarball" -C "$src" --strip-components=1
    say "building CPython ${CPYTHON_VERSION} with --disable-gil into $PREFIX (about 3 minutes on 2 cores)"
    local log="$CACHE/build-${CPYTHON_VERSION}t.log"
    (
        cd "$src"
        ./configure --disable-gil --prefix="$PREFIX" >"$log" 2>&1
        make -j"$(nproc)" >>"$log" 2>&1
        make install >>"$log" 2>&1
    ) || die "CPython build failed; see $log"
    rm -rf "$src"
    is_free_threaded "$PREFIX/bin/python3.14t" || die "the build in $PREFIX is not free-threaded; see $log"
    PYTHON="$PREFIX/bin/python3.14t"
    say "built $PYTHON"
}

ensure_venv() {
    local vpy="$VENV/bin/python"
    if [ -x "$vpy" ] && ! is_free_threaded "$vpy"; then
        say "$VENV is not free-threaded; recreating it"
        rm -rf "$VENV"
    fi
    make_venv "$PYTHON" "$VENV"
    install_project "$VENV" "$EXTRAS" "first time: torch is large, a few minutes"
}

main() {
    PYTHON=""
    find_interpreter || try_uv || build_from_source
    if [ "${1:-}" = "--interpreter-only" ]; then echo "$PYTHON"; return 0; fi
    ensure_venv
    "$VENV/bin/python" -c 'import sys; print(f"[bootstrap] ready: Python {sys.version.split()[0]}, GIL enabled: {sys._is_gil_enabled()}", file=sys.stderr)'
    echo "$VENV/bin/python"
}

main "$@"
