"""The lab's one base: the project's workloads by name, labels, host facts, result and
pyperf files, and the tables the reports print. The timing itself is the product's
(:mod:`seer.benchmark`: timed steps, paired rounds, the ceiling, capacity, state digests),
so a study here and ``seer bench`` on a user's model measure the same way.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import seer
from seer.benchmark import (
    capacity_now,
    compare,
    on_threads,
    paired,
    parse_runtime,
    ratios,
    runtime_label,
    state_digest,
    timed_steps,
)

__all__ = ["ROOT", "capacity_now", "code_commit", "compare", "config_name", "cpu_model",
           "finish", "host_facts", "interleaved", "label", "load", "make_model", "on_threads",
           "paired", "parse_runtime", "ratios", "record", "save_figure", "state_digest",
           "table", "timed_steps", "write_json"]

ROOT = Path(__file__).resolve().parent.parent
label = runtime_label  # the short name every study uses

#: every runtime, in table order; serial first (the baseline of every ratio)
ALL = ["serial", "seer(1)", "seer(2)", "static(2)", "static-block(2)", "global(2)",
       "executor(2)", "optimistic(2)"]
#: SEER and the pooled peers it is measured against
PEERS = ["serial", "seer(2)", "static(2)", "static-block(2)", "global(2)", "optimistic(2)"]
WORKLOADS = ("bench", "aircraft", "pcs", "empty", "pursuit")


# -- models ----------------------------------------------------------------------------------
def make_model(workload: str, entities: int, cost: float, fanout: int = 1,
               gain: float = 2.0) -> seer.Model:
    """One of the project's workloads at a size: ``bench`` (BenchModel, ``cost`` µs per
    event), ``aircraft``, ``pcs`` (a square grid of about ``entities`` cells, hotspot peak
    ``gain``), ``empty`` (EmptyModel, scheduler overhead) or ``pursuit``."""
    from workloads.synthetic import BenchModel, EmptyModel

    if workload == "aircraft":
        from workloads.aircraft import Aircraft

        return Aircraft(entities, cost_us=cost)
    if workload == "pcs":
        from workloads.pcs import PCS

        side = round(entities ** 0.5)
        return PCS(side, side, cost_us=cost, hotspot_gain=gain)
    if workload == "empty":
        return EmptyModel(entities, per_step=10)
    if workload == "pursuit":
        from workloads.pursuit import Pursuit

        # One pursuer in five, as at the reference size (5000 entities: 1000 pursuers,
        # 4000 evaders on 256x256); the grid grows with the square root of the count.
        side = max(8, round(256 * (entities / 5000) ** 0.5))
        return Pursuit(x_size=side, y_size=side, n_pursuers=max(1, entities // 5),
                       n_evaders=entities - max(1, entities // 5), max_cycles=10**6)
    if workload == "bench":
        return BenchModel(entities, cost_us=cost, fanout=fanout)
    raise ValueError(f"unknown workload {workload!r}; choose one of {WORKLOADS}")


def config_name(workload: str, entities: int, cost: float, gain: float) -> str:
    """Benchmark name prefix, e.g. ``aircraft-n800-cost200us`` or
    ``pcs-n1600-cost15us-gain2``."""
    prefix = "step" if workload == "bench" else workload
    name = f"{prefix}-n{entities}-cost{cost:g}us"
    return f"{name}-gain{gain:g}" if workload == "pcs" else name


def interleaved(steppers: dict[str, Callable[[int], Any]], steps: int,
                 bar: Any = None) -> dict[str, float]:
    """Median wall time of each ``stepper(t)``, for t = 1..steps after a warm-up call at
    t = 0. The steppers take turns every step, so that a shared machine's drift lands on
    all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in steppers}
    for t in range(steps + 1):
        for name, step in steppers.items():
            t0 = time.perf_counter()
            step(t)
            if t:
                times[name].append(time.perf_counter() - t0)
        if t and bar is not None:
            bar.update(1)
    return {name: statistics.median(v) for name, v in times.items()}


# -- host and code facts ---------------------------------------------------------------------
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


def host_facts() -> dict[str, Any]:
    """Interpreter (``seer info``), GIL state, CPU model, cores, load, commit and command:
    what every result file records beside its figures."""
    from seer.cli import interpreter_facts
    from seer.sched import RUNTIMES

    return {
        "interpreter": interpreter_facts(),
        "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)(),
        "executable": sys.executable, "cores": seer.cpu_count(),
        "os_cpu_count": os.cpu_count(), "cpu_model": cpu_model(),
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else [],
        "commit": code_commit(), "runtimes_known": sorted(RUNTIMES), "argv": sys.argv,
        "date": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
    }


def record(module: str, argv: Sequence[str] | None, **fields: Any) -> dict[str, Any]:
    """The head of a study's result file: the command that wrote it (``argv``: its
    arguments, ``sys.argv[1:]`` when None) and :func:`host_facts` (date, commit, cores,
    load), then ``fields``."""
    words = [_relative(w) for w in (sys.argv[1:] if argv is None else argv)]
    return {"command": shlex.join(["python", "-m", module, *words]), "host": host_facts(),
            **fields}


def _relative(word: str) -> str:
    """A path inside the checkout as the checkout's relative path (a result file names no
    path of the machine it ran on); any other word unchanged."""
    if os.path.isabs(word):
        with contextlib.suppress(ValueError):
            return str(Path(word).relative_to(ROOT))
    return word


def finish(path: Path | None, result: dict[str, Any], lines: Iterable[str]) -> None:
    """Write ``result`` to ``path`` (when given), print its summary ``lines`` and where it
    went."""
    if path is not None:
        write_json(Path(path), result)
    print("\n".join(lines) + (f"\nwrote {path}" if path is not None else ""))


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically: a run killed mid-write leaves no half file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=float) + "\n")
    os.replace(tmp, path)


# -- pyperf files ----------------------------------------------------------------------------
Runs = dict[str, list[list[float]]]


def load(path: Path) -> Runs:
    """benchmark name -> the values of each run (one run per pyperf worker process)."""
    data = json.loads(path.read_text())
    # pyperf keeps metadata shared by every benchmark of a file (with one benchmark: all of
    # it, its name too) at the file's level
    shared = data.get("metadata", {})
    return {{**shared, **b.get("metadata", {})}["name"]:
            [r["values"] for r in b["runs"] if r.get("values")]
            for b in data["benchmarks"]}


def save_figure(fig: Any, where: Path, name: str, **savefig: Any) -> list[str]:
    """Lay out ``fig`` (a matplotlib Figure with a canvas), write it to ``where/name``;
    return ``[name]``, the report's list of drawn files."""
    fig.tight_layout()
    where.mkdir(parents=True, exist_ok=True)
    fig.savefig(where / name, **savefig)
    return [name]


# -- text ------------------------------------------------------------------------------------
def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(map(str, row)) + " |" for row in rows)]
