"""Stress testing on real threads, free-running: the complement of exploration.

:func:`run_threads` starts ``n`` threads together (a barrier) and re-raises the first
failure; :func:`audit_claims` stresses an assignment strategy's claimers over many windows
on real threads. It finds what happens at full speed on the real hardware (the fast path),
but a failure it meets carries no schedule: when it finds something, find it again with
:func:`seer.check.explore` to get one that replays.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from seer.queues import ParallelExecutiveList

__all__ = ["audit_claims", "run_threads"]


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


def audit_claims(assignment: Any, threads: int, *, windows: int = 40,
                 n_entities: int = 4000, seed: int = 0, path: str | None = None,
                 timeout: float = 60.0) -> tuple[int, int]:
    """Stress ``assignment`` without a runtime: publish ``windows`` random windows whose
    homes are uneven (most items on thread 0, so the others must steal) and let
    ``threads`` threads claim each one at once, like the pool does. Raises AssertionError
    naming the first window where an item was handed out twice or never. Returns the
    total ``(claims, steals)``."""
    pel = ParallelExecutiveList.create(n_entities, segments=threads)
    rng = np.random.default_rng(seed)
    published: list[np.ndarray] = []
    got: list[list[list[np.ndarray]]] = [[[] for _ in range(windows)] for _ in range(threads)]
    claimers = [assignment.claimer(pel, i, threads, path) for i in range(threads)]
    start, end = threading.Barrier(threads, timeout=timeout), threading.Barrier(threads,
                                                                                 timeout=timeout)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        claimer = claimers[t]
        try:
            for w in range(windows):
                if t == 0:  # the coordinator publishes between windows
                    size = int(rng.integers(20, n_entities // 2))
                    home0 = rng.integers(0, n_entities // threads, size) * threads
                    ready = np.unique(np.concatenate(
                        [home0, rng.integers(0, n_entities, size // 4)]))
                    published.append(ready)
                    assignment.publish(pel, ready, threads, n_entities)
                start.wait()  # stands in for the pool's hand-off
                claimer.reset(threads)
                while (r := claimer.claim()) is not None:
                    got[t][w].append(pel.items[r[0]:r[1]].copy())
                end.wait()  # stands in for the window barrier
        except BaseException as exc:
            errors.append(exc)
            start.abort()
            end.abort()

    pool = [threading.Thread(target=work, args=(t,), name=f"audit-{t}")
            for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    if errors:
        raise errors[0]
    bad = []
    for w, ready in enumerate(published):
        parts = [a for t in range(threads) for a in got[t][w]]
        taken = np.concatenate(parts) if parts else np.empty(0, np.int64)
        ids, counts = np.unique(taken, return_counts=True)
        twice, never = ids[counts > 1], np.setdiff1d(ready, ids)
        if len(twice) or len(never):
            bad.append(f"window {w} of {len(ready)} items: {len(twice)} handed out more "
                       f"than once (e.g. {twice[:5].tolist()}), {len(never)} never handed "
                       f"out (e.g. {never[:5].tolist()})")
    if bad:
        raise AssertionError(f"{assignment.name} on {threads} threads: {len(bad)} of "
                             f"{windows} windows wrong; first: {bad[0]}")
    return (sum(c.claims for c in claimers), sum(c.steals for c in claimers))
