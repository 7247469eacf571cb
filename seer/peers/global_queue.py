"""The ``global`` peer (NBSE-like): one shared ready queue for all events.

All pending events of the episode sit in one global heap guarded by one lock; there are no
per-entity queues and no calendar. Windows are the same conservative windows as in the
other runtimes (:func:`seer.sched.windows.window_bound` on the global head). In a window,
every thread repeatedly pops the globally smallest event ``< B``. Because two events of one
entity must not run at once, an entity being run is *owned* by one thread; events of an
owned entity that another thread pops are parked in the entity's ``deferred`` heap, and the
owner's own self-events inside the window go there too. After each event the owner
continues with its smallest deferred event only if it is smaller than the global head (so
no event of the entity still in the global heap can be smaller); otherwise it returns its
deferred events to the global heap and releases the entity. Each entity therefore runs its
events in κ order, as in the serial runtime. Every event costs two or three acquisitions
of the one lock: that contention is what this peer is measured for.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from seer.actions import ActionBatch
from seer.errors import tag_event
from seer.events import Event
from seer.model import Model
from seer.runtime import Runtime, run_event
from seer.sched.pool import WorkerPool
from seer.sched.windows import window_bound

__all__ = ["GlobalQueueRuntime"]

_ns = time.perf_counter_ns


class GlobalWorker:
    """One thread's state: the entity it owns now, and its event count."""

    __slots__ = ("cur", "deferred", "events", "global_heap", "lock", "push", "runtime_bound")

    def __init__(self, global_heap: list[Event], deferred: list[list[Event]],
                 lock: threading.Lock, runtime_bound: list[tuple[float, int]]) -> None:
        self.global_heap = global_heap
        self.deferred = deferred
        self.lock = lock
        self.runtime_bound = runtime_bound
        self.cur = -1
        self.events = 0
        self.push = self._push

    def _push(self, ev: Event) -> None:
        with self.lock:
            if ev[2] == self.cur and ev < self.runtime_bound[0]:
                heapq.heappush(self.deferred[self.cur], ev)
            else:
                heapq.heappush(self.global_heap, ev)


class GlobalQueueRuntime(Runtime):
    """One locked global event heap that all its threads share (NBSE-like)."""

    name = "global"

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False,
                 spin_us: float = 50.0, hot_spin_us: float = 1000.0) -> None:
        global_heap: list[Event] = []
        self._global = global_heap
        self._lock = threading.Lock()
        # A bound function of the heap, not of the runtime: see EntityEvents.push.
        self._coordinator_push = partial(heapq.heappush, global_heap)
        super().__init__(model, threads=threads, debug=debug,
                         max_events_per_step=max_events_per_step, trace=trace)
        n = self.spec.n_entities
        self._owner = [False] * n
        self._deferred: list[list[Event]] = [[] for _ in range(n)]
        self._bound: list[tuple[float, int]] = [(0.0, -1)]  # one cell, shared with workers
        self._use_pool(WorkerPool(self._threads, name=self._thread_name(), spin_us=spin_us,
                                  hot_spin_us=hot_spin_us))
        self._workers: list[GlobalWorker] = []
        self._make_workers()

    def _make_workers(self) -> None:
        self._workers = [GlobalWorker(self._global, self._deferred, self._lock, self._bound)
                         for _ in range(self._threads)]

    def _resize_threads(self, threads: int) -> None:
        self._pool.resize(threads)
        self._make_workers()

    # -- event placement -------------------------------------------------------------------
    def _make_push(self, e: int) -> Callable[[Event], Any]:
        return self._coordinator_push

    def _push_externals(self, batch: ActionBatch) -> None:
        g, push = self._global, heapq.heappush
        for ev in batch.events():
            push(g, ev)

    def _clear_events(self) -> None:
        self._global.clear()
        for heap in self._deferred:
            heap.clear()
        self._owner[:] = [False] * self.spec.n_entities
        for ctx in self._contexts:
            ctx._push = ctx._self_push = self._coordinator_push

    def _pending(self) -> tuple[int, tuple[float, int] | None]:
        g = self._global
        return len(g), (g[0][:2] if g else None)

    # -- windows ---------------------------------------------------------------------------
    def _run(self, t_end: float) -> None:
        g = self._global
        lookahead = self.spec.lookahead
        pool = self._pool
        limit = self.events_run + self._event_limit
        while g and g[0].tau < t_end:
            head = g[0]
            self._bound[0] = window_bound(head.tau, head.seq, t_end, lookahead)
            self._abort = self._interrupted  # a Ctrl-C between windows still stops it
            try:
                if pool.threads == 1:
                    self._window_task(0)
                else:
                    pool.run(self._window_task, self._stop_threads,
                             give_up_after=self._give_up_after)
            except BaseException as exc:
                self._raise_failure(exc)
            finally:
                for w, stats in zip(self._workers, pool.stats, strict=False):
                    self.events_run += w.events
                    stats.events += w.events
                    w.events = 0
            self._window_done(limit, head.target, head.tau)

    def _window_task(self, index: int) -> None:
        """Pop and run events ``< B`` until none is left. A handler's ``Exception`` stops
        only this thread: the others finish the window, so that the failure with the
        smallest κ (the one serial stepping meets first) is among those reported."""
        w = self._workers[index]
        g, lock, owner, deferred = self._global, self._lock, self._owner, self._deferred
        bound = self._bound[0]
        contexts, handlers = self._contexts, self._handlers
        pop, push = heapq.heappop, heapq.heappush
        limit = self._event_limit
        trace = self.trace
        try:
            while not self._abort:
                with lock:
                    if not g or not g[0] < bound:
                        return
                    ev = pop(g)
                    e = ev[2]  # target (by position: seer.events, "Layout")
                    if owner[e]:
                        push(deferred[e], ev)
                        continue
                    owner[e] = True
                ctx = contexts[e]
                ctx._push = ctx._self_push = w.push
                w.cur = e
                mine = deferred[e]
                if trace is not None:  # once per entity run, not per event
                    run_start, run_first, run_events = _ns(), ev[:2], w.events
                while True:
                    run_event(handlers, ctx, ev)
                    w.events += 1
                    if w.events > limit:
                        raise tag_event(self._step_limit_error(e, ev, "in one window"), ev)
                    with lock:
                        if mine and (not g or mine[0] < g[0]):
                            ev = pop(mine)
                            continue
                        while mine:
                            push(g, pop(mine))
                        owner[e] = False
                        w.cur = -1
                        break
                if trace is not None:
                    trace.slice(index, "run", run_start, _ns(), entity=e,
                                events=w.events - run_events, first=run_first,
                                last=ev[:2])
        except BaseException as exc:
            if not isinstance(exc, Exception):
                self._abort = True  # Ctrl-C: everyone stops
            raise
