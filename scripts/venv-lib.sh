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

# install_project VENV EXTRAS [NOTE]: pip install -e "$ROOT[EXTRAS]" into VENV, unless the
# stamp file VENV/.seer-installed says this pyproject.toml and EXTRAS are installed already.
# NOTE is added to the "installing" message.
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
    echo "$want" >"$stamp"
}
