"""Local Event Queues: one per entity, many producers, one consumer at a time.

Each LEQ has two layers:

* an **intake**: a lock-free Treiber stack (R. K. Treiber, *Systems Programming: Coping
  with Parallelism*, IBM RJ 5118, 1986) of arena handles, whose top is one atomic word per
  entity (``heads[e]``; :data:`~seer.queues.arena.NIL` = empty). Producers push with
  compare-exchange, a whole chain at a time when they have several events for one entity.
  The consumer never pops single records: it takes the whole stack with one
  ``exchange(heads[e], NIL)``.
* an owner-private **heap** (a Python list under ``heapq``) that the entity's current
  claimer merges the intake into and pops in κ order. Only that thread touches it; who the
  claimer is, and why two claimers never overlap, is the scheduler's business (the window
  barrier: see ``docs/design.md``, "The window barrier").

The atomic word ``heads[e]``:

* written only by CAS (producers: ``expected -> first``) and by exchange (the consumer:
  ``chain -> NIL``);
* a successful push CAS is a *release*: it publishes the records' side-table slots and the
  ``next`` links written before it. Its failure order is *acquire*, so a retry that links
  ``next[last]`` to the observed top sees that top's record completely (needed only for
  the chain invariant; the record's fields are not read by the producer);
* the consumer's exchange is an *acquire* (``acq_rel``): every record reachable from the
  returned handle, and its ``next`` link, are visible to the consumer. It pairs with the
  release of every push whose chain it takes.

**Epochs** (``epochs=2``, what the windowed runtime uses): every entity has two head
words, one per window parity, and a worker pushes to the word of the epoch it was set to
(:meth:`LeqWorker.set_epoch`). The caller promises a barrier between epochs: every push
of epoch ``k`` happens before the barrier, and no thread pushes to epoch ``k``'s words
again until epoch ``k + 2``. Then in epoch ``k + 1`` the words of epoch ``k`` have no
producer, and an entity's one claimer takes them with a plain read and a plain store of
NIL (the barrier's hand-off orders both against the pushes before and after it): a cross
event costs one atomic, its push, instead of a push and the exchange that took it. The
current epoch's word can hold two things: pushes of this epoch (racing with the merge, and
for a later window, so not needed now) and records left from two or more epochs back, when
the entity was not merged in between. The entity's last merge epoch tells them apart:
merged in the previous epoch means that merge emptied this parity's word, so it is left
alone; otherwise it is taken with the acquiring exchange, if a plain read shows a record.

Why ABA cannot corrupt the stack: ABA breaks Treiber stacks whose *pop* reads
``head.next`` and then CASes ``head`` to it; the pointer read may be stale by then. Here no
one reads through ``head`` before a CAS. A push links ``next[last] = expected`` and then
CASes ``head`` from ``expected`` to ``first``; if the CAS succeeds, ``expected`` *is* the
current top at that instant (whatever happened in between, even if the record was taken,
freed, reused and pushed again), so the new chain is linked to the live stack. The take
removes everything at once, so a record is never reachable from two stacks.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from seer.errors import SeerError
from seer.events import Event
from seer.queues.arena import (
    NIL,
    SIDE_CHUNK_BITS,
    SIDE_MASK,
    ArenaFullError,
    ArenaSlab,
    EventArena,
)
from seer.queues.atomic import ACQ_REL, ACQUIRE, AtomicWords, WordAccessor
from seer.queues.layout import BufferLayout, Region

__all__ = ["EmptyQueueError", "LeqWorker", "LocalEventQueues"]

_NEVER = -2  # merged_in's start: no epoch (they count up from 0) follows it


class EmptyQueueError(SeerError, IndexError):
    """pop on an LEQ that has no event."""


class LocalEventQueues:
    """The LEQs of ``n_entities`` entities over ``arena`` (heads in region ``heads``).

    ``heaps`` is the private layer, one list per entity; a runtime passes its own per-entity
    heaps so that events it places between windows and events merged from intakes meet in
    one heap. ``initialise=False`` attaches to heads another process already set up."""

    def __init__(self, n_entities: int, arena: EventArena, buffer: Any, heads: Region,
                 *, heaps: list[list[Event]] | None = None, initialise: bool = True,
                 epochs: int = 1) -> None:
        if n_entities < 1:
            raise ValueError(f"LocalEventQueues needs at least one entity, got {n_entities}")
        if heaps is not None and len(heaps) != n_entities:
            raise ValueError(f"{len(heaps)} heaps given for {n_entities} entities")
        if epochs not in (1, 2):
            raise ValueError(f"LocalEventQueues epochs must be 1 or 2, got {epochs!r}")
        if heads.words < epochs * n_entities:
            raise ValueError(f"region {heads.name!r} has {heads.words} words; {epochs} "
                             f"epochs of {n_entities} entities need {epochs * n_entities} "
                             "(plan it with the same epochs)")
        self.n_entities = n_entities
        self.epochs = epochs
        self.arena = arena
        self.words = AtomicWords(epochs * n_entities, buffer=buffer, offset=heads.offset,
                                 name="leq_heads")
        if initialise:
            self.words.array[:] = NIL
        self.heaps: list[list[Event]] = heaps if heaps is not None else \
            [[] for _ in range(n_entities)]
        # merged_in[e]: the epoch of e's last merge (written by its claimer only; with
        # one epoch unused). _NEVER is no epoch's predecessor.
        self.merged_in = np.full(n_entities, _NEVER, np.int64)

    @staticmethod
    def plan(layout: BufferLayout, n_entities: int, epochs: int = 1) -> Region:
        """The head words: ``epochs`` consecutive blocks of ``n_entities`` words."""
        return layout.add("leq_heads", epochs * n_entities)

    @classmethod
    def create(cls, n_entities: int, capacity: int, *, n_slabs: int = 1,
               batch: int = 256, epochs: int = 1) -> LocalEventQueues:
        """LEQs and their arena in one new in-process buffer."""
        layout = BufferLayout()
        regions = EventArena.plan(layout, capacity)
        heads = cls.plan(layout, n_entities, epochs)
        buffer = layout.allocate()
        arena = EventArena(capacity, buffer, regions, n_slabs=n_slabs, batch=batch)
        return cls(n_entities, arena, buffer, heads, epochs=epochs)

    def close(self) -> None:
        """Drop this object's numpy views of the buffer (before closing a shared block)."""
        self.words.release()

    def worker(self, slab: ArenaSlab, path: str | None = None) -> LeqWorker:
        """The calling thread's handle for pushing, merging and popping."""
        return LeqWorker(self, slab, self.words.accessor(path))

    def in_intakes(self, slab: ArenaSlab) -> int:
        """Records waiting in all intakes (single-threaded use only: no push may run)."""
        count = 0
        nxt = slab.next
        for h in self.words.array.tolist():
            while h != NIL:
                count += 1
                h = nxt[h]
        return count

    def reset(self) -> None:
        """Empty every LEQ and the arena (single-threaded use only; make new workers)."""
        self.words.array[:] = NIL
        self.merged_in[:] = _NEVER
        for heap in self.heaps:
            heap.clear()
        self.arena.reset()


class LeqWorker:
    """One thread's access to all LEQs. ``cas_retries`` counts failed compare-exchanges.

    ``heads`` is a *plain* (non-atomic) int64 view of the head words of every epoch; the
    words of entity ``e`` in the worker's current epoch are ``heads[offset + e]``, and in
    the previous one ``heads[previous_offset + e]`` (both offsets are 0 with one epoch).
    A plain read may be stale; the scheduler uses it only where a barrier makes it exact
    enough (see ``docs/design.md``, "The window barrier")."""

    __slots__ = ("_acc", "_cas", "_desired", "_epochs", "_expected", "_free", "_heaps",
                 "_high", "_merged_in", "_n", "_next", "_push_words", "_result", "_s", "_side",
                 "_words", "_xchg", "cas_retries", "epoch", "heads", "leqs", "offset",
                 "previous_offset", "slab")

    def __init__(self, leqs: LocalEventQueues, slab: ArenaSlab, acc: WordAccessor) -> None:
        self.leqs = leqs
        self.slab = slab
        self._acc = acc
        self._heaps = leqs.heaps
        self._n = leqs.n_entities
        self._epochs = leqs.epochs
        self._next = slab.next
        # The slab's own free list, side table and limit, for the inlined store and
        # consume of send_all() and _drain() (this worker's thread is the slab's only user).
        self._free, self._side, self._high = slab.free_list, slab.side, slab.high
        self.heads = leqs.words.plain()
        self._merged_in = memoryview(leqs.merged_in).cast("B").cast("q")
        self.cas_retries = 0
        # The accessor's raw ops, bound once: the hot loops call them with no method call
        # in between, whichever path the accessor is (atomic.py, "Raw ops").
        self._cas, self._xchg = acc.fn_cas, acc.fn_exchange
        self._s = acc.scratch_view()
        self._words = self._push_words = acc.words
        self._expected, self._desired, self._result = acc.arg, acc.desired, acc.result
        self.offset = self.previous_offset = self.epoch = 0
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        """Push to (and take with the exchange from) epoch ``epoch``'s words from now on;
        with two epochs, :meth:`merge` takes the previous epoch's words plainly. Call it
        on every worker between epochs, before the barrier that releases them."""
        if epoch < 0:
            raise ValueError(f"LEQ epochs count up from 0, got {epoch}")
        n = self._n
        self.epoch = epoch
        self.offset = (epoch % self._epochs) * n
        self.previous_offset = ((epoch - 1) % self._epochs) * n
        self._push_words = self._words + self.offset  # entity e's word: + e

    def _check(self, entity: int) -> None:
        if not 0 <= entity < self._n:
            raise IndexError(f"LEQ of entity {entity} out of range({self._n})")

    def push_chain(self, entity: int, first: int, last: int = NIL) -> None:
        """Publish the chain ``first -> ... -> last`` (linked through ``next``) with one
        successful CAS. The chain's records must all be for ``entity``. Without ``last``
        the chain is the one record ``first`` (:meth:`push`)."""
        if not 0 <= entity < self._n:
            self._check(entity)
        if last == NIL:
            last = first
        nxt = self._next
        # First guess: the top as a plain read shows it. The CAS checks it, so a stale
        # read costs one retry and nothing else; nothing is read through the handle. (A
        # blind guess of "empty" missed for about a quarter of the pushes on random
        # targets, each miss a second foreign call.)
        expected = self.heads[self.offset + entity]
        s, cas, word = self._s, self._cas, self._push_words + entity
        expected_p, desired_p = self._expected, self._desired
        while True:
            # Plain store of the link: the CAS below (release) publishes it.
            nxt[last] = expected
            s[0] = expected
            s[1] = first
            # CAS heads[entity]: expected -> first. Success: release (publishes the
            # records and the link; pairs with the consumer's acquiring exchange).
            # Failure: acquire, and the observed top is written into s[0].
            if cas(word, expected_p, desired_p, ACQ_REL, ACQUIRE):
                return
            expected = s[0]
            self.cas_retries += 1

    #: ``push(entity, h)``: publish record ``h`` (already written) to ``entity``'s intake,
    #: the hot case of :meth:`push_chain` (the same function: one frame per push).
    push = push_chain

    def send(self, entity: int, event: Event) -> None:
        """Store ``event`` in a new record of this worker's slab and push it to
        ``entity``'s intake (:meth:`ArenaSlab.store`, then :meth:`push`). Raises
        :class:`ArenaFullError`, with nothing pushed, when no record is free. The windowed
        runtime sends whole batches with :meth:`send_all`."""
        if not 0 <= entity < self._n:
            self._check(entity)  # before a record is taken
        self.push_chain(entity, self.slab.store(event))

    def send_all(self, events: list[Event]) -> int:
        """:meth:`send` each event of ``events`` to its target (``event[2]``), in order, in
        one loop; returns how many were sent: ``len(events)``, or fewer when the arena ran
        out of records (the rest are not pushed). The windowed runtime's publish: one
        frame for the whole batch, and everything the loop touches in locals."""
        n = self._n
        free, side, nxt, heads, s = self._free, self._side, self._next, self.heads, self._s
        words, offset, cas = self._push_words, self.offset, self._cas
        expected_p, desired_p = self._expected, self._desired
        alloc = self.slab.alloc
        retries = 0
        for i, ev in enumerate(events):
            entity = ev[2]
            if not 0 <= entity < n:
                self._check(entity)
            if free:
                h = free.pop()
            else:
                try:
                    h = alloc()
                except ArenaFullError:
                    self.cas_retries += retries
                    return i
            side[h >> SIDE_CHUNK_BITS][h & SIDE_MASK] = ev
            expected = heads[offset + entity]
            word = words + entity
            while True:  # push_chain's loop for one record; see there
                nxt[h] = expected
                s[0] = expected
                s[1] = h
                if cas(word, expected_p, desired_p, ACQ_REL, ACQUIRE):
                    break
                expected = s[0]
                retries += 1
        self.cas_retries += retries
        return len(events)

    def take(self, entity: int) -> int:
        """Detach ``entity``'s whole intake of the current epoch; returns the chain's
        first handle or NIL."""
        if not 0 <= entity < self._n:
            self._check(entity)
        s = self._s
        s[0] = NIL
        # exchange heads[entity] -> NIL, acq_rel: the acquire pairs with the release of
        # every push in the taken chain, so their records and links are visible here.
        self._xchg(self._push_words + entity, self._expected, ACQ_REL, self._result)
        return s[2]

    def merge(self, entity: int) -> list[Event]:
        """Move ``entity``'s intake into its private heap (consuming the records into this
        worker's slab) and return the heap. Only the entity's current claimer may call it.

        With two epochs the previous epoch's chain is taken with plain loads and a plain
        store (no producer can touch it: see the module docstring); the current epoch's
        only if the entity was not merged in the previous epoch, with the exchange, and
        only if a plain read shows a record there."""
        heap = self._heaps[entity]
        heads = self.heads
        if self._epochs > 1:
            word = self.previous_offset + entity
            h = heads[word]
            if h != NIL:
                heads[word] = NIL
                self._drain(h, heap)
            merged_in, epoch = self._merged_in, self.epoch
            if merged_in[entity] == epoch - 1:
                # That merge emptied this parity's word; what is there now was pushed in
                # this epoch, for a later window.
                merged_in[entity] = epoch
                return heap
            merged_in[entity] = epoch
        if heads[self.offset + entity] != NIL:
            h = self.take(entity)
            if h != NIL:
                self._drain(h, heap)
        return heap

    def _drain(self, h: int, heap: list[Event]) -> None:
        """Push the chain from ``h`` into ``heap``, freeing its records into the slab
        (:meth:`ArenaSlab.consume`, inlined)."""
        nxt, side, free, push = self._next, self._side, self._free, heapq.heappush
        while h != NIL:
            following = nxt[h]  # read the link before the record is freed and reused
            chunk = side[h >> SIDE_CHUNK_BITS]
            push(heap, chunk[h & SIDE_MASK])
            chunk[h & SIDE_MASK] = None  # the arena must not keep the payload alive
            free.append(h)
            h = following
        if len(free) > self._high:
            self.slab.trim()

    def pop(self, entity: int) -> Event:
        """The κ-smallest event of ``entity`` (after :meth:`merge`)."""
        heap = self._heaps[entity]
        if not heap:
            raise EmptyQueueError(f"pop on empty LEQ of entity {entity} (merge its intake "
                                  "first, or check before popping)")
        return heapq.heappop(heap)
