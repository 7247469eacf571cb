"""Facts about the interpreter that decide whether threads can give a speed-up.

SEER only pays off on a free-threaded CPython (3.14t) with the GIL actually disabled: a
free-threaded build re-enables the GIL at run time when an extension module that does not
declare free-threading support is imported, or when ``PYTHON_GIL=1`` is set. On an
ordinary GIL build (Python >= 3.11) everything still runs and gives the same results; the
few standard-library calls that differ between those versions are wrapped here.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import warnings
from collections.abc import Sequence
from multiprocessing import shared_memory

__all__ = [
    "EXTRA_MODULES",
    "PACKAGES",
    "SHARED_MEMORY_MODE",
    "GILWarning",
    "attach_shared_memory",
    "cpu_count",
    "create_shared_memory",
    "free_threaded_build",
    "gil_disabled",
    "gil_reenabled_by",
    "gil_status",
    "import_and_check_gil",
    "project_modules",
    "warn_if_gil_enabled",
]


class GILWarning(RuntimeWarning):
    """More than one thread was asked for on an interpreter that runs with the GIL."""


def free_threaded_build() -> bool:
    """True when this interpreter was built with ``--disable-gil`` (Py_GIL_DISABLED)."""
    return sysconfig.get_config_var("Py_GIL_DISABLED") == 1


def gil_disabled() -> bool:
    """True when Python threads run in parallel right now: a free-threaded build whose GIL
    has not been re-enabled (by ``PYTHON_GIL=1`` or by importing an extension module that
    does not support free threading)."""
    is_enabled = getattr(sys, "_is_gil_enabled", None)
    return free_threaded_build() and is_enabled is not None and not is_enabled()


# -- which import turned the GIL back on -----------------------------------------------------
# CPython 3.13t/3.14t enables the GIL while loading an extension module that has not declared
# free-threading support (Py_mod_gil), and says so once, as a RuntimeWarning naming the
# module. That warning can be filtered away (-W ignore, pytest, catch_warnings), so the
# record is kept here instead: on a free-threaded build, importing this module wraps
# ``ExtensionFileLoader.create_module`` (where CPython runs that check) to compare
# ``sys._is_gil_enabled()`` before and after each extension module is created. The cost is
# two calls per extension module loaded, nothing per Python module or per step.
# ``import seer`` imports this module before anything but numpy (which supports free
# threading). The warning registry of the import system is the fallback for a module that
# was loaded before this one, or by a loader that is not ExtensionFileLoader.

_GIL_MESSAGE = "The global interpreter lock (GIL) has been enabled to load module '"
_reenabled_by: list[str] = []  # the first module seen turning the GIL on
_gil_on_at_install: bool | None = None  # the GIL was already on when the hook went in


def _record_gil_reenabled(name: str) -> None:
    if not _reenabled_by:  # a racing second append is harmless: the first one is reported
        _reenabled_by.append(name)


def _install_gil_recorder() -> None:
    global _gil_on_at_install
    from importlib.machinery import ExtensionFileLoader

    is_enabled = getattr(sys, "_is_gil_enabled", None)
    if not free_threaded_build() or is_enabled is None:
        return  # nothing to record: the GIL is always on
    original = ExtensionFileLoader.create_module
    if getattr(original, "_seer_gil_recorder", False):
        return  # already wrapped (this module was reloaded)
    _gil_on_at_install = is_enabled()

    def create_module(self: ExtensionFileLoader, spec: object) -> object:
        was_on = is_enabled()
        try:
            return original(self, spec)
        finally:
            if not was_on and is_enabled():
                _record_gil_reenabled(getattr(spec, "name", None) or str(spec))

    create_module._seer_gil_recorder = True  # type: ignore[attr-defined]
    create_module.__wrapped__ = original  # type: ignore[attr-defined]
    create_module.__doc__ = original.__doc__
    ExtensionFileLoader.create_module = create_module  # type: ignore[method-assign]


def _reenabled_by_warning() -> str | None:
    """The module named by CPython's GIL warning, if the import system's warning registry
    still holds it (it does under the default filters, not under ``ignore``/``always``)."""
    for name in ("_frozen_importlib", "importlib._bootstrap"):
        registry = getattr(sys.modules.get(name), "__warningregistry__", None) or {}
        for key in list(registry):
            text = key[0] if isinstance(key, tuple) and key else None
            if isinstance(text, str) and text.startswith(_GIL_MESSAGE):
                return text[len(_GIL_MESSAGE):].split("'", 1)[0]
    return None


def _gil_forced_on() -> bool:
    """``PYTHON_GIL=1`` or ``-X gil=1`` (3.13+)."""
    return getattr(sys.flags, "gil", None) == 1


def gil_reenabled_by() -> str | None:
    """The name of the extension module whose import turned the GIL back on in this
    process (``'triton._C.libtriton'``, say), or None: the GIL is off, this is not a
    free-threaded build, it was on from the start (``PYTHON_GIL=1``, ``-X gil=1``), or the
    module is not known.

    Contract: every extension module loaded after ``seer.platform`` was imported (``import
    seer`` imports it before anything but numpy) is seen, whatever the warnings filters;
    for earlier imports the name comes from CPython's RuntimeWarning when the default
    warnings filters were in force. The first module seen turning the GIL on is
    reported."""
    if not free_threaded_build() or gil_disabled() or _gil_forced_on():
        return None
    if _reenabled_by:
        return _reenabled_by[0]
    return _reenabled_by_warning()


def gil_status() -> str:
    """One line on the GIL, as ``seer info`` prints it: ``disabled``, or ``ENABLED`` and
    why (which module, ``PYTHON_GIL=1``, or not a free-threaded build)."""
    if gil_disabled():
        return "disabled"
    if not free_threaded_build():
        why = ": not a free-threaded build"
    elif _gil_forced_on():
        why = " by PYTHON_GIL=1 or -X gil=1"
    elif (module := gil_reenabled_by()) is not None:
        why = f" by module {module!r}, which does not declare free-threading support"
    elif _gil_on_at_install:
        why = " by a module imported before seer (python -W always names it)"
    else:
        why = " by a module not seen loading (python -W always names it)"
    return f"ENABLED{why} (threads give no speed-up)"


_install_gil_recorder()


def cpu_count() -> int:
    """CPUs this process may run on (respects affinity masks and container limits)."""
    if hasattr(os, "process_cpu_count"):
        return os.process_cpu_count() or 1
    return os.cpu_count() or 1


_warned = False
_warn_lock = threading.Lock()


def warn_if_gil_enabled(threads: int) -> bool:
    """Warn once per process when ``threads > 1`` is requested but the GIL is enabled.

    Returns True when the warning applies (whether or not it was printed this time).
    Results stay correct with the GIL; only the speed-up is lost.
    """
    global _warned
    if threads <= 1 or gil_disabled():
        return False
    with _warn_lock:
        if not _warned:
            _warned = True
            why = (
                "this is not a free-threaded build (use python3.14t)"
                if not free_threaded_build()
                else "the GIL was re-enabled at run time (PYTHON_GIL=1, or an extension "
                "module without free-threading support was imported; on 3.13t that is "
                "cffi, which supports only the 3.14 free-threaded build: use python3.14t)"
            )
            warnings.warn(
                f"SEER was asked for {threads} threads but the GIL is enabled: {why}. "
                "Results are still exact, but there will be no speed-up over 1 thread.",
                GILWarning,
                stacklevel=_caller_outside_seer(),
            )
    return True


def _caller_outside_seer() -> int:
    """The ``stacklevel`` that makes a warning from a caller of this function point at the
    first frame outside the ``seer`` package (the user's code), however deep the runtime's
    constructors are."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = sys._getframe(2)  # the caller of the function that warns
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back
        level += 1
    return level


#: Third-party packages of the project and its extras, core dependencies first, as
#: ``(distribution, import name)``: ``seer info`` reports the distributions' versions, and
#: the test suite's GIL guard imports the modules (none may re-enable the GIL).
PACKAGES = (
    ("numpy", "numpy"), ("atomics", "atomics"), ("cffi", "cffi"),
    ("threadpoolctl", "threadpoolctl"),
    ("torch", "torch"), ("xgboost", "xgboost"),
    ("pettingzoo", "pettingzoo"), ("gymnasium", "gymnasium"), ("scipy", "scipy"),
    ("pyperf", "pyperf"), ("matplotlib", "matplotlib"), ("tqdm", "tqdm"),
    ("dask", "dask"), ("distributed", "distributed"), ("cryptography", "cryptography"),
    ("pytest", "pytest"), ("pytest-benchmark", "pytest_benchmark"),
    ("pytest-timeout", "pytest_timeout"), ("pytest-run-parallel", "pytest_run_parallel"),
    ("hypothesis", "hypothesis"),
)

#: The import names of :data:`PACKAGES`.
EXTRA_MODULES = tuple(module for _distribution, module in PACKAGES)


def project_modules(packages: Sequence[str] = ("seer",)) -> list[str]:
    """Every module of the top-level ``packages``, each package before its modules. A
    package that cannot be imported is listed alone, so that importing it (as
    :func:`import_and_check_gil` does) reports why. The test suite's GIL guard passes the
    repository's packages; seer names none but its own."""
    import importlib
    import pkgutil

    names = []
    for top in packages:
        names.append(top)
        try:
            package = importlib.import_module(top)
        except ImportError:
            continue
        names.extend(m.name for m in pkgutil.walk_packages(package.__path__, top + "."))
    return names


def import_and_check_gil(modules: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """Import ``modules`` one by one; return ``(missing, reenabled)``: the modules that could
    not be imported, and the first module after whose import the GIL was enabled (empty
    when the GIL stayed disabled, or when this is not a free-threaded build).
    :func:`gil_reenabled_by` then names the extension module that did it (``torch._dynamo``
    re-enables it through ``triton._C.libtriton``, say)."""
    import importlib

    missing: list[str] = []
    reenabled: list[str] = []
    is_enabled = getattr(sys, "_is_gil_enabled", lambda: True)
    was_disabled = free_threaded_build() and not is_enabled()
    for name in modules:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(name)
        except ImportError as exc:
            missing.append(f"{name} ({exc})")
            continue
        if was_disabled and not reenabled and is_enabled():
            reenabled.append(name)
    return missing, reenabled


# Names of the shared-memory blocks this process created, so that attaching to one of them
# again (before Python 3.13) leaves its resource-tracker registration in place.
_created_here: set[str] = set()


#: Permissions of every shared-memory block this project creates: its owner's only.
SHARED_MEMORY_MODE = 0o600


def create_shared_memory(size: int) -> shared_memory.SharedMemory:
    """A new ``multiprocessing.shared_memory`` block of ``size`` bytes under a fresh name,
    readable and writable by its owner only (:data:`SHARED_MEMORY_MODE`, on POSIX); the
    caller closes and unlinks it. Use it with :func:`attach_shared_memory`."""
    shm = shared_memory.SharedMemory(create=True, size=size)
    try:
        _owner_only(shm)
    except BaseException:
        shm.close()
        shm.unlink()
        raise
    _created_here.add(shm.name)
    return shm


def _owner_only(shm: shared_memory.SharedMemory) -> None:
    """Make the POSIX shm object behind ``shm`` mode 0o600, through its descriptor.

    CPython creates it with 0o600 minus the umask, which can only take bits away, so no
    other user could open it between creation and this call; fchmod sets the mode
    exactly (a umask of 0o277 would leave 0o400) and is not subject to the umask. It
    runs before the name is returned, so before any other process is told the name.
    Windows named memory has no mode (its ACL is the creator's): nothing to do there."""
    fd = getattr(shm, "_fd", -1)
    if fd < 0:
        return
    if os.fstat(fd).st_mode & 0o777 != SHARED_MEMORY_MODE:
        os.fchmod(fd, SHARED_MEMORY_MODE)
    mode = os.fstat(fd).st_mode & 0o777
    if mode != SHARED_MEMORY_MODE:
        raise PermissionError(f"shared-memory block {shm.name!r} has mode {mode:#o} after "
                              f"fchmod to {SHARED_MEMORY_MODE:#o}")


def attach_shared_memory(name: str) -> shared_memory.SharedMemory:
    """Attach to the existing block ``name`` without letting this process unlink it at
    exit: the creating process owns the block. The caller only closes it.

    Python >= 3.13 says so with ``track=False``. Before 3.13 attaching registers the block
    with this process's resource tracker, which would unlink it when this process exits
    (gh-82300), so the registration is withdrawn again, unless this process created the
    block with :func:`create_shared_memory` (then it is the creator's, and stays)."""
    if sys.version_info >= (3, 13):
        return shared_memory.SharedMemory(name=name, track=False)
    from multiprocessing import resource_tracker

    shm = shared_memory.SharedMemory(name=name)
    if shm.name not in _created_here:
        resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
    return shm
