"""Parallel runtimes: SEER (dynamic sharing) and the peers it is measured against.

``make_runtime(model, runtime, threads=...)`` builds one by name (``docs/design.md``,
"The runtime hierarchy"):

================  ==========================================================================
``serial``        one thread, global heap: the oracle (:class:`~seer.SerialRuntime`)
``seer``          windows over LEQs + PEL, assignment ``steal`` (:class:`SeerRuntime`)
``static``        the same machinery, assignment ``round-robin``: entity ``e`` on thread
                  ``e % threads`` (:class:`StaticRuntime`)
``static-block``  the same machinery, assignment ``block``: contiguous id blocks per thread,
                  ROSS's linear mapping (:class:`StaticBlockRuntime`)
``global``        one locked global event heap (:class:`GlobalQueueRuntime`)
``executor``      ThreadPoolExecutor.map per window (:class:`ExecutorRuntime`)
``optimistic``    Time Warp (ROOT-Sim-like): entities bound to threads, rollbacks,
                  anti-messages, GVT per step (:class:`OptimisticRuntime`)
================  ==========================================================================

The hierarchy::

    Runtime                         seer/runtime.py      results: state, seeding, outputs
    ├── SerialRuntime               seer/serial.py       the oracle
    └── ThreadedRuntime             sched/threaded.py    threads, abort, Ctrl-C, close
        ├── GlobalQueueRuntime      sched/global_queue.py
        ├── OptimisticRuntime       sched/optimistic.py  Time Warp: no windows
        └── WindowedRuntime         sched/windows.py     per-entity heaps, calendar, windows
            ├── DualQueueRuntime    sched/dual_queue.py  LEQs + PEL + pool; an Assignment
            │   ├── SeerRuntime         assignment "steal"
            │   ├── StaticRuntime       assignment "round-robin"
            │   └── StaticBlockRuntime  assignment "block"
            └── ExecutorRuntime     sched/executor.py
"""

from __future__ import annotations

from typing import Any

from seer.errors import ModelError
from seer.model import Model
from seer.runtime import Runtime
from seer.sched.assignment import ASSIGNMENTS, Assignment
from seer.sched.dual_queue import (
    DualQueueRuntime,
    SeerRuntime,
    StaticBlockRuntime,
    StaticRuntime,
)
from seer.sched.executor import ExecutorRuntime
from seer.sched.global_queue import GlobalQueueRuntime
from seer.sched.optimistic import OptimisticRuntime
from seer.sched.pool import WorkerPool, WorkerStats
from seer.sched.threaded import MAX_THREADS, ThreadedRuntime, validate_threads
from seer.sched.windows import WindowedRuntime
from seer.serial import SerialRuntime

__all__ = [
    "ASSIGNMENTS",
    "MAX_THREADS",
    "RUNTIMES",
    "Assignment",
    "DualQueueRuntime",
    "ExecutorRuntime",
    "GlobalQueueRuntime",
    "OptimisticRuntime",
    "SeerRuntime",
    "StaticBlockRuntime",
    "StaticRuntime",
    "ThreadedRuntime",
    "WindowedRuntime",
    "WorkerPool",
    "WorkerStats",
    "make_runtime",
    "register_runtime",
    "validate_threads",
]

#: Runtime name -> class, for :func:`make_runtime`.
RUNTIMES: dict[str, type[Runtime]] = {
    cls.name: cls
    for cls in (SerialRuntime, SeerRuntime, StaticRuntime, StaticBlockRuntime,
                GlobalQueueRuntime, ExecutorRuntime, OptimisticRuntime)
}


def register_runtime(cls: type[Runtime], *, replace: bool = False) -> type[Runtime]:
    """Make ``cls`` available to :func:`make_runtime` (and the benchmarks) under
    ``cls.name``; returns ``cls``, so it can decorate a class. A name already taken is an
    error unless ``replace``."""
    if not (isinstance(cls, type) and issubclass(cls, Runtime)):
        raise ModelError(f"register_runtime needs a Runtime subclass, got {cls!r}")
    name = cls.name
    if not isinstance(name, str) or not name or name == Runtime.name:
        raise ModelError(f"{cls.__name__} needs a class attribute name = '...' to be "
                         "registered")
    if name in RUNTIMES and RUNTIMES[name] is not cls and not replace:
        raise ModelError(f"runtime name {name!r} is taken by {RUNTIMES[name].__name__}")
    RUNTIMES[name] = cls
    return cls


def make_runtime(model: Model, runtime: str = "seer", *, threads: int | str = 2,
                 **options: Any) -> Runtime:
    """Build the runtime named ``runtime`` for ``model``. ``threads`` is ignored by
    ``serial``; other keyword options go to the runtime's constructor.

    ``threads="auto"`` runs STPA's preflight (a few steps of ``model`` on a separate
    runtime, with a seed of its own) and builds the runtime at the predicted thread count;
    ``runtime.stpa`` then holds the prediction, the probe count, the preflight time and
    the features. Needs the ``stpa`` extra (xgboost)."""
    try:
        cls = RUNTIMES[runtime]
    except (KeyError, TypeError):
        raise ModelError(f"unknown runtime {runtime!r}; choose one of "
                         f"{sorted(RUNTIMES)}") from None
    if cls is SerialRuntime:
        return SerialRuntime(model, **options)
    stpa = None
    if threads == "auto":
        from seer.stpa.predictor import choose_threads

        threads, stpa = choose_threads(model, runtime)
    rt = cls(model, threads=threads, **options)
    rt.stpa = stpa
    return rt
