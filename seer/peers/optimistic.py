"""The ``optimistic`` peer: a Time Warp runtime in the manner of ROOT-Sim.

Jefferson's Time Warp (D. R. Jefferson, "Virtual time", TOPLAS 7(3), 1985) as ROOT-Sim
runs it on shared memory (entities bound to threads, per-thread input queues, state saving
before every event or every k events with coasting forward, anti-messages, a GVT and fossil
collection, load sharing by rebinding entities). See ``docs/optimistic.md`` for the design,
the invariants and where it wins or loses against SEER's conservative windows.

One step, on every thread ``i`` (the caller is thread 0):

* thread ``i`` owns the entities ``e`` with ``owner[e] == i`` (block mapping at reset,
  rebound by measured load between steps). It repeatedly runs the κ-smallest pending event
  of its entities below the step end ``τ_{t+1}``, without waiting for any window bound;
* before each event it saves the entity's *checkpoint* (its state rows, its RNG state and
  its emit counters; or every ``checkpoint_every`` events) and it records the event with the
  events its handler emitted (the entity's *output list*);
* an event for an entity of another thread goes into that thread's *inbox*; an event for
  an own entity goes straight into the entity's pending heap;
* an event that arrives below what its entity already ran (a *straggler*) rolls the entity
  back: the events at or above the straggler's κ return to the pending heap, the state is
  restored (from their first checkpoint, or from an earlier one by coasting forward: the
  events in between re-run with their emits discarded), and every event they emitted is
  cancelled by an *anti-message*. An anti-message removes its event if it is still pending
  (annihilation) or first rolls its receiver back to it;
* the step ends when every thread is idle and every message sent has been received
  (counting termination detection): that is the step's GVT round. Then GVT ≥ ``τ_{t+1}``,
  every processed event is committed, and fossil collection drops all saved states and
  processed events.

Why the result is bit-identical to serial stepping: a handler's effect depends only on its
entity's row, RNG and emit counter, the event, and the step-start snapshot / prepared /
episode data, which do not change during a step (``docs/design.md``, "The event
contract"). Restoring all three per-entity parts before re-execution therefore makes a
re-executed event emit the same ``seq`` values and produce the same bits; at the end of the
step each entity has run exactly its serial event sequence in κ order, because any event
that arrived late rolled back everything above it, and every event it caused on a path
that was undone was annihilated. A handler may run more than once for one event (on a
path later undone, then again): it must have no effect outside its row, RNG and emits.

Handler exceptions (the decision, ``docs/optimistic.md``): an ``Exception`` from a handler
is *provisional*. The entity's state is restored to before the failing event (its partial
emits were never sent: emits are buffered until the handler returns), the event stays
pending and the entity *stalls* there. If anything below that event reaches the entity
later (a straggler or an anti-message), the failure is dropped and the entity runs on;
otherwise the failure is still there when the step's GVT round completes, and the smallest
one is raised, which is the one serial stepping meets: every event below it has run on its
committed path, so it is certain (GVT equals its κ).

Shared words during a step (who writes, who reads, why the order is enough):

* ``owner[e]``: written by the coordinator between steps; read by every thread; ordered
  by the pool hand-off (``docs/design.md``, "The pool hand-off").
* ``inboxes[i]`` (a ``collections.deque``): producers ``append``, thread ``i``
  ``popleft``s. Both are atomic (a per-object critical section in the free-threaded
  build), and each producer's messages come out in the order it appended them. That
  per-channel FIFO is what keeps an anti-message from overtaking its event: an entity's
  messages all leave from its owner thread.
* ``pending[e]``, ``processed[e]``, ``failed_key[e]``, ``failed_exc[e]``, ``load_ns[e]``,
  the entity's rows, RNG and context: only thread ``owner[e]`` during a step; the
  coordinator after the step's barrier (``WorkerPool.run`` returning).
* ``idle[i]``, ``sent[i]``, ``recv[i]``, ``n_idle``, ``done``: written under the
  termination lock (``cv``) by thread ``i`` when it goes idle or leaves idle; read under
  the same lock by the thread that checks for termination. An idle thread changes none of
  its counters until it leaves idle, which takes the lock, so the check sees a consistent
  cut.
* ``idle[o]`` peeked without the lock by a sender, only to decide whether to notify: a
  stale read costs one timed wait (``_IDLE_WAIT_S``) of the receiver, never correctness.
* ``abort``: plain stores by any thread and by the Ctrl-C handler (never under the lock:
  the handler may interrupt the main thread while it holds it); plain reads once per
  event and in every timed wait. A stale read costs one more event.
"""

from __future__ import annotations

import ctypes
import heapq
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from itertools import pairwise
from types import MethodType
from typing import Any

import numpy as np

from seer.actions import ActionBatch
from seer.errors import ModelError, tag_event
from seer.events import Event
from seer.model import Model, StateArrays
from seer.runtime import Runtime, step_limit_error
from seer.sched.pool import WorkerPool

__all__ = ["OptimisticRuntime", "OptimisticWorker"]

_heappush = heapq.heappush
_heappop = heapq.heappop
_heapify = heapq.heapify
_ns = time.perf_counter_ns

#: How long an idle thread waits before it re-checks its inbox and the termination
#: condition on its own (a backstop for a notification lost to a stale ``idle`` read).
_IDLE_WAIT_S = 0.002
#: Bytes of one PCG64 state (128-bit state, 128-bit increment, the buffered 32-bit word and
#: its flag): what a checkpoint of the RNG holds, for the ``state_saving_bytes`` counter.
_RNG_STATE_BYTES = 40


class _Anti:
    """An anti-message: cancel ``ev`` (identified by identity, not by κ: after a rollback
    the re-execution may emit a different event with the same ``seq``)."""

    __slots__ = ("ev",)

    def __init__(self, ev: Event) -> None:
        self.ev = ev


def _discard(ev: Event) -> None:
    """The push of a context while it coasts forward: its emits were sent the first time."""


def _pcg64_views(rng: Any) -> tuple[memoryview, memoryview] | None:
    """Writable byte views of a PCG64 generator's raw state, or None (another bit
    generator, or a numpy whose layout failed the self-test at import)."""
    bg = rng.bit_generator
    if not _RAW_PCG64 or type(bg) is not np.random.PCG64:
        return None
    return _raw_views(bg)


def _raw_views(bg: Any) -> tuple[memoryview, memoryview] | None:
    """numpy's ``PCG64.ctypes.state_address`` points to its ``pcg64_state``: a pointer to
    the 32-byte ``pcg64_random_t`` (128-bit state and increment), then ``int has_uint32``
    and ``uint32_t uinteger`` (the buffered half of a 64-bit draw). Copying those 40 bytes
    saves and restores the generator exactly, in the checkpoint's one ``bytes`` join, where
    reading ``bit_generator.state`` builds a dict of Python ints (2-3 µs per event). The
    views do not keep the generator alive: the caller keeps it (``_entity_views``)."""
    try:
        addr = bg.ctypes.state_address
        core = ctypes.c_void_p.from_address(addr).value
        return (memoryview((ctypes.c_char * 32).from_address(core)).cast("B"),
                memoryview((ctypes.c_char * 8).from_address(addr + 8)).cast("B"))
    except Exception:  # no ctypes interface: the dict path is always right
        return None


def _entity_views(rowviews: tuple[memoryview, ...], rng: Any) -> tuple[Any, tuple | None]:
    """``(rng, views)``: the row views plus the generator's raw views, or ``(rng, None)``
    when the generator is saved through its ``state`` dict."""
    raw = _pcg64_views(rng)
    return (rng, None if raw is None else (*rowviews, *raw))


def _raw_pcg64_works() -> bool:
    """Self-test of the raw PCG64 path, once at import: save, draw at every width, restore;
    the state and the draws must come back exactly (else the dict path is used)."""
    try:
        rng = np.random.default_rng(12345)
        rng.integers(0, 2**32, dtype=np.uint32)  # leaves a buffered 32-bit half
        views = _raw_views(rng.bit_generator)
        if views is None:
            return False
        saved, state = b"".join(views), rng.bit_generator.state

        def draws() -> list:
            return [rng.random(), int(rng.integers(0, 2**32, dtype=np.uint32)),
                    rng.normal(), int(rng.integers(0, 2**62))]

        first = draws()
        views[0][:] = saved[:32]
        views[1][:] = saved[32:]
        return rng.bit_generator.state == state and draws() == first
    except Exception:
        return False


#: Whether checkpoints copy PCG64 generators' raw state (see :func:`_raw_views`).
_RAW_PCG64 = _raw_pcg64_works()


class _Shared:
    """What the threads of one runtime share: per-entity event structures, the binding,
    the inboxes and the termination-detection words. No reference to the runtime (the
    threads must not keep a dropped runtime alive). See the module docstring for who
    writes what."""

    def __init__(self, n: int, threads: int) -> None:
        self.pending: list[list[Event]] = [[] for _ in range(n)]
        #: per entity, the events run this step in κ order: ``(event, checkpoint | None,
        #: emitted events)``; ``processed[e][m]`` has a checkpoint iff ``m % k == 0``.
        self.processed: list[list[tuple[Event, Any, list[Event]]]] = [[] for _ in range(n)]
        self.failed_key: list[tuple[float, int] | None] = [None] * n
        self.failed_exc: list[BaseException | None] = [None] * n
        #: nanoseconds spent in each entity's handlers since the last rebinding
        self.load_ns: list[int] = [0] * n
        self.owner: list[int] = []
        #: where each field's bytes are in a checkpoint's row bytes: ``(start, stop)``
        self.row_slices: list[tuple[int, int]] = []
        #: per entity, ``(its generator, the byte views a checkpoint joins)`` (or None until
        #: its first checkpoint); rebuilt when the generator changes (a new episode)
        self.views: list[tuple[Any, tuple | None] | None] = [None] * n
        self.inboxes: list[deque] = []
        self.cv = threading.Condition(threading.Lock())
        self.abort = False
        self.t_end = 0.0
        self.threads = 0
        self.resize(threads)
        self.start_step(0.0)

    def resize(self, threads: int) -> None:
        self.threads = threads
        self.inboxes = [deque() for _ in range(threads)]
        self.idle = [False] * threads
        self.sent = [0] * threads
        self.recv = [0] * threads

    def start_step(self, t_end: float) -> None:
        """Between steps (coordinator only): arm the termination detection."""
        self.t_end = t_end
        self.n_idle = 0
        self.done = False
        self.abort = False
        for index in range(self.threads):
            self.idle[index] = False
            self.sent[index] = 0
            self.recv[index] = 0


class OptimisticWorker:
    """Thread ``index``'s Time Warp engine: its entities, its inbox, its scheduler heap of
    ``(τ, seq, entity)`` entries (stale entries are skipped), its worklist of anti-messages
    for its own entities, and its counters. Used by one thread at a time."""

    __slots__ = ("annihilated", "antis", "checkpoints", "ckpt_bytes", "ckpt_every",
                 "coasted", "contexts", "cur", "events", "failures", "handlers", "inbox",
                 "index", "limit", "limit_error", "net", "owned", "recv", "rollbacks",
                 "rolled_back", "rowviews", "saved_bytes", "sched", "sent", "sh",
                 "snapshot", "state", "worklist")

    def __init__(self, index: int, sh: _Shared, contexts: list, handlers: tuple,
                 rowviews: list[tuple[memoryview, ...]], ckpt_bytes: int, ckpt_every: int,
                 views: tuple[StateArrays, StateArrays], limit: int,
                 limit_error: Callable[[int, Event, str], Exception]) -> None:
        self.index = index
        self.sh = sh
        self.inbox = sh.inboxes[index]
        self.contexts = contexts
        # Own bound methods of the handlers: a shared one would be reference-counted with
        # contended atomics in the free-threaded build (as in the dual-queue worker).
        self.handlers = tuple(
            MethodType(h.__func__, h.__self__) if isinstance(h, MethodType) else h
            for h in handlers)
        self.rowviews = rowviews
        self.ckpt_bytes = ckpt_bytes
        self.ckpt_every = ckpt_every
        self.state, self.snapshot = views
        self.limit = limit
        self.limit_error = limit_error
        self.owned: list[int] = []
        self.sched: list[tuple[float, int, int]] = []
        self.worklist: deque[Event] = deque()
        self.cur = -1
        self.clear_counters()

    def clear_counters(self) -> None:
        self.events = 0  # handler runs, rolled back or not (coasting excluded)
        self.rolled_back = 0
        self.rollbacks = 0
        self.antis = 0
        self.annihilated = 0
        self.checkpoints = 0
        self.saved_bytes = 0
        self.coasted = 0
        self.failures = 0  # provisional handler failures (committed or not)
        self.net = 0  # events run minus events rolled back, this step
        self.sent = 0
        self.recv = 0

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> None:
        """Run this thread's entities up to the step end; return when the step's
        termination (all threads idle, no message in flight) is detected, or on abort."""
        sh = self.sh
        inbox, sched, worklist = self.inbox, self.sched, self.worklist
        pending, processed, failed_key = sh.pending, sh.processed, sh.failed_key
        contexts, handlers, load = self.contexts, self.handlers, sh.load_ns
        t_end = sh.t_end
        k = self.ckpt_every
        limit = self.limit
        pop, push = _heappop, _heappush
        self.net = 0
        self.sent = self.recv = 0
        sched.clear()
        for e in self.owned:
            heap = pending[e]
            if heap and heap[0][0] < t_end:
                sched.append((heap[0][0], heap[0][1], e))
        _heapify(sched)
        while True:
            if inbox:
                self.drain()
            if sh.abort:
                return
            ev = None
            while sched:
                tau, seq, e = pop(sched)
                heap = pending[e]
                if not heap:
                    continue
                head = heap[0]
                if head[0] != tau or head[1] != seq:
                    continue  # stale: the head changed since this entry was made
                fk = failed_key[e]
                if fk is not None and (tau, seq) >= fk:
                    continue  # stalled at a provisional failure; rescheduled if it clears
                ev = pop(heap)
                break
            if ev is None:
                if self.idle_wait():
                    return
                continue
            proc = processed[e]
            ctx = contexts[e]
            m = len(proc)  # ev's place in proc: processed[e][m]
            ckpt = self.save(e, ctx) if m % k == 0 else None
            out: list[Event] = []
            # emits (to itself or not) are buffered until the handler returns
            ctx._push = ctx._self_push = out.append
            ctx.now = ev[0]
            ctx._seq = ev[1]
            self.cur = e
            start = _ns()
            try:
                handlers[ev[3]](ctx, ev)
            except BaseException as exc:
                tag_event(exc, ev)
                if not isinstance(exc, Exception):
                    raise
                load[e] += _ns() - start
                self.events += 1
                self.fail(e, ev, ckpt, exc)
                continue
            finally:
                self.cur = -1
            load[e] += _ns() - start
            self.events += 1
            proc.append((ev, ckpt, out))
            self.net += 1
            if self.net > limit:
                raise tag_event(self.limit_error(e, ev, "on one thread of the optimistic "
                                                 "runtime"), ev)
            for child in out:  # the events ev emitted (child[2]: the target)
                if child[2] == e:  # a self-event: later than everything e ran, never a straggler
                    push(heap, child)
                else:
                    self.deliver(child)
            if worklist:
                self.drain_worklist()
            if heap and heap[0][0] < t_end:
                push(sched, (heap[0][0], heap[0][1], e))

    def idle_wait(self) -> bool:
        """No event of this thread is runnable: wait for a message or for termination.
        True when the step is over (or aborted), False when there is a message to handle.

        Termination is declared, under the lock, when all threads are idle and the counts
        of messages sent and received (published under the lock when each thread went
        idle, unchanged while it stays idle) are equal: then no message is in any inbox or
        on its way, and no thread has a runnable event, so none can ever appear."""
        sh = self.sh
        cv = sh.cv
        index = self.index
        with cv:
            if self.inbox:
                return False
            sh.idle[index] = True
            sh.n_idle += 1
            sh.sent[index] = self.sent
            sh.recv[index] = self.recv
            try:
                while True:
                    if sh.done or sh.abort:
                        return True
                    if sh.n_idle == sh.threads and sum(sh.sent) == sum(sh.recv):
                        sh.done = True
                        cv.notify_all()
                        return True
                    if self.inbox:
                        return False
                    cv.wait(_IDLE_WAIT_S)
            finally:
                sh.idle[index] = False
                sh.n_idle -= 1

    def drain(self) -> None:
        """Handle every message in the inbox, in arrival order."""
        inbox = self.inbox
        worklist = self.worklist
        while True:
            try:
                m = inbox.popleft()
            except IndexError:
                return
            self.recv += 1
            if m.__class__ is _Anti:
                self.annihilate(m.ev)
            else:
                self.insert(m)
            if worklist:
                self.drain_worklist()

    def drain_worklist(self) -> None:
        """Anti-messages for this thread's own entities (cascades end: each one removes an
        event that exists, and no event runs until the worklist is empty)."""
        worklist = self.worklist
        while worklist:
            self.annihilate(worklist.popleft())

    # -- events arriving -------------------------------------------------------------------------
    def deliver(self, ev: Event) -> None:
        """Send ``ev`` (an emitted event for another entity) to its owner."""
        sh = self.sh
        owner = sh.owner[ev[2]]
        if owner == self.index:
            self.insert(ev)
            return
        sh.inboxes[owner].append(ev)
        self.sent += 1
        if sh.idle[owner]:
            self.wake()

    def wake(self) -> None:
        with self.sh.cv:
            self.sh.cv.notify_all()

    def insert(self, ev: Event) -> None:
        """A positive event for an own entity: roll the entity back first if ``ev`` is a
        straggler, drop the entity's provisional failure if ``ev`` comes before it."""
        sh = self.sh
        e = ev[2]
        key = (ev[0], ev[1])
        fk = sh.failed_key[e]
        if fk is not None and key < fk:
            self.clear_failure(e)
        proc = sh.processed[e]
        if proc:
            last = proc[-1][0]
            if (last[0], last[1]) > key:
                self.rollback(e, key)
        heap = sh.pending[e]
        _heappush(heap, ev)
        if heap[0] is ev and ev[0] < sh.t_end:
            _heappush(self.sched, (ev[0], ev[1], e))

    def annihilate(self, ev: Event) -> None:
        """An anti-message for event ``ev`` of an own entity: remove ``ev`` if pending, else
        roll its entity back to ``ev`` first (then it is pending)."""
        sh = self.sh
        e = ev[2]
        key = (ev[0], ev[1])
        fk = sh.failed_key[e]
        if fk is not None and key <= fk:
            self.clear_failure(e)
        proc = sh.processed[e]
        rolled = False
        if proc:
            last = proc[-1][0]
            if (last[0], last[1]) >= key:
                self.rollback(e, key)
                rolled = True
        self.remove_pending(e, ev)
        if not rolled:
            self.annihilated += 1
        self.schedule(e)

    def remove_pending(self, e: int, ev: Event) -> None:
        heap = self.sh.pending[e]
        # list.index compares by identity first; another pending event of ``e`` never has
        # ev's κ (seq is unique per origin and an anti-message always precedes the re-sent
        # event on the FIFO channel), so the comparison never reaches the payloads.
        try:
            i = heap.index(ev)
        except ValueError:
            raise RuntimeError(f"optimistic runtime: anti-message for {ev[:4]} found no "
                               f"event of entity {e} (internal invariant broken)") from None
        last = heap.pop()
        if i < len(heap):
            heap[i] = last
            _heapify(heap)

    def schedule(self, e: int) -> None:
        heap = self.sh.pending[e]
        if heap and heap[0][0] < self.sh.t_end:
            _heappush(self.sched, (heap[0][0], heap[0][1], e))

    def clear_failure(self, e: int) -> None:
        """Something below entity ``e``'s provisional failure changed: the failure was on
        a path that is now undone; the entity runs on."""
        sh = self.sh
        sh.failed_key[e] = None
        sh.failed_exc[e] = None
        self.schedule(e)

    # -- rollback --------------------------------------------------------------------------------
    def rollback(self, e: int, key: tuple[float, int]) -> None:
        """Undo every event of entity ``e`` at or above ``key``: cancel what they emitted,
        put them back in the pending heap, restore the state from before the first."""
        sh = self.sh
        if sh.failed_key[e] is not None:
            self.clear_failure(e)
        proc = sh.processed[e]
        heap = sh.pending[e]
        i = len(proc)
        while i and (proc[i - 1][0][0], proc[i - 1][0][1]) >= key:
            i -= 1
        # Newest first: a self-event cancelled here is later than its parent, so if it ran,
        # it has already been put back into the pending heap.
        for j in range(len(proc) - 1, i - 1, -1):
            ev, _, out = proc[j]
            for child in out:
                self.cancel(child, e)
            _heappush(heap, ev)
        self.restore(e, proc, i, proc[i][1])
        undone = len(proc) - i
        del proc[i:]
        self.rolled_back += undone
        self.net -= undone
        self.rollbacks += 1
        self.schedule(e)

    def cancel(self, ev: Event, origin: int) -> None:
        """Send the anti-message for ``ev``, emitted by entity ``origin`` on an undone path."""
        self.antis += 1
        e = ev[2]
        if e == origin:  # a self-event: it is in origin's pending heap
            self.remove_pending(origin, ev)
            self.annihilated += 1
            return
        sh = self.sh
        owner = sh.owner[e]
        if owner == self.index:
            self.worklist.append(ev)  # handled before any event runs (drain_worklist)
            return
        sh.inboxes[owner].append(_Anti(ev))
        self.sent += 1
        if sh.idle[owner]:
            self.wake()

    def fail(self, e: int, ev: Event, ckpt: Any, exc: BaseException) -> None:
        """``ev``'s handler raised ``exc``: restore entity ``e`` to before ``ev`` (nothing
        it emitted was sent), keep ``ev`` pending and stall ``e`` there."""
        sh = self.sh
        self.restore(e, sh.processed[e], len(sh.processed[e]), ckpt)
        _heappush(sh.pending[e], ev)
        sh.failed_key[e] = (ev[0], ev[1])
        sh.failed_exc[e] = exc
        self.failures += 1

    # -- state saving -----------------------------------------------------------------------------
    def save(self, e: int, ctx: Any) -> tuple:
        """Entity ``e``'s checkpoint ``(bytes, rng_state, counter, cross)``: the bytes of
        its row in every field and, for a PCG64 generator, of the RNG's raw state, joined
        in one C call (``rng_state`` is then None); for any other generator its
        ``bit_generator.state`` dict. Plus the emit counters."""
        self.checkpoints += 1
        self.saved_bytes += self.ckpt_bytes
        views = self.sh.views[e]
        rng = ctx.rng
        if views is None or views[0] is not rng:  # first use, or a new episode's generator
            views = self.sh.views[e] = _entity_views(self.rowviews[e], rng)
        if views[1] is not None:
            return (b"".join(views[1]), None, ctx._counter, ctx._cross)
        return (b"".join(self.rowviews[e]), rng.bit_generator.state, ctx._counter,
                ctx._cross)

    def load(self, e: int, ckpt: tuple) -> None:
        data, rng_state, counter, cross = ckpt
        sh = self.sh
        for v, (a, b) in zip(self.rowviews[e], sh.row_slices, strict=True):
            v[:] = data[a:b]
        ctx = self.contexts[e]
        if rng_state is None:  # raw PCG64 bytes after the rows (see _entity_views)
            core, extra = sh.views[e][1][-2:]
            a = sh.row_slices[-1][1]
            core[:] = data[a:a + 32]
            extra[:] = data[a + 32:a + 40]
        else:
            ctx.rng.bit_generator.state = rng_state
        ctx._counter = counter
        ctx._cross = cross

    def restore(self, e: int, proc: list, i: int, ckpt: Any) -> None:
        """Make entity ``e``'s state what it was before ``proc[i]`` (whose checkpoint, or
        None, is ``ckpt``): load ``ckpt``, or the latest earlier checkpoint and coast
        forward over the events in between (their emits discarded: they were sent, and
        they are not undone)."""
        if ckpt is not None:
            self.load(e, ckpt)
            return
        j = i - 1
        while proc[j][1] is None:  # proc[0] always has a checkpoint
            j -= 1
        self.load(e, proc[j][1])
        ctx = self.contexts[e]
        handlers = self.handlers
        ctx._push = ctx._self_push = _discard
        try:
            for m in range(j, i):
                ev = proc[m][0]
                ctx.now = ev[0]
                ctx._seq = ev[1]
                try:
                    handlers[ev[3]](ctx, ev)
                except Exception as exc:
                    raise RuntimeError(
                        f"entity {e}'s handler for the event at t={ev[0]!r} (seq {ev[1]}) "
                        "raised while coasting forward although it had run without error "
                        "from the same state: the handler is not deterministic (it depends "
                        "on something besides its row, its RNG, the event and the snapshot)"
                    ) from exc
        finally:
            ctx._push = ctx._self_push = _discard  # the next event sets its own buffer
        self.coasted += i - j


class OptimisticRuntime(Runtime):
    """Time Warp: each thread runs its entity block ahead, rolling back on stragglers. See
    the module docstring and ``docs/optimistic.md``.

    ``checkpoint_every``: save an entity's state before every k-th of its events (1: before
    each); a rollback to an event without a checkpoint coasts forward from the latest
    earlier one. ``rebind_every``: rebind entities to threads by measured handler time
    every that many steps (0: never; the block mapping stays). ``rebind_tolerance``: the
    imbalance (max - min thread load over the mean) tolerated before entities move.
    """

    name = "optimistic"

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False,
                 checkpoint_every: int = 1, rebind_every: int = 4,
                 rebind_tolerance: float = 0.1, spin_us: float = 0.0) -> None:
        for name, value, low in (("checkpoint_every", checkpoint_every, 1),
                                 ("rebind_every", rebind_every, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ModelError(f"{name} must be an int >= {low}, got {value!r}")
        if not float(rebind_tolerance) >= 0.0:
            raise ModelError(f"rebind_tolerance must be >= 0, got {rebind_tolerance!r}")
        self.checkpoint_every = checkpoint_every
        self.rebind_every = rebind_every
        self.rebind_tolerance = float(rebind_tolerance)
        n = model.n_entities if isinstance(model, Model) else 1
        self._shared = _Shared(n, 1)  # sized once the thread count is validated
        pending = self._shared.pending

        def coordinator_push(ev: Event) -> None:  # a closure: no runtime reference cycle
            _heappush(pending[ev.target], ev)

        self._coordinator_push = coordinator_push
        super().__init__(model, threads=threads, debug=debug,
                         max_events_per_step=max_events_per_step, trace=trace)
        self._shared.resize(self._threads)
        # Per entity, one byte view per field of its row (the runtime's arrays are
        # C-contiguous and never reallocated): a checkpoint joins them into one bytes
        # object, and ``row_slices`` says where each field's bytes are in it.
        flat = [(memoryview(a).cast("B"), a[0:1].nbytes) for a in self._arrays.values()]
        self._rowviews = [tuple(mv[e * rb:(e + 1) * rb] for mv, rb in flat)
                          for e in range(self.spec.n_entities)]
        offsets = np.cumsum([0] + [rb for _, rb in flat]).tolist()
        self._shared.row_slices = list(pairwise(offsets))
        self._ckpt_bytes = offsets[-1] + _RNG_STATE_BYTES
        self._totals = dict.fromkeys(_COUNTERS, 0)
        self._steps_since_rebind = 0
        self.gvt = 0.0
        self._workers: list[OptimisticWorker] = []
        self._bind_dirty = True
        pool = self._use_pool(WorkerPool(self._threads, name=self._thread_name(),
                                         spin_us=spin_us))
        try:
            self._block_binding()
            self._make_workers()
        except BaseException:
            pool.close()  # leave no thread behind a failed constructor
            raise

    # -- set-up ---------------------------------------------------------------------------------
    def _make_workers(self) -> None:
        sh = self._shared
        self._workers = [
            OptimisticWorker(index, sh, self._contexts, self._handlers, self._rowviews,
                             self._ckpt_bytes, self.checkpoint_every, self._private_views(),
                             self._event_limit,
                             partial(step_limit_error, self.spec.name,
                                     self.max_events_per_step, text=self._limit_text))
            for index in range(self._threads)]
        self._bind_dirty = True

    def _block_binding(self) -> None:
        """ROOT-Sim's (and ROSS's) initial linear mapping: contiguous id blocks."""
        n, threads = self.spec.n_entities, self._threads
        owner = self._shared.owner = [e * threads // n for e in range(n)]
        # each entity's generator is made on the thread it is bound to (reset)
        self._homed = [[] for _ in range(threads)]
        for e, index in enumerate(owner):
            self._homed[index].append(e)
        self._bind_dirty = True

    def _apply_binding(self) -> None:
        """Give each worker its entities, and each entity its owner's snapshot views."""
        owner = self._shared.owner
        for w in self._workers:
            w.owned = []
        for e, ctx in enumerate(self._contexts):
            w = self._workers[owner[e]]
            w.owned.append(e)
            ctx.snapshot = w.snapshot
        self._bind_dirty = False

    def _resize_threads(self, threads: int) -> None:
        self._pool.resize(threads)
        self._shared.resize(threads)
        self._block_binding()
        self._make_workers()

    # -- event placement ------------------------------------------------------------------------
    def _make_push(self, e: int) -> Callable[[Event], Any]:
        return self._coordinator_push

    def _push_externals(self, batch: ActionBatch) -> None:
        push = self._coordinator_push
        for ev in batch.events():
            push(ev)

    def _clear_events(self) -> None:
        sh = self._shared
        n = self.spec.n_entities
        for e in range(n):
            sh.pending[e].clear()
            sh.processed[e].clear()
        sh.failed_key[:] = [None] * n
        sh.failed_exc[:] = [None] * n
        sh.load_ns[:] = [0] * n
        sh.views[:] = [None] * n  # they hold the old episode's generators
        for inbox in sh.inboxes:
            inbox.clear()
        for w in self._workers:
            w.worklist.clear()
            w.sched.clear()
        for ctx in self._contexts:
            ctx._push = ctx._self_push = self._coordinator_push
        self._totals = dict.fromkeys(_COUNTERS, 0)
        self._steps_since_rebind = 0
        self.gvt = 0.0
        # (the reset then gives every context the shared snapshot wrapper: rebind them)
        self._block_binding()

    def _pending(self) -> tuple[int, tuple[float, int] | None]:
        heads = [h[0][:2] for h in self._shared.pending if h]
        return sum(len(h) for h in self._shared.pending), (min(heads) if heads else None)

    # -- one step ---------------------------------------------------------------------------------
    def _stop_threads(self) -> None:
        # Plain stores only: this runs in the SIGINT handler too, which may interrupt the
        # main thread while it holds the termination lock (idle threads poll the flag).
        self._abort = True
        self._shared.abort = True

    def _run(self, t_end: float) -> None:
        sh = self._shared
        sh.start_step(t_end)
        sh.abort = self._abort = self._interrupted  # a Ctrl-C before the step stops it
        if self._bind_dirty:
            self._apply_binding()
        pool = self._pool
        trace = self.trace
        start = _ns() if trace is not None else 0
        try:
            if pool.threads == 1:
                self._task(0)
            else:
                pool.run(self._task, self._stop_threads, give_up_after=self._give_up_after)
        except BaseException as exc:
            self._collect()
            self._raise_failure(exc)
        self._collect()
        self.windows_run += 1  # one GVT round per step
        if trace is not None:
            trace.instant(0, "gvt", t_end=t_end, took_ns=_ns() - start)
        if self._interrupted:
            raise KeyboardInterrupt
        # The GVT round: every thread idle, no message in flight. GVT is the smallest
        # unprocessed κ; every processed event is below it and committed.
        heads = [(h[0][0], h[0][1]) for h in sh.pending if h]
        gvt = min(heads) if heads else None
        self._totals["gvt_rounds"] += 1
        failures = [(k, e) for e, k in enumerate(sh.failed_key) if k is not None]
        if failures:
            key, e = min(failures)
            self.gvt = key[0]
            exc = sh.failed_exc[e]
            sh.failed_exc[:] = [None] * len(sh.failed_exc)  # the runtime must not hold it
            try:
                self._raise_failure(exc)
            finally:
                exc = failures = None  # no exception -> frame -> exception cycle
        self.gvt = gvt[0] if gvt is not None else float("inf")
        committed = 0
        for proc in sh.processed:  # fossil collection: everything below GVT
            if proc:
                committed += len(proc)
                proc.clear()
        self.events_run += committed
        self._totals["committed"] += committed
        self._steps_since_rebind += 1
        if self.rebind_every and self._steps_since_rebind >= self.rebind_every:
            self._rebind()

    def _task(self, index: int) -> None:
        w = self._workers[index]
        trace = self.trace
        start = _ns() if trace is not None else 0
        try:
            w.run()
        except BaseException:
            self._shared.abort = True  # everyone stops; the pool reports the error
            raise
        finally:
            if trace is not None:  # one slice per thread and step (never per event)
                trace.slice(index, "optimistic", start, _ns(), events=w.events,
                            rolled_back=w.rolled_back, rollbacks=w.rollbacks,
                            anti_messages=w.antis, sent=w.sent, received=w.recv)

    def _collect(self) -> None:
        totals = self._totals
        pool_stats = self._pool.stats
        for index, w in enumerate(self._workers):
            for name in _WORKER_COUNTERS:
                totals[name] += getattr(w, name)
            if index < len(pool_stats):
                pool_stats[index].events += w.events
            w.clear_counters()

    # -- load sharing -----------------------------------------------------------------------------
    def _rebind(self) -> None:
        """Move entities from the most to the least loaded thread (by handler time since
        the last rebinding) while the imbalance exceeds the tolerance; each move takes the
        entity whose load is closest to half the gap (so it always narrows it)."""
        sh = self._shared
        self._steps_since_rebind = 0
        threads = self._threads
        load = np.asarray(sh.load_ns, dtype=np.float64)
        sh.load_ns[:] = [0] * len(sh.load_ns)
        if threads == 1 or not load.any():
            return
        owner = np.asarray(sh.owner, dtype=np.int64)
        per_thread = np.bincount(owner, weights=load, minlength=threads)
        mean = per_thread.mean()
        moves = 0
        for _ in range(max(1, len(owner) // 4)):
            hi, lo = int(per_thread.argmax()), int(per_thread.argmin())
            gap = per_thread[hi] - per_thread[lo]
            if gap <= self.rebind_tolerance * mean:
                break
            cand = np.flatnonzero((owner == hi) & (load > 0) & (load < gap))
            if not len(cand):
                break
            e = int(cand[np.abs(load[cand] - gap / 2).argmin()])
            owner[e] = lo
            per_thread[hi] -= load[e]
            per_thread[lo] += load[e]
            moves += 1
        if moves:
            sh.owner = owner.tolist()
            self._bind_dirty = True
            self._totals["rebinding_moves"] += moves

    # -- reporting ---------------------------------------------------------------------------------
    @property
    def stats(self) -> dict[str, Any]:
        """The common counters, plus Time Warp's since the last reset: ``events_processed``
        (handler runs, including rolled-back ones; coasting excluded), ``rolled_back``,
        ``rollbacks``, ``anti_messages`` (sent), ``annihilated`` (anti-messages that found
        their event still pending), ``checkpoints``, ``state_saving_bytes`` (raw bytes
        saved: rows and RNG state), ``coasted`` (events re-run to rebuild a state),
        ``provisional_failures``, ``gvt_rounds``, ``rebinding_moves``, ``rollback_rate``
        (rolled back / processed), ``gvt`` (τ of the last GVT)."""
        totals = self._totals
        processed = totals["events"]
        return {
            **super().stats,
            "events_processed": processed,
            "rolled_back": totals["rolled_back"],
            "rollbacks": totals["rollbacks"],
            "anti_messages": totals["antis"],
            "annihilated": totals["annihilated"],
            "checkpoints": totals["checkpoints"],
            "state_saving_bytes": totals["saved_bytes"],
            "coasted": totals["coasted"],
            "provisional_failures": totals["failures"],
            "gvt_rounds": totals["gvt_rounds"],
            "rebinding_moves": totals["rebinding_moves"],
            "rollback_rate": totals["rolled_back"] / processed if processed else 0.0,
            "gvt": self.gvt,
        }


_WORKER_COUNTERS = ("events", "rolled_back", "rollbacks", "antis", "annihilated",
                    "checkpoints", "saved_bytes", "coasted", "failures")
_COUNTERS = (*_WORKER_COUNTERS, "gvt_rounds", "rebinding_moves", "committed")
