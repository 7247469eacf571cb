"""Facts about the interpreter that decide whether threads can give a speed-up.

SEER only pays off on a free-threaded CPython (3.14t) with the GIL actually disabled: a
free-threaded build re-enables the GIL at run time when an extension module that does not
declare free-threading support is imported, or when ``PYTHON_GIL=1`` is set.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import warnings

__all__ = [
    "EXTRA_MODULES",
    "GILWarning",
    "cpu_count",
    "free_threaded_build",
    "gil_disabled",
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
                "module without free-threading support was imported)"
            )
            warnings.warn(
                f"SEER was asked for {threads} threads but the GIL is enabled: {why}. "
                "Results are still exact, but there will be no speed-up over 1 thread.",
                GILWarning,
                stacklevel=3,
            )
    return True


#: Third-party modules the project and its extras import; all must keep the GIL disabled.
EXTRA_MODULES = (
    "numpy", "atomics", "cffi",
    "torch", "xgboost",
    "pettingzoo", "gymnasium",
    "pyperf", "matplotlib", "tqdm",
    "pytest", "pytest_benchmark", "pytest_timeout", "pytest_run_parallel", "hypothesis",
)


def project_modules() -> list[str]:
    """Every importable module of the ``seer`` and ``workloads`` packages."""
    import importlib
    import pkgutil

    names = []
    for top in ("seer", "workloads"):
        try:
            package = importlib.import_module(top)
        except ImportError:
            continue
        names.append(top)
        names.extend(m.name for m in pkgutil.walk_packages(package.__path__, top + "."))
    return names


def import_and_check_gil(modules: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """Import ``modules`` one by one; return ``(missing, reenabled)``: the modules that could
    not be imported, and the first module after whose import the GIL was enabled (empty
    when the GIL stayed disabled, or when this is not a free-threaded build)."""
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
