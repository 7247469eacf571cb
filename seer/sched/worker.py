"""A window's worker: one thread's private state and the hot loop that runs entities.

SEER's runtime (:mod:`seer.sched.dual_queue`) makes one :class:`WindowWorker` per pool
thread, on that thread; in each window the thread claims ranges of the ready entities
and, for each, merges what was sent to it into its heap and runs its events below the
window's bound (:meth:`WindowWorker.run_entities`). Cross-entity events wait in the
worker's outbox until its last claim, then go to their targets' intakes in one tight
loop (:meth:`WindowWorker.publish`). After the barrier the coordinator collects each
worker's results (:meth:`WindowWorker.collect`).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from functools import partial
from operator import itemgetter
from typing import Any

import numpy as np

from seer.actions import ActionBatch
from seer.errors import tag_event
from seer.events import Event
from seer.model import StateArrays
from seer.queues import NIL, PelClaimer
from seer.queues.protocol import IntakeWorker
from seer.sched.assignment import Claimer
from seer.sched.calendar import CalendarBatch
from seer.sched.copies import own_float
from seer.sched.pool import WorkerStats
from seer.trace import Trace

__all__ = ["TracingWindowWorker", "WindowWorker"]

_ns = time.perf_counter_ns
_heappush = heapq.heappush
_heappop = heapq.heappop
_tuple_new = tuple.__new__
_NO_FAILURE = (1e999, 1 << 64)  # above every event key (constants: immortal)
_STOPPED = (-1e999, -1)  # below every event key: the bound after the event limit
_tau_of, _seq_of, _target_of = itemgetter(0), itemgetter(1), itemgetter(2)


class WindowWorker:
    """Thread ``index``'s private state: its LEQ handle (slab + atomics accessor), its
    claimers, the calendar entries it produced this window, and the entity it runs.

    Free-threaded CPython keeps reference counts of an object shared by several threads in
    an atomic field, so every load of such an object from a hot loop costs a contended
    atomic. The worker therefore holds its own bound methods of the handlers and its own
    views of the state and snapshot (handed to each context it runs as ``ctx.snapshot``),
    each behind a switch (:mod:`seer.sched.copies`), and :meth:`run_merged` loads every
    shared container once per chunk, not per event."""

    __slots__ = ("actions", "cal", "calendars", "claimer", "contexts", "count_misses", "cur",
                 "events", "failure", "failure_key", "handlers", "heads", "heaps", "leq",
                 "limit", "model", "outbox", "output_claimer", "overflow", "push",
                 "runtime_limit_error", "sealed", "send_all", "slab", "snapshot", "state",
                 "stats")

    def __init__(self, leq: IntakeWorker, claimer: Claimer, output_claimer: PelClaimer,
                 stats: WorkerStats, contexts: list, handlers: tuple,
                 views: tuple[StateArrays, StateArrays], limit: int,
                 limit_error: Callable[[int, Event, str], Exception],
                 calendars: list, model: Any) -> None:
        # limit_error must not be a bound method of the runtime (no cycle: see
        # EntityEvents.push).
        self.heaps = leq.leqs.heaps
        self.contexts = contexts
        # The handler table, the state views and the model this thread's handlers are bound
        # to: its own copies, made on this thread, or the shared ones (the runtime's
        # ``copies`` switches: seer.sched.copies).
        self.handlers = handlers
        self.model = model
        self.state, self.snapshot = views
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
        slots (see :meth:`SeerRuntime._push_externals`)."""
        heaps, heads, merge = self.heaps, self.heads, self.leq.merge
        now_off, prev_off = self.leq.offset, self.leq.previous_offset
        actions = self.actions
        if actions is not None:
            slots, batch = actions
            t0, seqs = own_float(batch.t0), memoryview(batch.seq_array)
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
        push, snapshot, model = self.push, self.snapshot, self.model
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
                    ctx.model = model  # this thread's copy, with that switch
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

    def collect(self, runtime: Any) -> None:
        """Hand this window's results to SEER's runtime, ``runtime`` (on the coordinator,
        after the barrier)."""
        self.publish()  # a window run inline, or one a Ctrl-C cut short
        calendar = runtime._events.calendar
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

