"""The ``global`` peer (NBSE-like): one shared ready queue for all events.

All pending events of the episode sit in one global heap guarded by one lock; there are no
per-entity queues. In a window, every thread repeatedly pops the globally smallest event
``< B``. Because two events of one entity must not run at once, an entity being run is
*owned* by one thread; events of an owned entity that another thread pops are parked in the
entity's ``deferred`` heap, and the owner's own self-events inside the window go there too.
After each event the owner continues with its smallest deferred event only if it is
smaller than the global head (so no event of the entity still in the global heap can be
smaller); otherwise it returns its deferred events to the global heap and releases the
entity. Each entity therefore runs its events in κ order, as in the serial runtime.
Every event costs two or three acquisitions of the one lock: that contention is what this
peer is measured for.
"""

from __future__ import annotations

import heapq
import threading
import weakref
from typing import Any

import numpy as np

from seer.events import Event
from seer.model import Model
from seer.sched.pool import WorkerPool
from seer.sched.windows import WindowedRuntime, window_bound

__all__ = ["GlobalQueueRuntime"]


class _GlobalWorker:
    __slots__ = ("cur", "events", "push", "rt")

    def __init__(self, rt: GlobalQueueRuntime) -> None:
        self.rt = rt
        self.cur = -1
        self.events = 0
        self.push = self._push

    def _push(self, ev: Event) -> None:
        rt = self.rt
        with rt._lock:
            if ev[2] == self.cur and ev < rt._bound:
                heapq.heappush(rt._deferred[self.cur], ev)
            else:
                heapq.heappush(rt._global, ev)


class GlobalQueueRuntime(WindowedRuntime):
    """One locked global event heap shared by ``threads`` threads."""

    kind = "global"

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 spin_us: float = 50.0) -> None:
        super().__init__(model, threads=threads, debug=debug)
        n = self.spec.n_entities
        self._global: list[Event] = []
        self._lock = threading.Lock()
        self._owner = [False] * n
        self._deferred: list[list[Event]] = [[] for _ in range(n)]
        self._bound: tuple[float, int] = (0.0, -1)
        self._abort = False
        self._pool = WorkerPool(threads, name=f"seer-global-{model.name}", spin_us=spin_us)
        self._workers = [_GlobalWorker(self) for _ in range(threads)]
        self._finalizer = weakref.finalize(self, self._pool.close)

    # The global heap replaces per-entity heaps and the calendar.
    def _coordinator_push(self, ev: Event) -> None:
        heapq.heappush(self._global, ev)

    def _clear_events(self) -> None:
        super()._clear_events()
        if hasattr(self, "_global"):
            self._global.clear()
            for d in self._deferred:
                d.clear()
            self._owner = [False] * self.spec.n_entities

    @property
    def pending(self) -> int:
        return len(self._global)

    @property
    def pool(self) -> WorkerPool:
        return self._pool

    def close(self) -> None:
        self._finalizer()
        super().close()

    def _run(self, t_end: float) -> None:
        g = self._global
        lookahead = self.spec.lookahead
        while g and g[0][0] < t_end:
            self._bound = window_bound(g[0][0], g[0][1], t_end, lookahead)
            self._abort = False
            try:
                if self._threads == 1:
                    self._window_task(0)
                else:
                    self._pool.run(self._window_task, self._abort_window)
            except BaseException as exc:
                self._raise_failure(exc)
            finally:
                for w, stats in zip(self._workers, self._pool.stats, strict=False):
                    self.events_run += w.events
                    stats.events += w.events
                    w.events = 0
            self.windows_run += 1
            if self._interrupted:
                raise KeyboardInterrupt

    def _abort_window(self) -> None:
        self._abort = True

    def _window_task(self, index: int) -> None:
        w = self._workers[index]
        g, lock, owner, deferred = self._global, self._lock, self._owner, self._deferred
        bound = self._bound
        contexts, handlers = self._contexts, self._handlers
        pop, push = heapq.heappop, heapq.heappush
        try:
            while not self._abort:
                with lock:
                    if not g or not g[0] < bound:
                        return
                    ev = pop(g)
                    e = ev[2]
                    if owner[e]:
                        push(deferred[e], ev)
                        continue
                    owner[e] = True
                ctx = contexts[e]
                ctx._push = w.push
                w.cur = e
                mine = deferred[e]
                while True:
                    ctx.now = ev[0]
                    ctx._seq = ev[1]
                    try:
                        handlers[ev[3]](ctx, ev)
                    except BaseException as exc:
                        exc.__seer_event__ = ev  # type: ignore[attr-defined]
                        raise
                    w.events += 1
                    with lock:
                        if mine and (not g or mine[0] < g[0]):
                            ev = pop(mine)
                            continue
                        while mine:
                            push(g, pop(mine))
                        owner[e] = False
                        w.cur = -1
                        break
        except BaseException:
            self._abort = True
            raise

    def _run_window(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        raise AssertionError("GlobalQueueRuntime does not use per-entity windows")

    def worker_stats(self) -> list[dict[str, Any]]:
        return [s.as_dict() for s in self._pool.stats]
