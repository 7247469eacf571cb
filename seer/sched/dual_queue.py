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

The runtimes are this one class with three strategies: ``seer`` (:class:`SeerRuntime`,
home segments + guided steals), ``static`` (:class:`StaticRuntime`, round-robin binding)
and ``static-block`` (:class:`StaticBlockRuntime`, block binding). They share every line
but the strategy, so a change to the machinery changes all three alike. The intakes are
built by a factory through the protocol of :mod:`seer.queues.protocol` (``queues=``):
Treiber stacks by default, Michael-Scott queues in ``seer-ms`` (:class:`SeerMsRuntime`;
``docs/queues.md``).

A window with a single ready entity, or a runtime with one thread, runs inline on the
caller (no wake-up to pay for).
"""

from __future__ import annotations

import heapq
import struct
import time
from collections.abc import Callable
from functools import partial
from operator import itemgetter
from types import MethodType
from typing import Any, ClassVar

import numpy as np

from seer.errors import event_of, tag_event
from seer.events import Event
from seer.model import Context, Model, StateArrays, make_row, make_row_class
from seer.queues import (
    NIL,
    BufferLayout,
    EventArena,
    ParallelExecutiveList,
    PelClaimer,
)
from seer.queues.ms import MsQueues
from seer.queues.protocol import IntakeWorker, QueueFactory, get_queues
from seer.runtime import ActionBatch, StepResult, step_limit_error
from seer.sched.assignment import Assignment, Claimer, get_assignment
from seer.sched.calendar import CalendarBatch
from seer.sched.pool import WorkerStats
from seer.sched.threaded import MAX_THREADS
from seer.sched.windows import WindowedRuntime
from seer.trace import Trace

__all__ = ["DualQueueRuntime", "SeerMsRuntime", "SeerRuntime", "StaticBlockRuntime",
           "StaticRuntime"]

_ns = time.perf_counter_ns
_heappush = heapq.heappush
_heappop = heapq.heappop
_tuple_new = tuple.__new__
_NO_FAILURE = (1e999, 1 << 64)  # above every event key (constants: immortal)
_STOPPED = (-1e999, -1)  # below every event key: the bound after the event limit
_tau_of, _seq_of, _target_of = itemgetter(0), itemgetter(1), itemgetter(2)
#: Fewer actions than this are made into events by the coordinator (not worth the slots).
_SHARED_ACTIONS_MIN = 64
_pack_double = struct.Struct("<d").pack
_unpack_double = struct.Struct("<d").unpack


def _own_float(x: float) -> float:
    """An equal float (same bits) that the calling thread made."""
    return _unpack_double(_pack_double(x))[0]


def _own_int(x: int) -> int:
    """An equal int that the calling thread made (small ints stay the shared immortals)."""
    return int.from_bytes(x.to_bytes(x.bit_length() // 8 + 1, "little", signed=True),
                          "little", signed=True)


class WindowWorker:
    """Thread ``index``'s private state: its LEQ handle (slab + atomics accessor), its
    claimers, the calendar entries it produced this window, and the entity it runs.

    Free-threaded CPython keeps reference counts of an object shared by several threads in
    an atomic field, so every load of such an object from a hot loop costs a contended
    atomic. The worker therefore holds its own bound methods of the handlers and its own
    views of the state and snapshot (handed to each context it runs as ``ctx.snapshot``),
    and :meth:`run_merged` loads every shared container once per chunk, not per event."""

    __slots__ = ("actions", "cal", "calendars", "claimer", "contexts", "count_misses", "cur",
                 "events", "failure", "failure_key", "handlers", "heads", "heaps", "leq",
                 "limit", "outbox", "output_claimer", "overflow", "push",
                 "runtime_limit_error", "sealed", "send_all", "slab", "snapshot", "state",
                 "stats")

    def __init__(self, leq: IntakeWorker, claimer: Claimer, output_claimer: PelClaimer,
                 stats: WorkerStats, contexts: list, handlers: tuple,
                 views: tuple[StateArrays, StateArrays], limit: int,
                 limit_error: Callable[[int, Event, str], Exception],
                 calendars: list) -> None:
        # limit_error must not be a bound method of the runtime (no cycle: see
        # WindowedRuntime's coordinator push).
        self.heaps = leq.leqs.heaps
        self.contexts = contexts
        self.handlers = tuple(
            MethodType(h.__func__, h.__self__) if isinstance(h, MethodType) else h
            for h in handlers)
        self.state, self.snapshot = views  # this thread's own wrappers and array views
        self.leq = leq
        self.heads = leq.heads  # plain view of the intake heads (see merge_sent)
        self.slab = leq.slab
        self.send_all = leq.send_all  # the cross-event path: records + CAS pushes
        self.claimer = claimer  # the assignment's claimer (windows)
        # Claimers may count the claim attempts that came back empty (Claimer.misses).
        self.count_misses = hasattr(claimer, "misses")
        self.output_claimer = output_claimer  # plain guided claims (outputs)
        self.stats = stats
        self.cal = CalendarBatch()
        # The runtime's box holding the calendar in use (seal() asks it how to hand over).
        self.calendars = calendars
        self.cur = -1  # the entity this thread runs (named if the thread gets stuck)
        # In the window that takes a step's actions: (slots, batch) for merge_sent.
        self.actions: tuple[memoryview, ActionBatch] | None = None
        self.sealed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.events = 0  # events run since the coordinator last collected
        self.overflow: list[Event] = []  # cross events that found the arena full
        # Cross events of this window, sent at its end (publish). Contexts get the list's
        # append itself: an emit to another entity calls no Python code.
        self.outbox: list[Event] = []
        self.push = self.outbox.append  # one bound method, made once, handed to contexts
        self.limit = limit  # max events in one run_merged call (max_events_per_step)
        self.runtime_limit_error = limit_error
        # The κ-smallest failure this thread met in the current window, and its key.
        self.failure: BaseException | None = None
        self.failure_key: tuple[float, int] = _NO_FAILURE

    def run_entities(self, entities: list[int], bound: tuple[float, int]) -> None:
        """Run the claimed ``entities`` on their events ``< bound``: first merge into each
        one's heap what was sent to it (:meth:`merge_sent`), then run them
        (:meth:`run_merged`). Two passes over the claim, so that the traced worker shares
        both with no call per entity here."""
        self.merge_sent(entities)
        self.run_merged(entities, bound)

    def merge_sent(self, entities: list[int]) -> None:
        """Merge into the heap of each claimed entity what was sent to it: its LEQ intake
        and, in the step's first window, its action event.

        The intake check is a *plain* read of ``e``'s head words of both epochs, safe only
        because of the window barrier: every push for ``e`` made before this window is
        visible (the barrier's lock hand-off orders it), and a push racing with this read
        comes from a handler of this window, so it carries an event at or after the bound
        (lookahead) and is merged at the entity's next claim (``docs/design.md``, "The
        window barrier").

        An action event is made of this thread's own objects: a copy of the step's start
        time and the sequence number read from the batch's array, not the coordinator's
        float and ints from the batch's lists. Every action event of a step holds that
        time, and every thread reads it as ``ctx.now`` and frees the events it ran, so one
        shared float would have both threads counting references to it, atomically, all
        through the step's first window (``docs/performance.md``). The actions wait in
        slots (see :meth:`DualQueueRuntime._push_externals`)."""
        heaps, heads, merge = self.heaps, self.heads, self.leq.merge
        now_off, prev_off = self.leq.offset, self.leq.previous_offset
        actions = self.actions
        if actions is not None:
            slots, batch = actions
            t0, seqs = _own_float(batch.t0), memoryview(batch.seq_array)
            kinds, payloads = batch.kinds, batch.payloads
        for e in entities:
            if heads[prev_off + e] != NIL or heads[now_off + e] != NIL:
                merge(e)
            if actions is not None and (i := slots[e]) >= 0:
                slots[e] = -1
                _heappush(heaps[e], _tuple_new(Event, (t0, seqs[i], e, kinds[i], payloads[i])))

    def run_merged(self, entities: list[int], bound: tuple[float, int]) -> None:
        """Run each claimed entity's events ``< bound`` from its heap in κ order (what was
        sent to it is merged: :meth:`merge_sent`) and list its next head in the calendar
        batch.

        This is the hot loop: the dispatch of :func:`seer.runtime.run_event` is inlined
        (a call per event costs measurably here) and everything is in locals.

        A handler's ``Exception`` does not stop the thread: it is recorded (the κ-smallest
        one is kept in :attr:`failure`), the failing entity stops, and every later entity
        runs only its events below the failure's κ. So the threads between them run every
        event that serial stepping would run before its first failure, and the error the
        runtime reports is that one, whatever the timing (``docs/design.md``, "Failures
        and interrupts"). Anything else (KeyboardInterrupt) leaves at once, tagged."""
        if self.failure_key < bound:
            bound = self.failure_key
        heaps, contexts, handlers = self.heaps, self.contexts, self.handlers
        push, snapshot = self.push, self.snapshot
        cal = self.cal
        cal_t, cal_s, cal_e = cal.tau.append, cal.seq.append, cal.entity.append
        pop = _heappop
        limit = self.limit
        ran = done = 0
        try:
            for e in entities:
                heap = heaps[e]
                self.cur = e
                ctx = contexts[e]
                if ctx._push is not push:  # a store costs reference-count traffic; a
                    ctx._push = push       # read does not, and most entities stay home
                    # Events to itself go straight into the heap, with no Python frame
                    # in between (the entity's heap is only ever run by its claimer).
                    ctx._self_push = partial(_heappush, heap)
                    ctx.snapshot = snapshot
                # Events by position, as in run_event (seer.events, "Layout").
                while heap and heap[0] < bound:
                    ev = pop(heap)
                    ctx.now = ev[0]  # tau
                    ctx._seq = ev[1]  # seq
                    try:
                        handlers[ev[3]](ctx, ev)  # kind
                    except BaseException as exc:
                        tag_event(exc, ev)
                        if not isinstance(exc, Exception):
                            raise
                        bound = self._failed(exc, ev)
                        break
                    ran += 1
                    if ran > limit:
                        bound = self._over_limit(e, ev)
                        break
                if heap:
                    head = heap[0]
                    cal_t(head[0])  # tau
                    cal_s(head[1])  # seq
                    cal_e(e)
                done += 1
        finally:
            self.cur = -1
            self.events += ran
            self.stats.entities += done

    def _over_limit(self, e: int, ev: Event) -> tuple[float, int]:
        """The chunk ran more than ``max_events_per_step`` events, the last ``ev`` of
        entity ``e``: record the :class:`~seer.errors.StepLimitError` and run nothing
        more this window (a bound below every event). Not a failure in κ order: the
        entities after ``e`` would otherwise run their earlier events, cross the count
        too, and be blamed for it."""
        self.failure = tag_event(self.runtime_limit_error(e, ev, "in one window"), ev)
        self.failure_key = _STOPPED
        return _STOPPED

    def _failed(self, exc: BaseException, ev: Event) -> tuple[float, int]:
        """Record ``exc`` from event ``ev``; return the bound for the rest of the window."""
        key = (ev.tau, ev.seq)
        if key < self.failure_key:
            self.failure = tag_event(exc, ev)
            self.failure_key = key
        return self.failure_key

    def publish(self) -> None:
        """Send the outbox's events (the window's cross-entity events) to their targets'
        LEQs and list them in the calendar batch. Runs on this worker's thread after its
        last claim of the window (or on the coordinator's, after the barrier, for what a
        window run inline or cut short left): either way before the next window, which is
        the earliest any of them can run (lookahead). One tight loop instead of one send
        per emit keeps the LEQ code and data in cache."""
        outbox = self.outbox
        if not outbox:
            return
        sent = self.send_all(outbox)
        if sent < len(outbox):
            # No record free: the coordinator places the rest after the window (they are
            # for a later window, so nothing runs late). Slower, never wrong.
            self.overflow += outbox[sent:]
        cal = self.cal
        cal.tau.extend(map(_tau_of, outbox))
        cal.seq.extend(map(_seq_of, outbox))
        cal.entity.extend(map(_target_of, outbox))
        outbox.clear()

    def seal(self) -> None:
        """Publish the window's cross events, then hand its calendar entries over as
        arrays, sorted by τ if the calendar in use needs it (on this worker's thread, after
        its last claim: see :meth:`CalendarBatch.take_arrays`)."""
        self.publish()
        self.sealed = self.cal.take_arrays(self.calendars[0].SORTED)

    def collect(self, runtime: DualQueueRuntime) -> None:
        """Hand this window's results to the coordinator (after the barrier)."""
        self.publish()  # a window run inline, or one a Ctrl-C cut short
        calendar = runtime._calendar
        if self.sealed is not None:
            calendar.extend_sorted(*self.sealed)
            self.sealed = None
        calendar.extend(self.cal)  # what ran inline on the coordinator, or was cut short
        self.cal.clear()
        heaps = self.heaps
        for ev in self.overflow:
            _heappush(heaps[ev.target], ev)
        self.stats.arena_full += len(self.overflow)
        self.overflow.clear()
        runtime.events_run += self.events
        stats = self.stats
        stats.events += self.events
        self.events = 0
        stats.cas_retries += self.leq.cas_retries
        self.leq.cas_retries = 0
        claimer = self.claimer
        stats.claims += claimer.claims
        claimer.claims = 0
        stats.steals += claimer.steals
        claimer.steals = 0
        if self.count_misses:
            stats.claim_misses += claimer.misses
            claimer.misses = 0

    def take_failure(self) -> BaseException | None:
        """This window's recorded failure (cleared)."""
        failure = self.failure
        self.failure = None
        self.failure_key = _NO_FAILURE
        return failure


class TracingWindowWorker(WindowWorker):
    """A :class:`WindowWorker` that records a ``run`` slice per entity (``trace=True``).

    It merges a claim as the untraced worker does (:meth:`merge_sent`), then runs each
    entity through the same hot loop (:meth:`run_merged`), one entity per call, so that the
    key of each run's first event is known: tracing costs a call and two clock reads per
    entity, and the untraced runtime uses :class:`WindowWorker` unchanged.
    """

    __slots__ = ("index", "task_end", "trace")

    def __init__(self, *args: Any, index: int, trace: Trace) -> None:
        super().__init__(*args)
        self.index = index
        self.trace = trace
        self.task_end = 0

    def run_entities(self, entities: list[int], bound: tuple[float, int]) -> None:
        self.merge_sent(entities)
        heaps, contexts = self.heaps, self.contexts
        run, index, trace = self.run_merged, self.index, self.trace
        for e in entities:
            heap = heaps[e]
            below = self.failure_key if self.failure_key < bound else bound
            first = heap[0][:2] if heap and heap[0] < below else None
            before = self.events
            start = _ns()
            run([e], bound)
            ran = self.events - before
            if ran:
                ctx = contexts[e]
                trace.slice(index, "run", start, _ns(), entity=e, events=ran, first=first,
                            last=(ctx.now, ctx._seq))


class DualQueueRuntime(WindowedRuntime):
    """Windows on ``threads`` OS threads (the caller is one) over LEQs + PEL, with the work
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
    about 100 µs on PCS; see :class:`~seer.sched.pool.WorkerPool`).
    """

    name = "dual-queue"
    #: The assignment used when none is given.
    default_assignment: ClassVar[str] = "steal"
    #: The intakes used when none are given (:mod:`seer.queues.protocol`).
    default_queues: ClassVar[str | type[QueueFactory]] = "treiber"

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False,
                 assignment: str | Assignment | None = None,
                 queues: str | QueueFactory | None = None,
                 arena_capacity: int | None = None, atomics_path: str | None = None,
                 spin_us: float = 50.0, hot_spin_us: float = 1000.0) -> None:
        self.assignment = get_assignment(assignment or self.default_assignment)
        default = self.default_queues
        self.queues = get_queues(queues or (default() if isinstance(default, type)
                                            else default))
        super().__init__(model, threads=threads, debug=debug,
                         max_events_per_step=max_events_per_step, trace=trace)
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
                                       self._heaps)
        self._epoch = 0  # windows run since the LEQs were last emptied (their epoch)
        # entity -> its index in the step's ActionBatch while its action waits for the
        # entity's claimer in the step's first window (-1: none waits)
        self._action_slots = np.full(n, -1, np.int64)
        self._pending_actions: ActionBatch | None = None
        self._pel = ParallelExecutiveList(n, self._buffer, pel_regions)
        self._agent_positions = np.arange(len(self.spec.agents), dtype=np.int64)
        self._atomics_path = atomics_path
        self._workers: list[WindowWorker] = []
        self._homed: list[list[int]] = []  # entity ids per home thread (_make_workers)
        self._bound: tuple[float, int] = (0.0, -1)
        self._out: tuple | None = None
        pool = self._start_pool(spin_us, hot_spin_us)
        try:
            self._make_workers()
        except BaseException:
            pool.close()  # leave no thread behind a failed constructor
            raise

    def stats_labels(self) -> dict[str, str]:
        return {"runtime": self.name, "assignment": self.assignment.name,
                "queues": self.queues.name}

    # -- set-up ---------------------------------------------------------------------------
    def _make_workers(self) -> None:
        """Fresh slabs, accessors and claimers for every thread (after construction, reset
        and resize), each made on its own thread together with new contexts and rows for
        the entities homed there (:meth:`Assignment.home`): free-threaded CPython counts
        references to an object with a plain add only on the thread that made it, and with
        an atomic one (slower, and contended when shared) everywhere else, so the objects a
        thread touches on every event should be its own (``docs/performance.md``)."""
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

        def make(index: int) -> None:
            self._own_contexts(homed[index])
            workers[index] = worker(
                self._leqs.worker(self._arena.slab(index), self._atomics_path),
                self.assignment.claimer(self._pel, index, threads, self._atomics_path),
                self._pel.claimer(threads, path=self._atomics_path),
                pool.stats[index], self._contexts, self._handlers, self._private_views(),
                self._event_limit, limit_error, self._calendar_box,
                **({"index": index, **traced} if traced else {}))

        pool.run_setup(make)
        self._workers = workers
        self._homed = homed

    def _seed_generators(self, seed_seq: np.random.SeedSequence) -> None:
        """Each entity's generator made on its home thread
        (:meth:`ThreadedRuntime._seed_generators_on`)."""
        self._seed_generators_on(seed_seq, self._homed)

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
        lookahead = _own_float(self.spec.lookahead)
        n = _own_int(self.spec.n_entities)
        for e in entities:
            old = contexts[e]
            ctx = Context.__new__(Context)
            for name in names:  # Context.__init__ sets every slot
                setattr(ctx, name, getattr(old, name))
            ctx.row = make_row(row_class, arrays, e)
            ctx._kind_ids, ctx._lookahead, ctx._n = kind_ids, lookahead, n
            ctx.id, ctx._origin_bits = _own_int(old.id), _own_int(old._origin_bits)
            contexts[e] = ctx  # one slot of a list: safe beside other threads' stores

    def _clear_events(self) -> None:
        super()._clear_events()
        self._action_slots[:] = -1
        self._pending_actions = None
        self._leqs.reset()  # intakes and heaps empty, all arena records back in the pool
        self._workers = []  # their slabs are void after the arena reset
        self._make_workers()

    def _resize_threads(self, threads: int) -> None:
        self._pool.resize(threads)
        self._make_workers()

    @property
    def pending(self) -> int:
        """Events scheduled for later steps: merged ones plus those still in intakes."""
        return super().pending + self._leqs.in_intakes(self._workers[0].slab)

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
            super()._push_externals(batch)
            return
        self._action_slots[batch.entity_array] = np.arange(n_actions, dtype=np.int64)
        self._pending_actions = batch
        # equal τ: already sorted for the calendar
        self._calendar.extend_sorted(np.full(n_actions, batch.t0), batch.seq_array,
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
            heaps = self._heaps
            for e in left.tolist():
                _heappush(heaps[e], batch.event(int(slots[e])))
            slots[left] = -1

    # -- windows ---------------------------------------------------------------------------
    def _run_window(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        self._bound = bound
        actions = self._pending_actions is not None
        if actions:
            self._hand_out_actions()
        # A new LEQ epoch per window: the wake-up below is the barrier it needs.
        self._epoch = epoch = self._epoch + 1
        for w in self._workers:
            w.leq.set_epoch(epoch)
        self._abort = self._interrupted  # a Ctrl-C between windows still stops this one
        pool = self._pool
        trace = self.trace
        if trace is not None:
            start = _ns()
            trace.counter(0, "ready entities", len(ready))
        try:
            if len(ready) == 1 or pool.threads == 1:
                self._workers[0].run_entities(ready.tolist(), bound)
            else:
                self.assignment.publish(self._pel, ready, pool.threads, self.spec.n_entities)
                pool.run(self._window_task, self._abort_window,
                         give_up_after=self._give_up_after)
        except BaseException as exc:
            self._collect()
            self._raise_failure(exc)
        finally:
            if actions:
                self._settle_actions()
            if trace is not None:
                self._trace_window(start, len(ready), bound)
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
            pool.run(task, self._abort_window, give_up_after=self._give_up_after)
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
        try:
            while (chunk := claimer.claim()) is not None:
                store(range(chunk[0], chunk[1]), state, start, buffers)
        except Exception as exc:  # the rest of this chunk is not needed: an error is certain
            self._out_failures.append((exc.agent_position, exc))  # list.append is atomic


class SeerRuntime(DualQueueRuntime):
    """SEER: home segments (``e % T``) and guided work stealing."""

    name = "seer"
    default_assignment = "steal"


class StaticRuntime(DualQueueRuntime):
    """The ``static`` peer (ROSS-T-like): entity ``e`` always on thread ``e % T``."""

    name = "static"
    default_assignment = "round-robin"


class StaticBlockRuntime(DualQueueRuntime):
    """The ``static-block`` peer: contiguous id blocks per thread (ROSS's linear mapping)."""

    name = "static-block"
    default_assignment = "block"


class SeerMsRuntime(SeerRuntime):
    """``seer-ms``: SEER with Michael-Scott queue intakes (:mod:`seer.queues.ms`) in place of
    the Treiber stacks: the worked example of swapping the intakes (``docs/queues.md``)."""

    name = "seer-ms"
    default_queues = MsQueues
