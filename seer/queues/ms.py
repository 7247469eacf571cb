"""A Michael-Scott queue intake per entity: the worked example of swapping the intakes.

M. M. Michael and M. L. Scott, "Simple, fast, and practical non-blocking and blocking
concurrent queue algorithms", PODC 1996 (their Figure 1), over the arena's records:

* every entity ``e`` has a FIFO linked list of arena handles that starts with a *dummy*
  record: ``Head[e]`` points at the dummy, ``Tail[e]`` at the last record or one behind
  it (the tail may lag by one while an enqueue is half done; anyone who sees that helps
  it on);
* every record ``h`` has an atomic link ``next[h]`` (not the arena's plain ``next``: here
  links are CASed);
* **enqueue** (a producer, any thread): write the event into a record of its own slab,
  reset the record's link to NIL, then read ``Tail``, read the tail record's link, check
  that ``Tail`` has not moved in between, and CAS the link from NIL to the record (then
  swing ``Tail`` to it with one more CAS; a failure there means another thread helped);
* **dequeue** (the entity's claimer): read ``Head``, ``Tail`` and the dummy's link; if the
  head is the tail, the queue is empty (link NIL) or the tail lags (help it); otherwise
  read the event from the dummy's successor and CAS ``Head`` to it: the successor is the
  new dummy, and the old one is freed into the claimer's slab.

``merge(e)`` dequeues until the queue is empty. Unlike the Treiber intakes
(:mod:`seer.queues.leq`) there are no window parities: a merge takes everything the
queue holds, including what this window's handlers send concurrently (for later windows,
by lookahead; allowed by the intake protocol, :mod:`seer.queues.protocol`, invariant 2).

Words (one :class:`~seer.queues.atomic.AtomicWords` named ``ms``): ``Head[e]`` is word
``e``, ``Tail[e]`` word ``n + e``, ``next[h]`` word ``2n + h``. Each holds a *tagged*
handle, ``tag << 32 | (h + 1)`` (pointer part 0: NIL), and every successful CAS bumps the
tag (31 bits). The tags are MS's counted pointers, and needed here for the same reason:
records are freed and reused while a slow producer may still hold a stale ``Tail``. Say
producer P read ``Tail = d``; meanwhile ``d`` got a successor, was dequeued, freed and
reused as the tail of another entity's queue, with a NIL link. P's re-read of ``Tail``
fails (the tag moved on) so P does not CAS at all; and a P that read ``next[d]`` while
``d`` was still the tail expects that life's tag, which reuse has bumped, so its CAS
fails. Without tags the CAS would succeed and link P's event into the wrong queue.

Memory orders (each named at its call site):

* the link CAS that appends a record is a *release*: it publishes the record's side-table
  slot and its reset link; the dequeuer's *acquire* load of the link pairs with it;
* ``Tail`` is CASed with *release* and loaded with *acquire*, so a producer that sees a
  record as the tail also sees its reset link (directly, or through a helper's CAS);
* the reset of a record's link is a *release* store: a producer whose acquire load of a
  link reads the reset of a *later* life of the record then happens after the tail moved
  past that record, so its relaxed re-read of ``Tail`` cannot show the old tail
  (coherence), and the stale CAS is never tried;
* ``Head`` is CASed *relaxed*: the protocol gives an entity one consumer at a time, and
  consecutive consumers are ordered by the window barrier; nothing else reads ``Head``.
  For the same reason the merge's first look (is the dummy's link NIL?) reads ``Head``
  plainly: one acquire load for an entity that was sent nothing.

The runtime's pre-check words (protocol invariant 3) do not exist here: ``heads`` is a
view of zeros, never NIL, so every claimed entity is merged and the merge checks itself.

Cost per cross-entity event, against the Treiber intake's one CAS: an enqueue is seven
atomics (two for the link reset, three loads, the link CAS, the tail CAS) and a
dequeue five (four loads and the head CAS). ``docs/queues.md`` has measured figures.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from seer.events import Event
from seer.queues.arena import (
    NIL,
    SIDE_CHUNK_BITS,
    SIDE_MASK,
    ArenaFullError,
    ArenaSlab,
    EventArena,
)
from seer.queues.atomic import ACQUIRE, RELAXED, RELEASE, AtomicWords, WordAccessor
from seer.queues.layout import BufferLayout, Region
from seer.queues.protocol import QueueFactory, register_queues

__all__ = ["MsIntakes", "MsQueues", "MsWorker", "handle_of", "pack", "tag_of"]

_PTR = 0xFFFF_FFFF  # the pointer part of a tagged word: handle + 1 (0: NIL)
_TAG = 0x7FFF_FFFF  # tags wrap at 31 bits, so a word stays a positive int64


def pack(tag: int, h: int) -> int:
    """The tagged word of handle ``h`` (NIL allowed) with ``tag``."""
    return ((tag & _TAG) << 32) | (h + 1)


def handle_of(word: int) -> int:
    """The handle a tagged word points at (NIL for none)."""
    return (word & _PTR) - 1


def tag_of(word: int) -> int:
    return word >> 32


class MsIntakes:
    """The MS intakes of ``n_entities`` entities over ``arena`` (words in region
    ``region``: ``2 * n_entities + arena.capacity`` words). Takes one dummy record per
    entity from the arena (:meth:`MsQueues.reserved_records`)."""

    def __init__(self, n_entities: int, arena: EventArena, buffer: Any, region: Region,
                 *, heaps: list[list[Event]] | None = None) -> None:
        if n_entities < 1:
            raise ValueError(f"MsIntakes needs at least one entity, got {n_entities}")
        if heaps is not None and len(heaps) != n_entities:
            raise ValueError(f"{len(heaps)} heaps given for {n_entities} entities")
        words = 2 * n_entities + arena.capacity
        if region.words < words:
            raise ValueError(f"region {region.name!r} has {region.words} words; "
                             f"{n_entities} entities and {arena.capacity} records need {words}")
        self.n_entities = n_entities
        self.arena = arena
        self.words = AtomicWords(words, buffer=buffer, offset=region.offset, name="ms")
        self.heaps: list[list[Event]] = heaps if heaps is not None else \
            [[] for _ in range(n_entities)]
        self._init_words()

    @staticmethod
    def plan(layout: BufferLayout, n_entities: int, capacity: int) -> Region:
        """Head, tail and link words: ``2 * n_entities + capacity``."""
        return layout.add("ms_words", 2 * n_entities + capacity)

    @classmethod
    def create(cls, n_entities: int, capacity: int, *, n_slabs: int = 1,
               batch: int = 256) -> MsIntakes:
        """MS intakes and their arena (``capacity`` records plus the dummies) in one new
        in-process buffer."""
        capacity += n_entities
        layout = BufferLayout()
        regions = EventArena.plan(layout, capacity)
        region = cls.plan(layout, n_entities, capacity)
        buffer = layout.allocate()
        arena = EventArena(capacity, buffer, regions, n_slabs=n_slabs, batch=batch)
        return cls(n_entities, arena, buffer, region)

    def _init_words(self) -> None:
        """Every queue empty: its own dummy (single-threaded, before any worker runs)."""
        n = self.n_entities
        slab = self.arena.slab(0)  # a temporary slab: the dummies leave the pool for good
        try:
            dummies = np.array([slab.alloc() for _ in range(n)], np.int64)
        finally:
            slab.release()
        array = self.words.array
        array[:] = 0  # tags from 0, every link NIL
        array[:n] = array[n:2 * n] = dummies + 1  # pack(0, dummy)

    def close(self) -> None:
        self.words.release()

    def worker(self, slab: ArenaSlab, path: str | None = None) -> MsWorker:
        """The calling thread's handle for sending and merging."""
        return MsWorker(self, slab, self.words.accessor(path))

    def dummies(self) -> list[int]:
        """Each entity's dummy record (single-threaded use only)."""
        return [handle_of(w) for w in self.words.array[:self.n_entities].tolist()]

    def in_intakes(self, slab: ArenaSlab | None = None) -> int:
        """Records waiting in all queues (single-threaded use only: no send may run)."""
        n = self.n_entities
        words = self.words.array.tolist()
        count = 0
        for e in range(n):
            h = handle_of(words[e])
            while (h := handle_of(words[2 * n + h])) != NIL:
                count += 1
        return count

    def reset(self) -> None:
        """Empty every queue and heap and reset the arena (single-threaded use only; make
        new workers)."""
        for heap in self.heaps:
            heap.clear()
        self.arena.reset()
        self._init_words()


class MsWorker:
    """One thread's access to every MS intake (the :class:`~seer.queues.protocol.IntakeWorker`
    protocol). ``cas_retries`` counts enqueue and dequeue attempts that had to go round
    again: a lost CAS, a tail that moved under a read, a lagging tail helped on."""

    __slots__ = ("_acc", "_arg", "_cas", "_desired", "_free", "_heads_w", "_heaps", "_high",
                 "_load", "_n", "_next_w", "_plain", "_result", "_s", "_side", "_store",
                 "_tails_w", "cas_retries", "epoch", "heads", "leqs", "offset",
                 "previous_offset", "slab")

    def __init__(self, intakes: MsIntakes, slab: ArenaSlab, acc: WordAccessor) -> None:
        self.leqs = intakes
        self.slab = slab
        self._acc = acc
        self._heaps = intakes.heaps
        self._n = n = intakes.n_entities
        # The slab's own free list, side table and limit (this thread is its only user).
        self._free, self._side, self._high = slab.free_list, slab.side, slab.high
        # The accessor's raw ops, bound once (atomic.py, "Raw ops").
        self._load, self._store, self._cas = acc.fn_load, acc.fn_store, acc.fn_cas
        self._s = acc.scratch_view()
        self._arg, self._desired, self._result = acc.arg, acc.desired, acc.result
        words = acc.words
        self._heads_w, self._tails_w, self._next_w = words, words + n, words + 2 * n
        self._plain = intakes.words.plain()
        # The runtime's pre-check words (protocol invariant 3): none here, so never NIL.
        self.heads = memoryview(bytearray(8 * n)).cast("q")
        self.offset = self.previous_offset = self.epoch = 0
        self.cas_retries = 0

    def set_epoch(self, epoch: int) -> None:
        """Recorded only: an MS queue has no window parities."""
        if epoch < 0:
            raise ValueError(f"epochs count up from 0, got {epoch}")
        self.epoch = epoch

    def _check(self, entity: int) -> None:
        if not 0 <= entity < self._n:
            raise IndexError(f"intake of entity {entity} out of range({self._n})")

    def send(self, entity: int, event: Event) -> None:
        """Send ``event`` to ``entity``'s queue (``event[2]`` must be ``entity``)."""
        if event[2] != entity:
            raise ValueError(f"event for entity {event[2]} sent to entity {entity}")
        if self.send_all([event]) < 1:
            raise ArenaFullError("event arena full: no free record for the send")

    def send_all(self, events: list[Event]) -> int:
        """Enqueue each event of ``events`` on its target's queue (``event[2]``), in order;
        returns how many were sent (fewer when the arena ran out of records)."""
        n = self._n
        s = self._s
        load, store, cas = self._load, self._store, self._cas
        tails, nexts = self._tails_w, self._next_w
        arg, desired, result = self._arg, self._desired, self._result
        new_record = self.slab.store  # a free record holding the event (the slab's own)
        retries = 0
        for i, ev in enumerate(events):
            entity = ev[2]
            if not 0 <= entity < n:
                self._check(entity)
            try:
                h = new_record(ev)
            except ArenaFullError:
                self.cas_retries += retries
                return i
            link = nexts + h
            # Reset the record's link to NIL under a new tag. Relaxed load: this thread
            # owns the record (its last link write happened before it was freed). Release
            # store: see the module docstring (a stale producer that reads it must also
            # see that the tail moved on).
            load(link, RELAXED, result)
            s[0] = (((s[2] >> 32) + 1) & _TAG) << 32
            store(link, arg, RELEASE)
            ptr = h + 1
            tail = tails + entity
            while True:
                # Acquire: the tail record's reset link is visible (its enqueue's or a
                # helper's release CAS of Tail).
                load(tail, ACQUIRE, result)
                t = s[2]
                last = nexts + ((t & _PTR) - 1)
                # Acquire: pairs with the release of the CAS that linked a successor, so
                # helping the tail on to it publishes that record further.
                load(last, ACQUIRE, result)
                following = s[2]
                # Relaxed: only compared with t (coherence does the rest; see above).
                load(tail, RELAXED, result)
                if s[2] == t:  # t was the tail when its link was read
                    if not following & _PTR:
                        s[0] = following
                        s[1] = ((((following >> 32) + 1) & _TAG) << 32) | ptr
                        # CAS next[last]: NIL -> h. Release: publishes the record's slot
                        # and reset link to the dequeuer's acquire load of this link.
                        if cas(last, arg, desired, RELEASE, RELAXED):
                            break
                    else:
                        # The tail lags (an enqueue between its two CASes): help it on.
                        s[0] = t
                        s[1] = ((((t >> 32) + 1) & _TAG) << 32) | (following & _PTR)
                        cas(tail, arg, desired, RELEASE, RELAXED)  # release: as below
                retries += 1
            # Swing Tail to the new record. Release: a producer that acquires it sees the
            # record's reset link. A failure means another thread helped already.
            s[0] = t
            s[1] = ((((t >> 32) + 1) & _TAG) << 32) | ptr
            cas(tail, arg, desired, RELEASE, RELAXED)
        self.cas_retries += retries
        return len(events)

    def merge(self, entity: int) -> list[Event]:
        """Dequeue everything ``entity``'s queue holds into its heap, freeing each old
        dummy into this worker's slab; returns the heap. Only the entity's current claimer
        may call it."""
        heap = self._heaps[entity]
        s = self._s
        load, cas = self._load, self._cas
        nexts, arg, desired, result = self._next_w, self._arg, self._desired, self._result
        # First look: plain read of Head (written only by this entity's claimers, which the
        # barrier orders), acquire load of the dummy's link (pairs with the linking CAS).
        load(nexts + ((self._plain[entity] & _PTR) - 1), ACQUIRE, result)
        if not s[2] & _PTR:
            return heap
        head, tail = self._heads_w + entity, self._tails_w + entity
        side, free, push = self._side, self._free, heapq.heappush
        retries = 0
        while True:
            load(head, ACQUIRE, result)  # acquire: as MS; one consumer makes it exact
            h = s[2]
            load(tail, ACQUIRE, result)  # acquire: pairs with the tail CASes' release
            t = s[2]
            load(nexts + ((h & _PTR) - 1), ACQUIRE, result)  # pairs with the link CAS
            following = s[2]
            load(head, RELAXED, result)  # MS's consistency check (one consumer: holds)
            if s[2] != h:
                retries += 1
                continue
            if (h & _PTR) == (t & _PTR):
                if not following & _PTR:
                    break  # empty
                # The tail lags behind the dummy's successor: help it on before the dummy
                # can be freed (it must never be freed while Tail points at it).
                s[0] = t
                s[1] = ((((t >> 32) + 1) & _TAG) << 32) | (following & _PTR)
                cas(tail, arg, desired, RELEASE, RELAXED)  # release: see send_all
                retries += 1
                continue
            nh = (following & _PTR) - 1
            chunk = side[nh >> SIDE_CHUNK_BITS]
            ev = chunk[nh & SIDE_MASK]  # read before the CAS, as MS does
            s[0] = h
            s[1] = ((((h >> 32) + 1) & _TAG) << 32) | (following & _PTR)
            # CAS Head: dummy -> its successor. Relaxed: one consumer at a time (module
            # docstring); the successor's fields were acquired through its link above.
            if cas(head, arg, desired, RELAXED, RELAXED):
                chunk[nh & SIDE_MASK] = None  # the new dummy: the arena keeps no payload
                push(heap, ev)
                free.append((h & _PTR) - 1)  # the old dummy
            else:
                retries += 1
        self.cas_retries += retries
        if len(free) > self._high:
            self.slab.trim()
        return heap

    def pop(self, entity: int) -> Event:
        """The κ-smallest event of ``entity`` (after :meth:`merge`)."""
        return heapq.heappop(self._heaps[entity])


@register_queues
class MsQueues(QueueFactory):
    """``queues="ms"``: :class:`MsIntakes` (module docstring)."""

    name = "ms"

    def reserved_records(self, n_entities: int) -> int:
        return n_entities  # one dummy per entity

    def plan(self, layout: BufferLayout, n_entities: int, capacity: int) -> dict[str, Region]:
        return {"ms_words": MsIntakes.plan(layout, n_entities, capacity)}

    def build(self, n_entities: int, arena: EventArena, buffer: Any,
              regions: dict[str, Region], heaps: list[list[Event]]) -> MsIntakes:
        return MsIntakes(n_entities, arena, buffer, regions["ms_words"], heaps=heaps)
