"""The thread stress helper ships in the package: :func:`seer.check.run_threads`."""

from seer.check.stress import run_threads

__all__ = ["run_threads"]
