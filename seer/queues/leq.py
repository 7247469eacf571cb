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

from seer.errors import SeerError
from seer.events import Event
from seer.queues.arena import NIL, ArenaSlab, EventArena
from seer.queues.atomic import ACQ_REL, ACQUIRE, AtomicWords, FastAccessor
from seer.queues.layout import BufferLayout, Region

__all__ = ["EmptyQueueError", "LeqWorker", "LocalEventQueues"]


class EmptyQueueError(SeerError, IndexError):
    """pop on an LEQ that has no event."""


class LocalEventQueues:
    """The LEQs of ``n_entities`` entities over ``arena`` (heads in region ``heads``).

    ``heaps`` is the private layer, one list per entity; a runtime passes its own per-entity
    heaps so that events it places between windows and events merged from intakes meet in
    one heap. ``initialise=False`` attaches to heads another process already set up."""

    def __init__(self, n_entities: int, arena: EventArena, buffer: Any, heads: Region,
                 *, heaps: list[list[Event]] | None = None, initialise: bool = True) -> None:
        if n_entities < 1:
            raise ValueError(f"LocalEventQueues needs at least one entity, got {n_entities}")
        if heaps is not None and len(heaps) != n_entities:
            raise ValueError(f"{len(heaps)} heaps given for {n_entities} entities")
        self.n_entities = n_entities
        self.arena = arena
        self.words = AtomicWords(n_entities, buffer=buffer, offset=heads.offset)
        if initialise:
            self.words.array[:] = NIL
        self.heaps: list[list[Event]] = heaps if heaps is not None else \
            [[] for _ in range(n_entities)]

    @staticmethod
    def plan(layout: BufferLayout, n_entities: int) -> Region:
        return layout.add("leq_heads", n_entities)

    @classmethod
    def create(cls, n_entities: int, capacity: int, *, n_slabs: int = 1,
               batch: int = 256) -> LocalEventQueues:
        """LEQs and their arena in one new in-process buffer."""
        layout = BufferLayout()
        regions = EventArena.plan(layout, capacity)
        heads = cls.plan(layout, n_entities)
        buffer = layout.allocate()
        arena = EventArena(capacity, buffer, regions, n_slabs=n_slabs, batch=batch)
        return cls(n_entities, arena, buffer, heads)

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
        for heap in self.heaps:
            heap.clear()
        self.arena.reset()


class LeqWorker:
    """One thread's access to all LEQs. ``cas_retries`` counts failed compare-exchanges.

    ``heads`` is a *plain* (non-atomic) int64 view of the head words. A plain read may be
    stale; the scheduler uses it only where a barrier makes it exact enough (see
    ``docs/design.md``, "The window barrier")."""

    __slots__ = ("_acc", "_base", "_cas", "_heaps", "_n", "_next", "_s", "_sa", "_xchg",
                 "cas_retries", "heads", "leqs", "slab")

    def __init__(self, leqs: LocalEventQueues, slab: ArenaSlab, acc: Any) -> None:
        self.leqs = leqs
        self.slab = slab
        self._acc = acc
        self._heaps = leqs.heaps
        self._n = leqs.n_entities
        self._next = slab.next
        self.heads = memoryview(leqs.words.array).cast("B").cast("q")
        self.cas_retries = 0
        if isinstance(acc, FastAccessor):
            # Inline the patomic calls on the hot path (same conventions as FastAccessor).
            self._base, self._cas, self._xchg = acc.base, acc.fn_cas, acc.fn_exchange
            self._s, self._sa = acc.scratch, acc.scratch_addr
        else:
            self._base = None

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
        expected = self.heads[entity]
        if self._base is not None:
            s, sa, cas = self._s, self._sa, self._cas
            addr = self._base + 8 * entity
            while True:
                # Plain store of the link: the CAS below (release) publishes it.
                nxt[last] = expected
                s[0] = expected
                s[1] = first
                # CAS heads[entity]: expected -> first. Success: release (publishes the
                # records and the link; pairs with the consumer's acquiring exchange).
                # Failure: acquire, and patomic writes the observed top into s[0].
                if cas(addr, sa, sa + 8, ACQ_REL, ACQUIRE):
                    return
                expected = s[0]
                self.cas_retries += 1
        acc = self._acc
        while True:
            nxt[last] = expected
            observed = acc.compare_exchange(entity, expected, first)  # seq_cst (public API)
            if observed == expected:
                return
            expected = observed
            self.cas_retries += 1

    #: ``push(entity, h)``: publish record ``h`` (already written) to ``entity``'s intake,
    #: the hot case of :meth:`push_chain` (the same function: one frame per push).
    push = push_chain

    def take(self, entity: int) -> int:
        """Detach ``entity``'s whole intake; returns the chain's first handle or NIL."""
        if not 0 <= entity < self._n:
            self._check(entity)
        if self._base is not None:
            s = self._s
            s[0] = NIL
            # exchange heads[entity] -> NIL, acq_rel: the acquire pairs with the release of
            # every push in the taken chain, so their records and links are visible here.
            self._xchg(self._base + 8 * entity, self._sa, ACQ_REL, self._sa + 16)
            return s[2]
        return self._acc.exchange(entity, NIL)  # seq_cst (public API)

    def merge(self, entity: int) -> list[Event]:
        """Move ``entity``'s intake into its private heap (consuming the records into this
        worker's slab) and return the heap. Only the entity's current claimer may call it."""
        heap = self._heaps[entity]
        h = self.take(entity)
        if h == NIL:
            return heap
        consume, nxt, push = self.slab.consume, self._next, heapq.heappush
        while h != NIL:
            following = nxt[h]  # read the link before the record is freed and reused
            push(heap, consume(h))
            h = following
        return heap

    def pop(self, entity: int) -> Event:
        """The κ-smallest event of ``entity`` (after :meth:`merge`)."""
        heap = self._heaps[entity]
        if not heap:
            raise EmptyQueueError(f"pop on empty LEQ of entity {entity} (merge its intake "
                                  "first, or check before popping)")
        return heapq.heappop(heap)
