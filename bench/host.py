"""Facts about the code and the machine that benchmark files record beside their figures."""

from __future__ import annotations

import contextlib
import platform
import subprocess
from pathlib import Path

__all__ = ["code_commit", "cpu_model"]

ROOT = Path(__file__).resolve().parent.parent


def code_commit() -> str:
    """The commit being measured, ``-dirty`` if the code differs from it. A copy of the
    working tree on another machine has no git metadata: then the commit the offline
    bundle was built from (``dist/bundle/MANIFEST.txt``), else ``unknown``."""
    def git(*args: str) -> str:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=20, check=False)
            return done.stdout.strip() if done.returncode == 0 else ""
        return ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        with contextlib.suppress(OSError):
            for line in (ROOT / "dist" / "bundle" / "MANIFEST.txt").read_text().splitlines():
                if line.startswith("from commit "):
                    return line.removeprefix("from commit ").strip() + " (the bundle's)"
        return "unknown"
    if git("status", "--porcelain", "--", "seer", "workloads", "bench/*.py"):
        commit += "-dirty"
    return commit


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (``platform.processor()`` elsewhere)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()
