"""The windowed runtime over the dual-layer queue, with pluggable work assignment.

Per window (see :mod:`seer.sched.windows`): the coordinator (the caller's thread) has the
assignment strategy (:mod:`seer.sched.assignment`) publish the ready entities to the PEL,
one home segment per thread, and wakes the pool; every thread — the caller included —
claims ranges of ready entities through its strategy's claimer; for each claimed entity it
merges the entity's LEQ intake into the entity's private heap and runs its events ``< B``
in κ order. Self-events go straight into the private heap (no atomics); events for other
entities wait in the worker's *outbox* (a list append, no Python frame) until the
worker's last claim of the window, and are then written into arena records from the
worker's slab and pushed to their targets' intakes, one CAS each, in one tight loop (they
are for later windows: lookahead). The LEQs have two epochs, one per window parity, so
the claimer of an entity takes what earlier windows sent it with plain loads (nobody
pushes to the other parity's words during a window): one atomic per cross-entity event.
After the barrier, the coordinator adds the workers' calendar entries and computes the
next window.

This is SEER's runtime, :class:`SeerRuntime`: with ``runtime.py``'s base it is the whole
of a step (``docs/architecture.md``, "Read one step"); the hot loop each thread runs is
:mod:`seer.sched.worker`'s. The work assignment is a strategy (``assignment=``: home
segments + guided steals by default) and the intakes come from a factory through the
protocol of :mod:`seer.queues.protocol` (``queues=``: Treiber stacks by default). The
peers ``static``, ``static-block`` and ``seer-ms`` (:mod:`seer.peers`) are this class
with another strategy or other intakes, so a change to the machinery changes them alike.

A window with a single ready entity, or a runtime with one thread, runs inline on the
caller (no wake-up to pay for).
"""

from __future__ import annotations

import heapq
import time
import warnings
from collections.abc import Iterable
from functools import partial
from typing import Any, ClassVar

import numpy as np

from seer.actions import ActionBatch
from seer.errors import ModelError, RuntimeStateError, event_of
from seer.model import Context, Model, make_row, make_row_class
from seer.queues import BufferLayout, EventArena, ParallelExecutiveList
from seer.queues.protocol import QueueFactory, get_queues
from seer.runtime import MAX_THREADS, Runtime, StepResult, step_limit_error
from seer.sched.assignment import Assignment, get_assignment
from seer.sched.copies import (
    COPIES,
    own_float,
    own_int,
    parse_copies,
    worker_handlers,
    worker_model,
)
from seer.sched.pool import WorkerPool
from seer.sched.windows import EntityEvents
from seer.sched.worker import TracingWindowWorker, WindowWorker

__all__ = ["SeerRuntime"]

_ns = time.perf_counter_ns
_heappush = heapq.heappush
#: Fewer actions than this are made into events by the coordinator (not worth the slots).
_SHARED_ACTIONS_MIN = 64


class SeerRuntime(Runtime):
    """SEER: windows over LEQs + PEL on a worker pool; home segments and guided steals.

    Windows run on ``threads`` OS threads (the caller is one), with the work
    assignment ``assignment`` (a name from :data:`seer.sched.assignment.ASSIGNMENTS` or an
    :class:`~seer.sched.assignment.Assignment`) and the intakes ``queues`` (a name from
    :data:`seer.queues.protocol.QUEUES` or a :class:`~seer.queues.protocol.QueueFactory`;
    default the class's ``default_queues``, ``"treiber"``): what the runtime calls on
    them, and what they must guarantee, is :mod:`seer.queues.protocol`.

    ``arena_capacity``: event records for cross-entity events in flight (default
    ``max(8192, 8 * n_entities)`` plus slab slack). ``atomics_path``: "fast" or "public"
    (default: :func:`seer.queues.selected_path`). ``spin_us``: how long idle workers spin
    before parking; ``hot_spin_us``: how long while a step runs, so that they catch its
    next window without a futex wake-up (the coordinator's pause between two windows is
    about 100 µs on PCS; see :class:`~seer.sched.pool.WorkerPool`). ``copies``: the
    per-worker copies each thread makes of what workers would share (None: the class's
    ``default_copies``, else :data:`seer.sched.copies.DEFAULT_COPIES`; ``"all"``,
    ``"none"``, or names: :mod:`seer.sched.copies`). ``pool``: run on this
    :class:`~seer.sched.pool.WorkerPool` of ``threads`` threads, owned by someone else
    (:mod:`seer.vector` steps several runtimes on one), instead of a pool of its own.
    """

    name = "seer"
    #: The assignment used when none is given.
    default_assignment: ClassVar[str] = "steal"
    #: The intakes used when none are given (:mod:`seer.queues.protocol`).
    default_queues: ClassVar[str | type[QueueFactory]] = "treiber"
    #: The per-worker copies made when ``copies`` is not given (None:
    #: :data:`seer.sched.copies.DEFAULT_COPIES`).
    default_copies: ClassVar[str | frozenset[str] | None] = None

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False,
                 assignment: str | Assignment | None = None,
                 queues: str | QueueFactory | None = None,
                 arena_capacity: int | None = None, atomics_path: str | None = None,
                 spin_us: float = 50.0, hot_spin_us: float = 1000.0,
                 copies: str | Iterable[str] | None = None,
                 pool: WorkerPool | None = None) -> None:
        self.assignment = get_assignment(assignment or self.default_assignment)
        #: The per-worker copies this runtime makes (:mod:`seer.sched.copies`).
        self.copies = parse_copies(copies if copies is not None else self.default_copies)
        default = self.default_queues
        self.queues = get_queues(queues or (default() if isinstance(default, type)
                                            else default))
        # the pending events by entity (before the base: contexts get its push)
        self._events = EntityEvents(model.n_entities if isinstance(model, Model) else 0)
        super().__init__(model, threads=threads, debug=debug,
                         max_events_per_step=max_events_per_step, trace=trace)
        self._labels = {"assignment": self.assignment.name, "queues": self.queues.name,
                        "copies": ",".join(c for c in COPIES if c in self.copies) or "none"}
        n = self.spec.n_entities
        batch = 64
        capacity = ((arena_capacity or max(8192, 8 * n)) + 2 * batch * self._threads
                    + self.queues.reserved_records(n))
        layout = BufferLayout()
        arena_regions = EventArena.plan(layout, capacity)
        intake_regions = self.queues.plan(layout, n, capacity)
        pel_regions = ParallelExecutiveList.plan(layout, n, segments=MAX_THREADS)
        self._buffer = layout.allocate()
        self._arena = EventArena(capacity, self._buffer, arena_regions, n_slabs=MAX_THREADS,
                                 batch=batch)
        # The LEQs' private layer is the runtime's per-entity heaps: events placed by the
        # coordinator and events merged from intakes meet in one heap. The intakes come
        # from the factory (seer.queues.protocol); their workers' methods are bound once
        # per thread (WindowWorker), so the factory costs nothing per event.
        self._leqs = self.queues.build(n, self._arena, self._buffer, intake_regions,
                                       self._events.heaps)
        self._epoch = 0  # windows run since the LEQs were last emptied (their epoch)
        # entity -> its index in the step's ActionBatch while its action waits for the
        # entity's claimer in the step's first window (-1: none waits)
        self._action_slots = np.full(n, -1, np.int64)
        self._pending_actions: ActionBatch | None = None
        self._pel = ParallelExecutiveList(n, self._buffer, pel_regions)
        self._agent_positions = np.arange(len(self.spec.agents), dtype=np.int64)
        self._atomics_path = atomics_path
        self._workers: list[WindowWorker] = []
        self._bound: tuple[float, int] = (0.0, -1)
        self._window_actions = False  # the window running takes the step's actions
        self._out: tuple | None = None
        #: Another runtime's pool this one runs on (``pool=``), which it neither resizes nor
        #: closes; None: its own.
        self._shared_pool = pool
        if pool is not None:
            if pool.threads != self._threads:
                raise ModelError(f"pool= has {pool.threads} threads, threads={self._threads}")
            self._pool = pool
            self._trace_threads()
            self._make_workers()
            return
        pool = self._use_pool(WorkerPool(self._threads, name=self._thread_name(),
                                         spin_us=spin_us, hot_spin_us=hot_spin_us))
        try:
            self._make_workers()
        except BaseException:
            pool.close()  # leave no thread behind a failed constructor
            raise

    # -- set-up ---------------------------------------------------------------------------
    def _make_workers(self) -> None:
        """Fresh slabs, accessors and claimers for every thread (after construction, reset
        and resize), each made on its own thread, with the per-worker copies of
        ``self.copies`` (:mod:`seer.sched.copies`: new contexts and rows for the entities
        homed there, :meth:`Assignment.home`; the handler table; the snapshot views; the
        model): free-threaded CPython counts references to an object with a plain add only
        on the thread that made it, and with an atomic one (slower, and contended when
        shared) everywhere else, so the objects a thread touches on every event should be
        its own (``docs/performance.md``)."""
        for old in self._workers:
            old.slab.release()  # its free records go back to the arena's pool
        pool = self._pool
        threads = pool.threads
        n = self.spec.n_entities
        home = self.assignment.home(np.arange(n, dtype=np.int64), threads, n)
        homed = [np.flatnonzero(home == index).tolist() for index in range(threads)]
        traced = {} if self.trace is None else {"trace": self.trace}
        worker = WindowWorker if self.trace is None else TracingWindowWorker
        workers: list[WindowWorker | None] = [None] * threads
        limit_error = partial(step_limit_error, self.spec.name, self.max_events_per_step,
                              text=self._limit_text)

        copies, model = self.copies, self.model

        def make(index: int) -> None:  # on pool thread ``index`` (the switches: copies.py)
            if "contexts" in copies:
                self._own_contexts(homed[index])
            twin = worker_model(model) if "model" in copies else None
            handlers = (worker_handlers(self._handlers, model, twin)
                        if "handlers" in copies or twin is not None else self._handlers)
            views = (self._private_views() if "snapshot" in copies
                     else (self.state, self.snapshot))
            workers[index] = worker(
                self._leqs.worker(self._arena.slab(index), self._atomics_path),
                self.assignment.claimer(self._pel, index, threads, self._atomics_path),
                self._pel.claimer(threads, path=self._atomics_path),
                pool.stats[index], self._contexts, handlers, views,
                self._event_limit, limit_error, self._events.box,
                twin if twin is not None else model,
                **({"index": index, **traced} if traced else {}))

        pool.run_setup(make)
        self._workers = workers
        self._homed = homed  # each entity's generator is made on its home thread (reset)

    def _own_contexts(self, entities: list[int]) -> None:
        """Replace the contexts (and rows) of ``entities`` by copies made on this thread
        (see :meth:`_make_workers`); everything else about them stays as it was. The
        values ``emit`` reads on every call (the kind table, the lookahead, the entity
        count, the entity's id and origin bits) become this thread's own equal copies,
        so that two threads emitting at once do not count references to one object."""
        contexts, arrays = self._contexts, self._arrays
        # This thread's own row class: assigning ``row.field = v`` looks the field's
        # property up on the class and counts a reference to it, and a property object
        # that two threads both store through costs every store a contended atomic.
        row_class = make_row_class(self.spec.fields)
        names = [n for n in Context.__slots__ if n != "row"]
        kind_ids = dict(self.spec.kind_ids)
        lookahead = own_float(self.spec.lookahead)
        n = own_int(self.spec.n_entities)
        for e in entities:
            old = contexts[e]
            ctx = Context.__new__(Context)
            for name in names:  # Context.__init__ sets every slot
                setattr(ctx, name, getattr(old, name))
            ctx.row = make_row(row_class, arrays, e)
            ctx._kind_ids, ctx._lookahead, ctx._n = kind_ids, lookahead, n
            ctx.id, ctx._origin_bits = own_int(old.id), own_int(old._origin_bits)
            contexts[e] = ctx  # one slot of a list: safe beside other threads' stores

    # -- the event machinery (the base's hooks) ----------------------------------------------
    def _make_push(self, e: int) -> Any:
        return self._events.push  # between windows; workers hand their own to contexts

    def _clear_events(self) -> None:
        self._events.clear()
        push = self._events.push
        for ctx in self._contexts:
            ctx._push = ctx._self_push = push
        self._action_slots[:] = -1
        self._pending_actions = None
        self._leqs.reset()  # intakes and heaps empty, all arena records back in the pool
        self._workers = []  # their slabs are void after the arena reset
        self._make_workers()

    def _resize_threads(self, threads: int) -> None:
        if self._shared_pool is not None:
            raise RuntimeStateError(f"{type(self).__name__} runs on a pool it shares: resize "
                                    "the runtime that owns it")
        self._pool.resize(threads)
        self._make_workers()

    def _pending(self) -> tuple[int, tuple[float, int] | None]:
        """Merged events plus those still in intakes; the calendar knows the earliest."""
        events = self._events
        return (events.count() + self._leqs.in_intakes(self._workers[0].slab),
                events.head())

    # -- actions ---------------------------------------------------------------------------
    def _push_externals(self, batch: ActionBatch) -> None:
        """Leave making the action events to the threads: each action's entity is ready in
        the step's first window (its event is at the step start, depth 0: below every
        first bound), so its claimer makes the event and puts it in the heap it is about
        to run (:meth:`WindowWorker.merge_sent`). The coordinator only lists the slots
        and the calendar entries. Only for one action per entity (a slot holds one) and
        batches big enough to pay for it; otherwise as every windowed runtime does."""
        n_actions = len(batch)
        if self._pool.threads == 1 or not batch.distinct or n_actions < _SHARED_ACTIONS_MIN:
            self._events.push_batch(batch)
            return
        self._action_slots[batch.entity_array] = np.arange(n_actions, dtype=np.int64)
        self._pending_actions = batch
        # equal τ: already sorted for the calendar
        self._events.calendar.extend_sorted(np.full(n_actions, batch.t0), batch.seq_array,
                                            batch.entity_array)

    def _hand_out_actions(self) -> None:
        """Give the workers the pending actions for the window about to run."""
        handout = (memoryview(self._action_slots).cast("B").cast("q"), self._pending_actions)
        for w in self._workers:
            w.actions = handout

    def _settle_actions(self) -> None:
        """After the step's first window: every action was taken (each was ready in it);
        anything a window cut short left goes into its heap directly."""
        batch, self._pending_actions = self._pending_actions, None
        for w in self._workers:
            w.actions = None
        slots = self._action_slots
        left = np.flatnonzero(slots >= 0)
        if len(left):
            heaps = self._events.heaps
            for e in left.tolist():
                _heappush(heaps[e], batch.event(int(slots[e])))
            slots[left] = -1

    # -- windows ---------------------------------------------------------------------------
    def _run(self, t_end: float) -> None:
        """The step's windows (:meth:`EntityEvents.windows`), each run on the pool."""
        limit = self.events_run + self._event_limit
        for t_min, ready, bound in self._events.windows(t_end, self.spec.lookahead):
            self._run_window(ready, bound)
            self._window_done(limit, int(ready[0]), t_min, len(ready))

    def _run_window(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        start = self._open_window(ready, bound)
        pool = self._pool
        try:
            if len(ready) == 1 or pool.threads == 1:
                self._workers[0].run_entities(ready.tolist(), bound)
            else:
                self._publish_window(ready)
                pool.run(self._window_task, self._stop_threads,
                         give_up_after=self._give_up_after)
        except BaseException as exc:
            self._collect()
            self._raise_failure(exc)
        finally:
            self._settle_window(start, len(ready), bound)
        self._close_window()

    # The phases of a window, apart, so that a runtime stepping several models in one pool
    # can run the windows of all of them in one pool task (seer.vector).
    def _open_window(self, ready: np.ndarray, bound: tuple[float, int]) -> int:
        """Before a window runs: its bound, the step's actions handed out (in its first
        window), a new LEQ epoch, the abort flag; returns the trace's start clock (0)."""
        self._bound = bound
        self._window_actions = self._pending_actions is not None
        if self._window_actions:
            self._hand_out_actions()
        # A new LEQ epoch per window: the wake-up that runs it is the barrier it needs.
        self._epoch = epoch = self._epoch + 1
        for w in self._workers:
            w.leq.set_epoch(epoch)
        self._abort = self._interrupted  # a Ctrl-C between windows still stops this one
        if self.trace is None:
            return 0
        self.trace.counter(0, "ready entities", len(ready))
        return _ns()

    def _publish_window(self, ready: np.ndarray) -> None:
        """The window's ready entities into the PEL, for the pool's threads to claim."""
        self.assignment.publish(self._pel, ready, self._pool.threads, self.spec.n_entities)

    def _settle_window(self, start: int, ready: int, bound: tuple[float, int]) -> None:
        """After a window's threads are back, whatever happened: actions left unclaimed
        go to their heaps, and the trace gets the window."""
        if self._window_actions:
            self._settle_actions()
        if self.trace is not None:
            self._trace_window(start, ready, bound)

    def _close_window(self) -> None:
        """After a window: its results collected, and the κ-smallest handler failure any
        thread recorded raised."""
        self._collect()
        failures = [f for w in self._workers if (f := w.take_failure()) is not None]
        if failures:
            try:
                self._raise_failure(min(failures, key=lambda f: event_of(f)[:2]))
            finally:
                failures = f = None  # no exception -> frame -> exception cycle

    def _trace_window(self, start: int, ready: int, bound: tuple[float, int]) -> None:
        """The window's slice on the caller's track, each thread's barrier wait, and its
        contention in the window (before :meth:`_collect` moves it into the stats): the
        counters ``cas retries`` (the intakes') and ``claim misses`` (the claimer's, for
        claimers that count them; ``WorkerStats``)."""
        end = _ns()
        trace = self.trace
        trace.slice(0, "window", start, end, ready=ready, bound=bound)
        for index, w in enumerate(self._workers):
            if start <= w.task_end < end:
                trace.slice(index, "wait", w.task_end, end)
            w.task_end = 0
            trace.counter(index, "cas retries", w.leq.cas_retries)
            if w.count_misses:
                trace.counter(index, "claim misses", w.claimer.misses)

    def _collect(self) -> None:
        for w in self._workers:
            w.collect(self)

    def _window_task(self, index: int) -> None:
        """Thread ``index``'s part of a window: claim ranges of the ready entities and run
        them until none is left, then seal the window's results. Traced, it records each
        claim (``steal`` when from another thread's home segment) and when the thread ran
        out of work: one check per claim, never per entity or event."""
        w = self._workers[index]
        claimer = w.claimer
        claimer.reset(self._pool.threads)
        items, bound, run, trace = self._pel.items, self._bound, w.run_entities, self.trace
        try:
            while not self._abort:
                steals = claimer.steals
                chunk = claimer.claim()
                if chunk is None:
                    w.seal()
                    return
                start, stop = chunk
                if trace is not None:
                    # misses: this window's empty claim attempts so far (WorkerStats)
                    trace.instant(index, "steal" if claimer.steals > steals else "claim",
                                  start=start, stop=stop,
                                  **({"misses": claimer.misses} if w.count_misses else {}))
                run(items[start:stop].tolist(), bound)
        except BaseException:
            self._abort = True  # Ctrl-C (handler errors are recorded, not raised)
            raise
        finally:
            if trace is not None:
                w.task_end = _ns()

    # -- outputs in parallel ---------------------------------------------------------------
    def _outputs(self) -> StepResult:
        agents = self.spec.agents
        pool = self._pool
        if pool.threads == 1 or len(agents) < 2 * pool.threads:
            return super()._outputs()
        self._out = self._output_buffers()
        self._out_failures: list[tuple[int, BaseException]] = []
        self._pel.publish(self._agent_positions)
        try:
            task = self._outputs_task if self.trace is None else self._outputs_task_traced
            pool.run(task, self._stop_threads, give_up_after=self._give_up_after)
            if self._out_failures:  # the first agent in output order, as serially
                raise min(self._out_failures, key=lambda f: f[0])[1]
            return self._step_result(self._out)
        finally:
            self._out = None
            self._out_failures = []

    def _outputs_task_traced(self, index: int) -> None:
        start = _ns()
        try:
            self._outputs_task(index)
        finally:
            self.trace.slice(index, "outputs", start, _ns())

    def _outputs_task(self, index: int) -> None:
        w = self._workers[index]
        claimer = w.output_claimer
        claimer.reset()
        store, state, start, buffers = self._store_outputs, w.state, w.snapshot, self._out
        outputs = w.model.outputs  # bound to the thread's model copy, with that switch
        try:
            while (chunk := claimer.claim()) is not None:
                store(range(chunk[0], chunk[1]), state, start, buffers, outputs)
        except Exception as exc:  # the rest of this chunk is not needed: an error is certain
            self._out_failures.append((exc.agent_position, exc))  # list.append is atomic


def __getattr__(name: str) -> Any:
    """``DualQueueRuntime``, SEER's runtime's former name."""
    if name == "DualQueueRuntime":
        warnings.warn("seer.sched.dual_queue.DualQueueRuntime is now SeerRuntime (it takes "
                      "the same assignment= and queues=)", DeprecationWarning, stacklevel=2)
        return SeerRuntime
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
