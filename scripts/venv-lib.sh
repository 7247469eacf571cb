# Shared by scripts/bootstrap.sh and scripts/gil-venv.sh (sourced, not run): messages, and
# creating a venv and installing the project into it editable, reinstalling only when
# pyproject.toml or the extras changed since the last install.
#
# The sourcing script sets LOG_TAG (its name in messages) before sourcing this, and ROOT
# (the repository root) before calling install_project; it checks on its own that its
# interpreter and venv are of the kind it wants before calling make_venv.

# say MESSAGE: "[LOG_TAG] MESSAGE" on stderr. die MESSAGE: "[LOG_TAG] error: MESSAGE" on
# stderr, then exit 1.
say() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }
die() { printf '[%s] error: %s\n' "$LOG_TAG" "$*" >&2; exit 1; }

# make_venv PYTHON VENV [HINT]: create VENV with PYTHON unless VENV/bin/python exists,
# then upgrade pip in it. HINT is added to the error when venv creation fails.
make_venv() {
    local python="$1" venv="$2" hint="${3:-}"
    [ -x "$venv/bin/python" ] && return 0
    say "creating $venv with $python"
    "$python" -m venv "$venv" || die "could not create $venv${hint:+ ($hint)}"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || say "warning: could not upgrade pip"
}

# install_project VENV EXTRAS [NOTE]: pip install -e "$ROOT[EXTRAS]" into VENV (then mpe2,
# see install_mpe2), unless the stamp file VENV/.seer-installed says this pyproject.toml and
# EXTRAS are installed already. NOTE is added to the "installing" message.
install_project() {
    local venv="$1" extras="$2" note="${3:-}"
    local stamp="$venv/.seer-installed" want
    want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1) $extras"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        say "venv is up to date"
        return 0
    fi
    say "installing the project editable with extras [$extras]${note:+ ($note)}"
    local log="$venv/pip-install.log"
    if ! "$venv/bin/python" -m pip install -e "$ROOT[$extras]" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "pip install -e .[$extras] failed; full log: $log"
    fi
    install_mpe2 "$venv" "$extras"
    echo "$want" >"$stamp"
}

# MPE2_VERSION: the mpe2 that workloads/mpe is checked against (tests/workloads/test_mpe.py).
MPE2_VERSION=1.1.1

# install_mpe2 VENV EXTRAS: when EXTRAS include marl (or all), pip install --no-deps
# mpe2==$MPE2_VERSION into VENV. mpe2 requires pygame-ce, which has no free-threaded 3.14
# wheel; its other requirements (pettingzoo, scipy) come with the marl extra, and
# workloads/_compat.py stubs pygame, which it needs only to render. Then checks that
# importing it leaves the GIL as it was (off on a free-threaded build).
install_mpe2() {
    local venv="$1" extras="$2"
    case ",$extras," in
        *,marl,* | *,all,*) ;;
        *) return 0 ;;
    esac
    say "installing mpe2==$MPE2_VERSION without its pygame-ce requirement (--no-deps)"
    local log="$venv/pip-install-mpe2.log"
    if ! "$venv/bin/python" -m pip install --no-deps "mpe2==$MPE2_VERSION" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "pip install --no-deps mpe2==$MPE2_VERSION failed; full log: $log"
    fi
    (cd "$ROOT" && "$venv/bin/python" - <<'PY') || die "mpe2 does not import in $venv (see above)"
import sys
before = sys._is_gil_enabled()
from workloads.mpe.original import import_mpe2_spread
import_mpe2_spread()
if sys._is_gil_enabled() != before:
    sys.exit(f"importing mpe2 turned the GIL {'on' if sys._is_gil_enabled() else 'off'}")
PY
}
