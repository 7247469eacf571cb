"""The SEER runtime: dynamic parallel scheduling over the dual-layer queue.

Per window (see :mod:`seer.sched.windows`): the coordinator (the caller's thread) publishes
the ready entities to the PEL, grouped by home thread (``e % threads``), and wakes the
pool; every thread — the caller included — claims guided chunks of ready entities with one
``fetch_add`` each, from its own home segment first and then from the others (so entities
stay on one thread while the load is even, and move when it is not); for each claimed entity
it merges the entity's LEQ intake into the entity's private heap and runs its events
``< B`` in κ order. Self-events go straight into the private heap (no atomics); events for
other entities are written into an arena record from the worker's slab and pushed to the
target's intake with one CAS. After the barrier, the coordinator adds the workers'
calendar entries and computes the next window.

A window with a single ready entity runs inline on the caller (no wake-up to pay for).
"""

from __future__ import annotations

import heapq
import weakref
from types import MethodType
from typing import Any

import numpy as np

from seer.errors import ModelError
from seer.events import Event
from seer.model import Model, StateArrays
from seer.queues import (
    ArenaFullError,
    BufferLayout,
    EventArena,
    LeqWorker,
    LocalEventQueues,
    ParallelExecutiveList,
)
from seer.queues.arena import NIL
from seer.queues.pel import HomeClaimer, PelClaimer
from seer.runtime import StepResult
from seer.sched.calendar import CalendarBatch
from seer.sched.pool import WorkerPool, WorkerStats
from seer.sched.windows import WindowedRuntime

__all__ = ["MAX_THREADS", "SeerRuntime"]

#: Upper bound on threads per runtime (slabs are planned for it; pools can be resized).
MAX_THREADS = 256

_heappush = heapq.heappush
_heappop = heapq.heappop


class _Worker:
    """Thread ``index``'s private state: its LEQ handle (slab + atomics accessor), its PEL
    claimer, the calendar entries it produced this window, and the entity it runs.

    Free-threaded CPython keeps reference counts of an object shared by several threads in
    an atomic field, so every load of such an object from a hot loop costs a contended
    atomic. The worker therefore holds its own bound methods of the handlers and its own
    views of the state and snapshot (handed to each context it runs as ``ctx.snapshot``),
    and :meth:`run_entities` loads every shared container once per chunk, not per event."""

    __slots__ = ("cal", "claimer", "contexts", "cur", "cur_heap", "events", "handlers",
                 "heads", "heaps", "home", "index", "leq", "overflow", "push", "slab",
                 "snapshot", "state", "stats")

    def __init__(self, index: int, leq: LeqWorker, claimer: PelClaimer, home: HomeClaimer,
                 stats: WorkerStats, contexts: list, handlers: tuple,
                 views: tuple[StateArrays, StateArrays]) -> None:
        self.index = index
        self.heaps = leq.leqs.heaps
        self.contexts = contexts
        self.handlers = tuple(
            MethodType(h.__func__, h.__self__) if isinstance(h, MethodType) else h
            for h in handlers)
        self.state, self.snapshot = views  # this thread's own wrappers and array views
        self.leq = leq
        self.heads = leq.heads  # plain view of the intake heads, for the emptiness check
        self.slab = leq.slab
        self.claimer = claimer  # plain guided claims (outputs)
        self.home = home  # home segment first, then steals (windows)
        self.stats = stats
        self.cal = CalendarBatch()
        self.cur = -1
        self.cur_heap: list[Event] = []
        self.events = 0  # events run since the coordinator last collected
        self.overflow: list[Event] = []  # cross events that found the arena full
        self.push = self._push  # one bound method, made once, handed to contexts

    def run_entities(self, entities: list[int], bound: tuple[float, int]) -> None:
        """Run each claimed entity's events ``< bound`` in κ order: merge its intake into
        its heap, run the heap's prefix, list its next head in the calendar batch.

        Same event sequence per entity as :meth:`WindowedRuntime._run_entity` (which the
        other runtimes use); this copy is the SEER hot loop, with everything in locals.
        An exception leaves with the event attached as ``__seer_event__``."""
        heaps, contexts, handlers = self.heaps, self.contexts, self.handlers
        heads, merge, push, snapshot = self.heads, self.leq.merge, self.push, self.snapshot
        cal = self.cal
        cal_t, cal_s, cal_e = cal.t.append, cal.s.append, cal.e.append
        pop = _heappop
        n = done = 0
        try:
            for e in entities:
                heap = heaps[e]
                if heads[e] != NIL:  # plain-read pre-check: skips a call for empty intakes
                    merge(e)
                self.cur = e
                self.cur_heap = heap
                ctx = contexts[e]
                ctx._push = push
                ctx.snapshot = snapshot
                while heap and heap[0] < bound:
                    ev = pop(heap)
                    ctx.now = ev[0]
                    ctx._seq = ev[1]
                    try:
                        handlers[ev[3]](ctx, ev)
                    except BaseException as exc:
                        exc.__seer_event__ = ev  # type: ignore[attr-defined]
                        raise
                    n += 1
                if heap:
                    head = heap[0]
                    cal_t(head[0])
                    cal_s(head[1])
                    cal_e(e)
                done += 1
        finally:
            self.events += n
            self.stats.entities += done

    def _push(self, ev: Event) -> None:
        target = ev[2]
        if target == self.cur:
            _heappush(self.cur_heap, ev)
            return
        slab = self.slab
        try:
            h = slab.alloc()
        except ArenaFullError:
            # No record free: the coordinator places the event after the window (it is
            # for a later window, so nothing runs late). Slower, never wrong.
            self.overflow.append(ev)
        else:
            slab.write_event(h, ev)
            self.leq.push(target, h)
        cal = self.cal
        cal.t.append(ev[0])
        cal.s.append(ev[1])
        cal.e.append(target)


class SeerRuntime(WindowedRuntime):
    """SEER (DPSA): work-sharing windows on ``threads`` OS threads (the caller is one).

    ``arena_capacity``: event records for cross-entity events in flight (default
    ``max(8192, 8 * n_entities)`` plus slab slack). ``atomics_path``: "fast" or "public"
    (default: :func:`seer.queues.selected_path`). ``spin_us``: how long idle workers spin
    before parking.
    """

    kind = "seer"

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 arena_capacity: int | None = None, atomics_path: str | None = None,
                 spin_us: float = 50.0) -> None:
        super().__init__(model, threads=threads, debug=debug)
        n = self.spec.n_entities
        batch = 64
        capacity = (arena_capacity or max(8192, 8 * n)) + 2 * batch * threads
        layout = BufferLayout()
        arena_regions = EventArena.plan(layout, capacity)
        heads = LocalEventQueues.plan(layout, n)
        pel_regions = ParallelExecutiveList.plan(layout, n, segments=MAX_THREADS)
        self._buffer = layout.allocate()
        self._arena = EventArena(capacity, self._buffer, arena_regions, n_slabs=MAX_THREADS,
                                 batch=batch)
        self._leqs = LocalEventQueues(n, self._arena, self._buffer, heads)
        self._leqs.heaps = self._heaps  # the LEQs' private layer is the runtime's heaps
        self._pel = ParallelExecutiveList(n, self._buffer, pel_regions)
        self._agent_positions = np.arange(len(self.spec.agents), dtype=np.int64)
        self._atomics_path = atomics_path
        if threads > MAX_THREADS:
            raise ModelError(f"threads must be <= {MAX_THREADS}, got {threads}")
        self._workers: list[_Worker] = []
        self._bound: tuple[float, int] = (0.0, -1)
        self._abort = False
        self._pool = WorkerPool(threads, name=f"seer-{self.spec.name}", spin_us=spin_us)
        try:
            self._make_workers()
        except BaseException:
            self._pool.close()  # leave no thread behind a failed constructor
            raise
        # Closes the pool if the runtime is dropped without close(); the pool holds no
        # reference back to the runtime, so this can run.
        self._finalizer = weakref.finalize(self, self._pool.close)

    # -- set-up ---------------------------------------------------------------------------
    def _make_workers(self) -> None:
        """Fresh slabs and accessors for every thread (after construction and reset).

        Each worker's objects are created on the coordinator but then used by one thread
        only; none is shared on the hot path."""
        for old in self._workers:  # their free records go back to the arena's pool
            self._arena._give_batch(old.slab._free)
            old.slab._free = []
        threads = self._pool.threads
        self._workers = [
            _Worker(i, self._leqs.worker(self._arena.slab(i), self._atomics_path),
                    self._pel.claimer(threads), self._pel.home_claimer(i, threads),
                    self._pool.stats[i], self._contexts,
                    self._handlers, self._private_views())
            for i in range(threads)
        ]

    def _clear_events(self) -> None:
        super()._clear_events()
        self._leqs.reset()  # intakes empty, all arena records back in the pool
        for w in self._workers:
            w.slab._free = []  # already in the pool again: do not hand them back twice
        self._make_workers()

    @property
    def pool(self) -> WorkerPool:
        return self._pool

    def resize(self, threads: int) -> None:
        """Change the thread count between steps (results do not depend on it)."""
        if isinstance(threads, bool) or not isinstance(threads, int) or \
                not 1 <= threads <= MAX_THREADS:
            raise ModelError(f"threads must be an int in 1..{MAX_THREADS}, got {threads!r}")
        self._pool.resize(threads)
        self._threads = threads
        self._make_workers()

    @property
    def pending(self) -> int:
        """Events scheduled for later steps: merged ones plus those still in intakes."""
        count = super().pending
        nxt = self._workers[0].slab.next
        for head in self._leqs.words.array.tolist():
            while head != -1:
                count += 1
                head = nxt[head]
        return count

    def close(self) -> None:
        self._finalizer()
        super().close()

    # -- windows ---------------------------------------------------------------------------
    def _abort_window(self) -> None:
        self._abort = True

    def _run_window(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        self._bound = bound
        self._abort = False
        try:
            if len(ready) == 1 or self._pool.threads == 1:
                self._run_inline(ready, bound)
            else:
                self._publish(ready)
                self._pool.run(self._window_task, self._abort_window)
        except BaseException as exc:
            self._collect_calendar()
            self._raise_failure(exc)
        self._collect_calendar()

    def _collect_calendar(self) -> None:
        calendar = self._calendar
        for w in self._workers:
            calendar.extend(w.cal)
            w.cal.clear()
            for ev in w.overflow:
                _heappush(self._leqs.heaps[ev[2]], ev)
            w.overflow.clear()
            self.events_run += w.events
            w.stats.events += w.events
            w.events = 0
            w.stats.cas_retries += w.leq.cas_retries
            w.leq.cas_retries = 0
            w.stats.steals += w.home.steals
            w.home.steals = 0

    def _publish(self, ready: np.ndarray) -> None:
        """Hand the window's ready entities to the threads: entity ``e`` has its home on
        thread ``e % threads`` and is stolen by another thread only when that one has run
        out of its own (see :class:`~seer.queues.pel.HomeClaimer`)."""
        threads = self._pool.threads
        self._pel.publish_homed(ready, self._home(ready, threads), threads)

    def _home(self, ready: np.ndarray, threads: int) -> np.ndarray:
        """The home thread of each entity in ``ready``: ``e % threads``."""
        return ready % threads

    def _run_inline(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        """Run a window on the caller alone (one thread, or one ready entity)."""
        self._workers[0].run_entities(ready.tolist(), bound)

    def _window_task(self, index: int) -> None:
        w = self._workers[index]
        claimer = w.home
        claimer.reset(self._pool.threads)
        items = self._pel.items
        bound = self._bound
        run = w.run_entities
        try:
            while not self._abort:
                chunk = claimer.claim()
                if chunk is None:
                    return
                run(items[chunk[0]:chunk[1]].tolist(), bound)
        except BaseException:
            self._abort = True
            raise

    # -- outputs in parallel ---------------------------------------------------------------
    def _outputs(self) -> StepResult:
        agents = self.spec.agents
        if self._pool.threads == 1 or len(agents) < 2 * self._pool.threads:
            return super()._outputs()
        self._out = self._output_buffers()
        self._pel.publish(self._agent_positions)
        try:
            self._pool.run(self._outputs_task, self._abort_window)
            return self._step_result(self._out)
        finally:
            self._out = None

    def _outputs_task(self, index: int) -> None:
        w = self._workers[index]
        claimer = w.claimer
        claimer.reset()
        store, state, start, buffers = self._store_outputs, w.state, w.snapshot, self._out
        while (chunk := claimer.claim()) is not None:
            store(range(chunk[0], chunk[1]), state, start, buffers)

    def worker_stats(self) -> list[dict[str, Any]]:
        """Per-thread counters (events, entities, CAS retries, busy/idle/CPU time)."""
        return [s.as_dict() for s in self._pool.stats]
