"""Session-wide checks: with SEER_REQUIRE_NOGIL=1 (CI sets it) the suite refuses to run
unless every project module and every extra imports with the GIL still disabled."""

from __future__ import annotations

import os
import sys

import pytest

from seer import platform as seer_platform

#: The repository's importable packages: the GIL guard imports every module of them.
#: seer itself names none but its own (docs/architecture.md), so the list lives here.
PROJECT_PACKAGES = ("seer", "workloads")


def pytest_report_header(config: pytest.Config) -> list[str]:
    build = "free-threaded" if seer_platform.free_threaded_build() else "GIL build"
    gil = "disabled" if seer_platform.gil_disabled() else "ENABLED"
    return [f"seer: Python {sys.version.split()[0]} ({build}), GIL {gil}, "
            f"{seer_platform.cpu_count()} cores"]


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("SEER_REQUIRE_NOGIL") != "1":
        return
    modules = (seer_platform.project_modules(PROJECT_PACKAGES)
               + list(seer_platform.EXTRA_MODULES))
    missing, reenabled = seer_platform.import_and_check_gil(modules)
    problems = []
    if not seer_platform.free_threaded_build():
        problems.append(f"{sys.executable} is not a free-threaded build (need python3.14t)")
    if reenabled:
        problems.append(f"importing {reenabled[0]!r} re-enabled the GIL")
    elif not seer_platform.gil_disabled():  # sys._is_gil_enabled is 3.13+
        problems.append("the GIL is enabled (PYTHON_GIL=1 or a plugin import?)")
    if missing:
        problems.append("could not import: " + "; ".join(missing))
    if problems:
        pytest.exit("SEER_REQUIRE_NOGIL=1: " + " | ".join(problems), returncode=3)
    print(f"\nseer: {len(modules)} modules imported, GIL still disabled: "
          f"sys._is_gil_enabled() = {sys._is_gil_enabled()}")
