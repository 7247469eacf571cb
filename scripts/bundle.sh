#!/usr/bin/env bash
# Build dist/bundle/: everything needed to run this project on a machine with no network
# (the many-core machine of docs/manycore.md), at most 60 MiB:
#
#   dist/bundle/python.tar.xz   the free-threaded CPython that scripts/bootstrap.sh provides,
#                               stripped (no test suite, static library, headers, idle,
#                               tkinter, turtle, caches; debug symbols removed), plus a few
#                               shared libraries it links against, used only where the
#                               target machine lacks them
#   dist/bundle/wheels/         numpy, atomics, cffi, threadpoolctl, pyperf, tqdm, setuptools (to install
#                               the project offline) and, if everything still fits,
#                               matplotlib: the versions installed in .venv, for cp314t
#   dist/bundle/run.sh          unpack, make a venv, install the wheels and the project
#                               offline, check the GIL is off, run a command in the repo
#   dist/bundle/MANIFEST.txt    what is inside, with sha256 sums
#
# Usage: scripts/bundle.sh [--no-matplotlib] [--out DIR] [--write-run-sh PATH]
#   then: dist/bundle/run.sh python -m seer.cli info
set -euo pipefail
LOG_TAG=bundle
# shellcheck source=scripts/venv-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/venv-lib.sh"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/dist/bundle"
VENV="${SEER_VENV:-$ROOT/.venv}"
LIMIT_MIB=60
MATPLOTLIB=auto  # auto: include it unless the bundle would exceed LIMIT_MIB
WRITE_RUN_SH=
# What the study needs; matplotlib (and what only it needs) is added after these.
CORE_PACKAGES=(numpy atomics cffi threadpoolctl pyperf tqdm setuptools)
# Shared libraries of the standard library's extension modules that a minimal Linux
# image may lack; run.sh puts them on LD_LIBRARY_PATH only if an import fails without.
FALLBACK_LIBS=(libffi.so.8 libz.so.1 libssl.so.3 libcrypto.so.3 liblzma.so.5 libbz2.so.1.0
               libuuid.so.1 libexpat.so.1)

while [ $# -gt 0 ]; do
    case "$1" in
        --no-matplotlib) MATPLOTLIB=no ;;
        --out) OUT="$2"; shift ;;
        # Only write run.sh to the path given (the tests check it without a bundle).
        --write-run-sh) WRITE_RUN_SH="$2"; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' \
                       "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
done

# The interpreter bootstrap uses (it builds or finds one if needed), and its install prefix.
interpreter_prefix() {
    local py
    py="$("$ROOT/scripts/bootstrap.sh" --interpreter-only)" || die "bootstrap.sh failed"
    "$py" -c 'import sys, sysconfig
assert sysconfig.get_config_var("Py_GIL_DISABLED") == 1, "not a free-threaded build"
print(sys.base_prefix)'
}

# stage_interpreter PREFIX DEST: copy PREFIX to DEST and remove what running does not need.
stage_interpreter() {
    local prefix="$1" dest="$2" lib
    cp -a "$prefix/." "$dest/"
    lib="$(echo "$dest"/lib/python3.*t)"
    [ -d "$lib" ] || die "no lib/python3.*t in $prefix"
    # Static library (twice), headers, man pages, the test suite and GUI/IDE modules:
    # together about 90 % of the install, none of it used to run or to make a venv.
    rm -rf "$dest"/lib/libpython3.*.a "$lib"/config-*/libpython3.*.a "$dest/include" \
        "$dest/share" "$lib/test" "$lib/idlelib" "$lib/tkinter" "$lib/turtledemo" \
        "$lib/turtle.py" "$lib"/lib-dynload/_tkinter.* "$lib"/lib-dynload/_test*.so \
        "$lib"/lib-dynload/_ctypes_test.*.so "$lib"/lib-dynload/xx*.so \
        "$lib"/lib-dynload/_xxtestfuzz.*.so
    # pip in the base interpreter: the venv gets its own from ensurepip's bundled wheel
    # (kept: `python -m venv` needs it).
    find "$lib/site-packages" -mindepth 1 -maxdepth 1 ! -name README.txt -exec rm -rf {} +
    find "$dest" -name __pycache__ -type d -prune -exec rm -rf {} +
    # Scripts whose #! names the build prefix: they would not work once moved.
    find "$dest/bin" -mindepth 1 ! -name 'python3*' -delete
    rm -f "$dest"/bin/python3*-config
    # python3.14 and python3.14t are hard links of one file: strip one, link the other.
    local exe
    exe="$(find "$dest/bin" -name 'python3.*t' -type f | head -n 1)"
    [ -n "$exe" ] || die "no python3.*t executable in $prefix/bin"
    if command -v strip >/dev/null; then
        strip --strip-unneeded "$exe" "$lib"/lib-dynload/*.so
    else
        say "warning: no strip; the bundle keeps debug symbols (larger)"
    fi
    local name
    for name in python3 "$(basename "${exe%t}")"; do
        [ "$name" = "$(basename "$exe")" ] && continue
        rm -f "$dest/bin/$name"
        ln -s "$(basename "$exe")" "$dest/bin/$name"
    done
    mkdir -p "$dest/lib/seer-fallback"
    local so path
    for so in "${FALLBACK_LIBS[@]}"; do
        path="$(ldconfig -p 2>/dev/null | awk -v n="$so" '$1 == n && /x86-64/ {print $NF; exit}')"
        if [ -n "$path" ] && [ -f "$path" ]; then
            cp -L "$path" "$dest/lib/seer-fallback/$so"
        else
            say "warning: $so not found here; not bundled as a fallback"
        fi
    done
}

# download_wheels DIR PACKAGE...: binary wheels of PACKAGE... and their dependencies, at
# the versions installed in the venv, for this interpreter (cp314t, this platform).
download_wheels() {
    local dir="$1"; shift
    local pins log
    pins="$(mktemp)"; log="$(mktemp)"
    "$VENV/bin/python" -m pip freeze --exclude-editable >"$pins"
    # The log holds pip's chatter (warnings about this machine's index configuration);
    # it is shown only when the download fails.
    if ! "$VENV/bin/python" -m pip download --disable-pip-version-check --only-binary=:all: \
            -c "$pins" -d "$dir" "$@" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        rm -f "$pins" "$log"
        die "pip download $* failed"
    fi
    rm -f "$pins" "$log"
}

write_run_sh() {
    cat >"$1" <<'RUN'
#!/usr/bin/env bash
# Run a command of this repository with the bundled free-threaded Python, offline.
#
#   dist/bundle/run.sh python -m seer.cli info
#   dist/bundle/run.sh bash scripts/manycore-run.sh "$OUT/manycore"
#
# Unpacks python.tar.xz into a temporary directory, makes a venv with it, installs
# wheels/*.whl and the project (from the working tree) with pip --no-index, checks that the
# GIL is disabled (exits 3 if not), runs the command in the repository root with the venv
# first on PATH, removes the temporary directory and exits with the command's status.
#
# SEER_BUNDLE_ENV=DIR keeps the environment in DIR and reuses it on later calls (a second
# call starts in about a second). SEER_REPO=DIR runs in another checkout (default: the
# repository this bundle lies in, dist/bundle/../..).
set -euo pipefail
say() { printf '[bundle] %s\n' "$*" >&2; }
die() { printf '[bundle] error: %s\n' "$*" >&2; exit "${2:-1}"; }

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="${SEER_REPO:-$(cd "$HERE/../.." && pwd)}"
[ -f "$REPO/pyproject.toml" ] || die "no pyproject.toml in $REPO (set SEER_REPO)"
[ $# -gt 0 ] || die "usage: $0 COMMAND [ARG...]"
[ "${PYTHON_GIL:-}" = 1 ] && die "PYTHON_GIL=1 would enable the GIL; unset it" 3
if [ ! -f "$HERE/python.tar.xz" ] || [ ! -f "$HERE/MANIFEST.txt" ]; then
    die "no python.tar.xz and MANIFEST.txt next to $0: build the bundle with scripts/bundle.sh"
fi

# Nothing from this machine's pip configuration, index or cache: the bundle alone.
export PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_CONSTRAINT PIP_REQUIREMENT \
    PYTHONHOME

if [ -n "${SEER_BUNDLE_ENV:-}" ]; then
    ENV_DIR="$SEER_BUNDLE_ENV"; KEEP=1
else
    ENV_DIR="$(mktemp -d "${TMPDIR:-/tmp}/seer-bundle.XXXXXX")"; KEEP=0
fi
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() { [ "$KEEP" = 1 ] || rm -rf "$ENV_DIR"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PY_HOME="$ENV_DIR/python"
VENV="$ENV_DIR/venv"
# Stamps of what a kept environment holds: the bundle, and the project's sources.
STAMP="$ENV_DIR/.bundle"
WANT="$(cksum <"$HERE/MANIFEST.txt")"
PROJECT_STAMP="$ENV_DIR/.project"
project_sum() {
    (cd "$REPO" && find pyproject.toml seer workloads -type f ! -name '*.pyc' -print0 \
        | sort -z | xargs -0 cat | cksum)
}

unpack() {
    mkdir -p "$ENV_DIR"
    rm -rf "$PY_HOME" "$VENV"
    if command -v xz >/dev/null; then
        tar -xJf "$HERE/python.tar.xz" -C "$ENV_DIR"
    elif command -v python3 >/dev/null; then  # tar without xz: the host's Python can
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
            "$HERE/python.tar.xz" "$ENV_DIR"
    else
        die "need xz (or any python3) to unpack $HERE/python.tar.xz"
    fi
}

# EXE: the bundled interpreter; LD_LIBRARY_PATH gets the fallback libraries only if a
# standard module cannot load without them (not a subshell: the export must last).
interpreter() {
    EXE="$(find "$PY_HOME/bin" -name 'python3.*t' -type f | head -n 1)"
    [ -n "$EXE" ] || die "no python3.*t in $PY_HOME/bin"
    if ! "$EXE" -c 'import ctypes, zlib, hashlib, lzma, bz2, pyexpat' 2>/dev/null; then
        export LD_LIBRARY_PATH="$PY_HOME/lib/seer-fallback${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        say "using the bundled shared libraries ($PY_HOME/lib/seer-fallback)"
        "$EXE" -c 'import ctypes, zlib, hashlib' \
            || die "the bundled Python cannot load its modules here ($(ldd --version 2>&1 | head -n 1))"
    fi
}

setup() {
    local t0=$SECONDS
    unpack
    interpreter
    "$EXE" -m venv "$VENV" >&2 || die "could not create a venv with $EXE"
    # --no-compile: bytecode is compiled on first import; compiling every module of
    # matplotlib and numpy up front costs seconds that a one-off run does not win back.
    "$VENV/bin/python" -m pip install -q --no-index --no-compile --find-links "$HERE/wheels" \
        "$HERE"/wheels/*.whl >&2 || die "installing the bundled wheels failed"
    echo "$WANT" >"$STAMP"
    rm -f "$PROJECT_STAMP"
    say "interpreter and wheels ready in $((SECONDS - t0)) s: $VENV"
}

install_project() {
    local t0=$SECONDS src want
    want="$(project_sum)"
    # The project from the working tree, copied first so that nothing is written into it.
    src="$ENV_DIR/src"
    rm -rf "$src"; mkdir -p "$src"
    cp "$REPO/pyproject.toml" "$REPO/README.md" "$src/"
    cp -r "$REPO/seer" "$REPO/workloads" "$src/"
    find "$src" -name __pycache__ -type d -prune -exec rm -rf {} +
    "$VENV/bin/python" -m pip install -q --no-index --no-deps --no-build-isolation \
        --no-compile "$src" >&2 || die "installing the project failed"
    rm -rf "$src"
    echo "$want" >"$PROJECT_STAMP"
    say "project installed in $((SECONDS - t0)) s"
}

if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
    setup
else
    interpreter  # sets LD_LIBRARY_PATH when the fallback is needed
fi
if [ ! -f "$PROJECT_STAMP" ] || [ "$(cat "$PROJECT_STAMP")" != "$(project_sum)" ]; then
    install_project
fi
export MPLCONFIGDIR="${MPLCONFIGDIR:-$ENV_DIR/mplconfig}" MPLBACKEND="${MPLBACKEND:-Agg}"

# Free-threaded and the GIL still off after importing every compiled dependency.
"$VENV/bin/python" - <<'PY' || die "the GIL is enabled: this run would measure nothing" 3
import importlib.util, sys, sysconfig
import atomics, cffi, numpy  # noqa: F401  (an extension without free-threading support
import seer, seer.queues     # noqa: F401   re-enables the GIL on import)
for extra in ("matplotlib.pyplot", "pyperf", "tqdm"):
    if importlib.util.find_spec(extra.split(".")[0]):
        importlib.import_module(extra)
ok = sysconfig.get_config_var("Py_GIL_DISABLED") == 1 and not sys._is_gil_enabled()
print(f"[bundle] Python {sys.version.split()[0]}, free-threaded build: "
      f"{sysconfig.get_config_var('Py_GIL_DISABLED') == 1}, GIL enabled: "
      f"{sys._is_gil_enabled()}, numpy {numpy.__version__}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY

export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH"
cd "$REPO"
rc=0
"$@" || rc=$?
exit "$rc"
RUN
    chmod +x "$1"
}

size_mib() { du -sm "$1" | cut -f1; }

main() {
    if [ -n "$WRITE_RUN_SH" ]; then write_run_sh "$WRITE_RUN_SH"; return 0; fi
    [ -x "$VENV/bin/python" ] || die "no $VENV: run scripts/bootstrap.sh first"
    local prefix stage
    prefix="$(interpreter_prefix)"
    say "interpreter: $prefix"
    rm -rf "$OUT"
    mkdir -p "$OUT/wheels"
    stage="$(mktemp -d)"
    # shellcheck disable=SC2064  # expand $stage now: it is local
    trap "rm -rf '$stage'" EXIT
    mkdir -p "$stage/python"
    stage_interpreter "$prefix" "$stage/python"
    say "compressing the interpreter ($(size_mib "$stage/python") MiB unpacked)"
    tar -C "$stage" -cf - python | xz -T0 -9 >"$OUT/python.tar.xz"
    say "downloading wheels: ${CORE_PACKAGES[*]}"
    download_wheels "$OUT/wheels" "${CORE_PACKAGES[@]}"
    if [ "$MATPLOTLIB" != no ]; then
        local before
        before="$(ls "$OUT/wheels")"
        download_wheels "$OUT/wheels" matplotlib
        write_run_sh "$OUT/run.sh"
        if [ "$(size_mib "$OUT")" -gt "$LIMIT_MIB" ]; then
            say "with matplotlib the bundle is $(size_mib "$OUT") MiB > $LIMIT_MIB: leaving it out"
            local whl
            for whl in "$OUT"/wheels/*.whl; do
                grep -qxF "$(basename "$whl")" <<<"$before" || rm -f "$whl"
            done
        fi
    fi
    write_run_sh "$OUT/run.sh"
    {
        echo "seer-ft offline bundle, built $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/bundle.sh"
        echo "from commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
            [ -z "$(git -C "$ROOT" status --porcelain -- seer workloads bench 2>/dev/null)" ] \
                || echo -dirty)"
        echo "interpreter: $("$prefix"/bin/python3 -c 'import sys; print(sys.version.split()[0])')t from $prefix"
        echo
        (cd "$OUT" && sha256sum python.tar.xz wheels/*.whl)
    } >"$OUT/MANIFEST.txt"
    local size
    size="$(size_mib "$OUT")"
    [ "$size" -le "$LIMIT_MIB" ] || die "the bundle is $size MiB, over $LIMIT_MIB MiB"
    say "wrote $OUT ($size MiB): $(find "$OUT/wheels" -name '*.whl' | wc -l) wheels"
    say "try it: $OUT/run.sh python -m seer.cli info"
}

main
