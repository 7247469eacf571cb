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
``seer-ms``       ``seer`` with Michael-Scott queue intakes in place of the Treiber stacks
                  (:class:`SeerMsRuntime`; ``docs/queues.md``)
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
            │   ├── StaticBlockRuntime  assignment "block"
            │   └── SeerMsRuntime       "steal", queues "ms" (seer.queues.ms)
            └── ExecutorRuntime     sched/executor.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seer.errors import ModelError
from seer.model import Model
from seer.runtime import Runtime
from seer.sched.assignment import ASSIGNMENTS, Assignment
from seer.sched.dual_queue import (
    DualQueueRuntime,
    SeerMsRuntime,
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
    "SeerMsRuntime",
    "SeerRuntime",
    "StaticBlockRuntime",
    "StaticRuntime",
    "ThreadChooser",
    "ThreadedRuntime",
    "WindowedRuntime",
    "WorkerPool",
    "WorkerStats",
    "make_runtime",
    "register_runtime",
    "register_thread_chooser",
    "validate_threads",
]

#: Runtime name -> class, for :func:`make_runtime`.
RUNTIMES: dict[str, type[Runtime]] = {
    cls.name: cls
    for cls in (SerialRuntime, SeerRuntime, StaticRuntime, StaticBlockRuntime, SeerMsRuntime,
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


#: ``chooser(model, runtime_name) -> (threads, info)``: decides ``threads="auto"``; ``info``
#: ends up in ``runtime.stpa``.
ThreadChooser = Callable[[Model, str], tuple[int, dict[str, Any]]]

# The chooser make_runtime asks for threads="auto". seer.stpa registers its predictor here
# when it is imported (seer/__init__.py imports it), so that this package never imports
# seer.stpa, which builds on it.
_thread_chooser: ThreadChooser | None = None


def register_thread_chooser(chooser: ThreadChooser | None) -> ThreadChooser | None:
    """Make ``chooser`` decide ``make_runtime(..., threads="auto")`` (None: nothing does);
    returns the chooser it replaces. ``import seer`` registers STPA's
    :func:`seer.stpa.choose_threads`."""
    global _thread_chooser
    if chooser is not None and not callable(chooser):
        raise ModelError(f"register_thread_chooser needs a callable, got {chooser!r}")
    previous, _thread_chooser = _thread_chooser, chooser
    return previous


def make_runtime(model: Model, runtime: str = "seer", *, threads: int | str | None = None,
                 **options: Any) -> Runtime:
    """Build the runtime named ``runtime`` for ``model``; keyword options go to the
    runtime's constructor (``max_events_per_step``, ``trace``, ...).

    ``threads``: an int in ``1..MAX_THREADS``, ``"auto"``, or None (the default: the
    runtime's own default, 2 for the parallel runtimes). ``serial`` runs on one thread: it
    takes None, 1 or ``"auto"`` and refuses any other count with :class:`ModelError`.

    ``threads="auto"`` asks the registered thread chooser (:func:`register_thread_chooser`):
    by default STPA's preflight (a few steps of ``model`` on a separate runtime, with a
    seed of its own), and builds the runtime at the predicted thread count;
    ``runtime.stpa`` then holds the prediction, the probe count, the preflight time and
    the features. STPA's chooser needs the ``stpa`` extra (xgboost)."""
    try:
        cls = RUNTIMES[runtime]
    except (KeyError, TypeError):
        raise ModelError(f"unknown runtime {runtime!r}; choose one of "
                         f"{sorted(RUNTIMES)}") from None
    if issubclass(cls, SerialRuntime):
        one = f"runtime {runtime!r} runs on one thread"
        if not (threads is None or (threads.__class__ is int and threads == 1)
                  or (isinstance(threads, str) and threads == "auto")):
            raise ModelError(f"{one}: threads must be 1, 'auto' or left out (None), got "
                             f"{threads!r} (for more threads choose a parallel runtime, such "
                             "as 'seer')")
        return cls(model, **options)
    threads = _threads_option(threads, runtime)
    stpa = None
    if threads == "auto":
        chooser = _thread_chooser
        if chooser is None:
            raise ModelError(f"threads='auto' for runtime {runtime!r}: no thread chooser is "
                             "registered (import seer.stpa, or call "
                             "seer.sched.register_thread_chooser)")
        threads, stpa = chooser(model, runtime)
    rt = cls(model, **options) if threads is None else cls(model, threads=threads, **options)
    rt.stpa = stpa
    return rt


def _threads_option(threads: Any, runtime: str) -> int | str | None:
    """``make_runtime``'s ``threads``, checked: None, ``"auto"`` or an int in
    ``1..MAX_THREADS``; anything else is a :class:`ModelError` that lists all three."""
    if threads is None or (isinstance(threads, str) and threads == "auto"):
        return threads
    try:
        return validate_threads(threads)
    except ModelError:
        hint = ""
        if isinstance(threads, str) and threads.strip().lower() == "auto":
            hint = " (write 'auto' in lower case)"
        elif isinstance(threads, str) and threads.strip().isdigit():
            hint = f" (pass the number itself: threads={int(threads.strip())})"
        raise ModelError(f"threads must be an int in 1..{MAX_THREADS}, got {threads!r}; "
                         f"make_runtime(model, {runtime!r}, threads=...) also takes 'auto' "
                         f"(STPA picks the count) or None (the runtime's default){hint}") \
            from None
