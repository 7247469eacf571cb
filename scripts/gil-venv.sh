#!/usr/bin/env bash
# Provide .venv-gil: the project on an ordinary (GIL) CPython, idempotently.
#
# SEER gives the same results with the GIL as on 3.14t (only the speed-up is lost), so a
# user can develop a model on the Python they already have. `make test` checks that claim
# with a quick equivalence subset run in this venv (see the Makefile's test-gil target).
#
# Interpreter: $SEER_GIL_PYTHON if set, else `python3` on PATH. It must be a GIL build
# (not free-threaded) of Python >= 3.11: numpy>=2.3 needs 3.11 (keep this in step with
# requires-python in pyproject.toml).
# The project is installed editable with the extras in $SEER_GIL_EXTRAS (default: dev,
# which is pytest & co; no torch). A second run finishes in about a second.
#
# Usage: scripts/gil-venv.sh     Prints the venv's python on stdout.
set -euo pipefail
# say, die ([gil-venv] before each message), make_venv and install_project: shared with
# scripts/bootstrap.sh.
LOG_TAG=gil-venv
# shellcheck source=scripts/venv-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/venv-lib.sh"

MIN_VERSION=3.11
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SEER_GIL_VENV:-$ROOT/.venv-gil}"
EXTRAS="${SEER_GIL_EXTRAS:-dev}"

# True when "$1" runs and is an ordinary GIL build of Python >= MIN_VERSION.
is_gil_build() {
    [ -x "$(command -v "$1" 2>/dev/null)" ] || return 1
    "$1" - "$MIN_VERSION" <<'PY' 2>/dev/null
import sys, sysconfig
want = tuple(int(x) for x in sys.argv[1].split("."))
ok = sysconfig.get_config_var("Py_GIL_DISABLED") != 1 and sys.version_info[:2] >= want
sys.exit(0 if ok else 1)
PY
}

# The interpreter's version and real path: when either changes, the venv is rebuilt.
identity() { "$1" -c 'import sys; print(sys.version.split()[0], sys.base_prefix)'; }

find_interpreter() {
    local cand="${SEER_GIL_PYTHON:-python3}"
    is_gil_build "$cand" || die "'$cand' is not an ordinary (GIL) Python >= $MIN_VERSION; set \
SEER_GIL_PYTHON=/path/to/python3.11 (or newer, not free-threaded), or skip this stage with \
SEER_GIL_STAGE=0"
    # Resolve shims (pyenv) to the real interpreter, so the venv does not follow them.
    PYTHON="$("$cand" -c 'import sys; print(sys.executable)')"
    say "using $PYTHON (Python $(identity "$PYTHON" | cut -d' ' -f1), GIL build)"
}

ensure_venv() {
    local vpy="$VENV/bin/python"
    if [ -x "$vpy" ] && { ! is_gil_build "$vpy" || [ "$(identity "$vpy")" != "$(identity "$PYTHON")" ]; }; then
        say "$VENV was made with another interpreter; recreating it"
        rm -rf "$VENV"
    fi
    make_venv "$PYTHON" "$VENV" "on Debian/Ubuntu: apt-get install python3-venv"
    install_project "$VENV" "$EXTRAS"
}

main() {
    PYTHON=""
    find_interpreter
    ensure_venv
    "$VENV/bin/python" -c 'import sys; print(f"[gil-venv] ready: Python {sys.version.split()[0]}, GIL build", file=sys.stderr)'
    echo "$VENV/bin/python"
}

main "$@"
