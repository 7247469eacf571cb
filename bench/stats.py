"""Reading pyperf result files and the statistics the report takes from them; and, for the
parts that time runtimes directly (efficiency, tax, variants), timed steps and ratios paired
by round.

Benchmark names are normalised on load (:func:`bench.labels.normalise_name`), so files
that name a runtime ``seer:2`` read the same as those that name it ``seer(2)``.
"""

from __future__ import annotations

import datetime
import json
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.labels import normalise_name

__all__ = ["Part", "capacity", "load", "paired", "ratios", "run_span", "timed_steps"]

Runs = dict[str, list[list[float]]]


def load(path: Path) -> Runs:
    """benchmark name -> the values of each run (one run per pyperf worker process)."""
    data = json.loads(path.read_text())
    return {normalise_name(b["metadata"]["name"]): [r["values"] for r in b["runs"]
                                                    if r.get("values")]
            for b in data["benchmarks"]}


def run_span(paths: Iterable[Path]) -> str:
    """First and last pyperf run date over all ``paths``, and the minutes between them."""
    dates = []
    for path in paths:
        for b in json.loads(path.read_text())["benchmarks"]:
            dates += [r["metadata"]["date"] for r in b["runs"] if "date" in r.get("metadata", {})]
    if not dates:
        return "no dates recorded"
    first, last = (datetime.datetime.fromisoformat(d) for d in (min(dates), max(dates)))
    minutes = (last - first).total_seconds() / 60
    return f"{first:%Y-%m-%d %H:%M} to {last:%H:%M} UTC, {minutes:.0f} minutes"


class Part(dict):
    """One result file: benchmark name -> median seconds over all values (``part[name]``),
    plus speed-ups paired by round.

    ``speedup(a, b)`` is time(a) / time(b) computed within each round (the two were timed
    minutes apart at most) and then the median over rounds, so a drift of the machine's
    speed between rounds cancels out; ``spread(a, b)`` is the lowest and highest round."""

    def __init__(self, runs: Runs) -> None:
        super().__init__({name: statistics.median(v for run in rs for v in run)
                          for name, rs in runs.items() if any(rs)})
        self.runs = runs

    def _per_round(self, a: str, b: str) -> list[float]:
        ra, rb = self.runs.get(a, []), self.runs.get(b, [])
        if not ra or len(ra) != len(rb):  # not paired: fall back to the medians
            return [self[a] / self[b]] if a in self and b in self else []
        return [statistics.fmean(x) / statistics.fmean(y) for x, y in zip(ra, rb, strict=True)]

    def speedup(self, a: str, b: str) -> float:
        return statistics.median(self._per_round(a, b))

    def spread(self, a: str, b: str) -> tuple[float, float]:
        rounds = self._per_round(a, b)
        return min(rounds), max(rounds)


def capacity(runs: Runs) -> tuple[float, list[float]]:
    """Effective cores (2 threads): over the whole run, and per round."""
    one, two = runs["capacity-1thread"], runs["capacity-2threads"]
    whole = 2 * statistics.median(v for r in one for v in r) / statistics.median(
        v for r in two for v in r)
    per_round = [2 * statistics.fmean(a) / statistics.fmean(b)
                 for a, b in zip(one, two, strict=False)]
    return whole, per_round


def timed_steps(runtime: Any, actions: list[Any], steps: int,
                cpu_clock: Callable[[], float] = time.process_time) -> tuple[float, float]:
    """Wall and CPU seconds (``cpu_clock``: the process's by default, ``time.thread_time``
    for one thread's) per step of ``runtime`` stepping ``actions[1..steps]``, after the
    caller's reset and warm-up step with ``actions[0]``."""
    c0, t0 = cpu_clock(), time.perf_counter()
    for t in range(steps):
        runtime.step(actions[t + 1])
    return (time.perf_counter() - t0) / steps, (cpu_clock() - c0) / steps


def ratios(a: list[float], b: list[float]) -> list[float]:
    """``a[r] / b[r]`` for every round ``r``."""
    return [x / y for x, y in zip(a, b, strict=True)]


def paired(a: list[float], b: list[float]) -> float:
    """Median over rounds of ``a[r] / b[r]``."""
    return statistics.median(ratios(a, b))
