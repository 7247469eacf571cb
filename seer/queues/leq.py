"""Local Event Queues: one per entity, many producers, one consumer at a time.

Each LEQ has two layers:

* an **intake**: a lock-free Treiber stack of arena handles whose head is one atomic word
  per entity (``heads[e]``; ``NIL`` = empty). Producers push with compare-exchange, a
  whole chain at a time when they have several events for the same entity. The consumer
  never pops single records: it takes the whole stack with one ``exchange(head, NIL)``.
* an owner-private **heap** (a Python list under ``heapq``) that the claiming worker
  merges the intake into and pops in κ order. Only the worker that has claimed the
  entity touches it, so it needs no synchronisation (the runtime's window barrier orders
  one claimer's accesses before the next one's).

Word ``heads[e]``: written only by CAS (producers: ``NIL or chain -> new chain``) and by
exchange (the consumer: ``chain -> NIL``). Memory order: a push is a release (it publishes
the record fields and the ``next`` links written before it); the take is an acquire.

Why ABA cannot corrupt the stack: ABA breaks Treiber stacks whose *pop* reads
``head.next`` and then CASes ``head`` to it; the pointer read may be stale by then. Here no
one reads through ``head`` before a CAS. A push links ``next[last] = expected`` and then
CASes ``head`` from ``expected`` to ``first``; if the CAS succeeds, ``expected`` *is* the
current top at that instant (whatever happened in between, even if the record was drained,
freed, reused and pushed again), so the new chain is linked to the live stack. The take
removes everything at once, so a record is never reachable from two stacks.
"""

from __future__ import annotations

import heapq
from typing import Any

from seer.events import Event
from seer.queues.arena import NIL, ArenaSlab, EventArena
from seer.queues.atomic import ACQ_REL, ACQUIRE, AtomicWords, FastAccessor
from seer.queues.layout import BufferLayout, Region

__all__ = ["EmptyQueueError", "LeqWorker", "LocalEventQueues"]


class EmptyQueueError(IndexError):
    """pop on an LEQ that has no event."""


class LocalEventQueues:
    """The LEQs of ``n_entities`` entities over ``arena`` (heads in region ``heads``)."""

    def __init__(self, n_entities: int, arena: EventArena, buffer: Any, heads: Region,
                 *, initialise: bool = True) -> None:
        if n_entities < 1:
            raise ValueError(f"LocalEventQueues needs at least one entity, got {n_entities}")
        self.n_entities = n_entities
        self.arena = arena
        self.words = AtomicWords(n_entities, buffer=buffer, offset=heads.offset)
        if initialise:
            self.words.array[:] = NIL
        self.heaps: list[list[Event]] = [[] for _ in range(n_entities)]

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

    @classmethod
    def create_shared(cls, n_entities: int, capacity: int, *, n_slabs: int = 1,
                      batch: int = 256, name: str | None = None,
                      handles: range | None = None) -> tuple[LocalEventQueues, Any]:
        """LEQs and arena in a ``multiprocessing.shared_memory`` block: a new one
        (``name=None``), or the existing block ``name`` created by another process with the
        same sizes (then nothing is re-initialised). Returns ``(leqs, block)``; close the
        block when done (after :meth:`close`), and unlink it in the creating process.
        Processes that allocate records must each pass a disjoint ``handles`` range.

        Non-numeric payloads live in a per-process side table: across processes, write
        records with :meth:`ArenaSlab.write_numeric`."""
        layout = BufferLayout()
        regions = EventArena.plan(layout, capacity)
        heads = cls.plan(layout, n_entities)
        shm = layout.allocate_shared(name)
        arena = EventArena(capacity, shm.buf, regions, n_slabs=n_slabs, batch=batch,
                           handles=handles)
        return cls(n_entities, arena, shm.buf, heads, initialise=name is None), shm

    def close(self) -> None:
        """Drop this object's numpy views of the buffer (before closing a shared block)."""
        self.words.release()
        self.arena.arrays.clear()

    def worker(self, slab: ArenaSlab, path: str | None = None) -> LeqWorker:
        """The calling thread's handle for pushing, merging and popping."""
        return LeqWorker(self, slab, self.words.accessor(path))

    def reset(self) -> None:
        """Empty every LEQ (single-threaded use only)."""
        self.words.array[:] = NIL
        for heap in self.heaps:
            heap.clear()
        self.arena.reset()


class LeqWorker:
    """One thread's access to all LEQs. ``cas_retries`` counts failed compare-exchanges."""

    __slots__ = ("_acc", "_base", "_cas", "_heaps", "_n", "_next", "_s", "_sa", "_xchg",
                 "cas_retries", "heads", "leqs", "slab")

    def __init__(self, leqs: LocalEventQueues, slab: ArenaSlab, acc: Any) -> None:
        self.leqs = leqs
        self.slab = slab
        self._acc = acc
        self._heaps = leqs.heaps
        self._n = leqs.n_entities
        self._next = slab.next
        # This thread's plain (non-atomic) view of the heads, for emptiness pre-checks
        # (see merge()).
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

    def push(self, entity: int, h: int) -> None:
        """Publish record ``h`` (already written) to ``entity``'s intake."""
        self.push_chain(entity, h, h)

    def push_chain(self, entity: int, first: int, last: int) -> None:
        """Publish the chain ``first -> ... -> last`` (linked through ``next``) with one
        successful CAS. The chain's records must all be for ``entity``."""
        if not 0 <= entity < self._n:
            self._check(entity)
        nxt = self._next
        expected = NIL  # guess "empty": right for most pushes, and a miss costs one retry
        if self._base is not None:
            s, sa, cas = self._s, self._sa, self._cas
            addr = self._base + 8 * entity
            while True:
                nxt[last] = expected
                s[0] = expected
                s[1] = first
                if cas(addr, sa, sa + 8, ACQ_REL, ACQUIRE):
                    return
                expected = s[0]
                self.cas_retries += 1
        acc = self._acc
        while True:
            nxt[last] = expected
            observed = acc.compare_exchange(entity, expected, first)
            if observed == expected:
                return
            expected = observed
            self.cas_retries += 1

    def take(self, entity: int) -> int:
        """Detach ``entity``'s whole intake; returns the chain's first handle or NIL."""
        if not 0 <= entity < self._n:
            self._check(entity)
        if self._base is not None:
            s = self._s
            s[0] = NIL
            self._xchg(self._base + 8 * entity, self._sa, ACQ_REL, self._sa + 16)
            return s[2]
        return self._acc.exchange(entity, NIL)

    def merge(self, entity: int) -> list[Event]:
        """Move ``entity``'s intake into its private heap (freeing the records into this
        worker's slab) and return the heap. Only the entity's current claimer may call it.

        A plain read of the head skips the exchange when the intake looks empty. That is
        safe for the runtime's use: everything pushed before the current window is visible
        (the window barrier orders it), and a push racing with this read is for a later
        window (lookahead), so it is merged at the entity's next claim."""
        heap = self._heaps[entity]
        if self.heads[entity] == NIL:
            return heap
        h = self.take(entity)
        if h == NIL:
            return heap
        slab, nxt, push = self.slab, self._next, heapq.heappush
        while h != NIL:
            push(heap, slab.read(h))
            following = nxt[h]
            slab.free(h)
            h = following
        return heap

    def pop(self, entity: int) -> Event:
        """The κ-smallest event of ``entity`` (after :meth:`merge`)."""
        heap = self._heaps[entity]
        if not heap:
            raise EmptyQueueError(f"pop on empty LEQ of entity {entity} (merge its intake "
                                  "first, or check before popping)")
        return heapq.heappop(heap)
