"""Stress testing on real threads, free-running: the complement of exploration.

:func:`run_threads` starts ``n`` threads together (a barrier) and re-raises the first
failure. It finds what happens at full speed on the real hardware (the fast path), but a
failure it meets carries no schedule: when it finds something, find it again with
:func:`seer.check.explore` to get one that replays.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["run_threads"]


def run_threads(n: int, target: Callable[[int], Any], timeout: float = 120.0) -> list[Any]:
    """``[target(0), ..., target(n - 1)]``, each on a thread of its own, all started at
    once; the first exception of any is re-raised, and a thread still running after
    ``timeout`` seconds is an AssertionError."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait()
            results[i] = target(i)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=body, args=(i,), name=f"stress-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), f"{t.name} hung"
    if errors:
        raise errors[0]
    return results
