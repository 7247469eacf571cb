"""Parallel runtimes: SEER (dynamic sharing) and the peers it is measured against.

``make_runtime(model, kind, threads=...)`` builds one by name:

================  ==========================================================
``serial``        one thread, global heap: the oracle (:class:`~seer.SerialRuntime`)
``seer``          work-sharing windows over LEQs + PEL (:class:`SeerRuntime`)
``static``        entity ``e`` on thread ``e % threads`` (:class:`StaticRuntime`)
``static-block``  contiguous id blocks per thread, ROSS's linear mapping
                  (:class:`StaticBlockRuntime`)
``global``        one locked global event heap (:class:`GlobalQueueRuntime`)
``executor``      ThreadPoolExecutor.map per window (:class:`ExecutorRuntime`)
================  ==========================================================
"""

from __future__ import annotations

from typing import Any

from seer.errors import ModelError
from seer.model import Model
from seer.runtime import Runtime
from seer.sched.executor import ExecutorRuntime
from seer.sched.global_queue import GlobalQueueRuntime
from seer.sched.pool import WorkerPool, WorkerStats
from seer.sched.seer import SeerRuntime
from seer.sched.static import StaticBlockRuntime, StaticRuntime
from seer.serial import SerialRuntime

__all__ = [
    "RUNTIMES",
    "ExecutorRuntime",
    "GlobalQueueRuntime",
    "SeerRuntime",
    "StaticBlockRuntime",
    "StaticRuntime",
    "WorkerPool",
    "WorkerStats",
    "make_runtime",
]

RUNTIMES: dict[str, type[Runtime]] = {
    "serial": SerialRuntime,
    "seer": SeerRuntime,
    "static": StaticRuntime,
    "static-block": StaticBlockRuntime,
    "global": GlobalQueueRuntime,
    "executor": ExecutorRuntime,
}


def make_runtime(model: Model, kind: str = "seer", *, threads: int = 2,
                 **options: Any) -> Runtime:
    """Build the runtime ``kind`` for ``model``. ``threads`` is ignored by ``serial``;
    other keyword options go to the runtime's constructor."""
    try:
        cls = RUNTIMES[kind]
    except (KeyError, TypeError):
        raise ModelError(f"unknown runtime kind {kind!r}; choose one of "
                         f"{sorted(RUNTIMES)}") from None
    if cls is SerialRuntime:
        return SerialRuntime(model, **options)
    return cls(model, threads=threads, **options)
