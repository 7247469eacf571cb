"""The Parallel Executive List: the ready entities of a window, claimed in guided chunks;
and a Vyukov-style bounded MPMC ring for publication that overlaps execution.

PEL words (region ``pel_ctl``):

* ``CURSOR``: index of the next unclaimed item. Written only by ``fetch_add`` (workers
  claiming) and by ``publish`` (the coordinator, between windows, when no worker runs).
* ``COUNT``: number of items published; written only by ``publish``.
* ``segment_word(k)``: the cursor of home segment ``k`` (see below), each on its own
  64-byte line so that two threads claiming from their own segments do not share one.
  Written by ``fetch_add`` (the segment's owner, and thieves) and by ``publish_homed``.

Home segments (``publish_homed``): every item has a home thread; items are grouped by
home, and thread ``i`` claims from its own segment first, then steals from the others in
turn, each claim still one ``fetch_add``. An entity whose home is ``e % threads`` therefore
runs on the same thread window after window (its context, RNG, rows and heap stay in that
core's cache, and in free-threaded CPython the objects stay with the thread that uses
them), yet no thread waits at the barrier while another segment still has work.

``items`` (region ``pel_items``) is written only by ``publish``. Workers learn that a new
window was published through the pool's condition variable / generation counter, whose
lock orders ``publish``'s writes before their reads, so claims need only atomicity:
``fetch_add`` guarantees that every index in ``[0, COUNT)`` is handed to exactly one
claimer. Chunks shrink as work runs out (guided scheduling: remaining / (2 * threads),
at least ``min_chunk``), so one atomic is paid per chunk, not per entity, and the tail of
a window is still shared out finely.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seer.queues.atomic import AtomicWords
from seer.queues.layout import BufferLayout, Region

__all__ = ["CapacityError", "HomeClaimer", "MpmcRing", "ParallelExecutiveList", "PelClaimer",
           "RingPort", "segment_word"]

CURSOR, COUNT = 0, 1
WORDS_PER_LINE = 8  # 64 bytes


def segment_word(k: int) -> int:
    """The ctl word holding home segment ``k``'s cursor."""
    return WORDS_PER_LINE * (k + 1)


class CapacityError(ValueError):
    """More items than a PEL or ring can hold."""


class ParallelExecutiveList:
    """Up to ``capacity`` entity ids per window."""

    def __init__(self, capacity: int, buffer: Any, regions: dict[str, Region]) -> None:
        if capacity < 1:
            raise ValueError(f"PEL capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        words = regions["pel_ctl"].words
        self.max_segments = words // WORDS_PER_LINE - 1
        self.ctl = AtomicWords(words, buffer=buffer, offset=regions["pel_ctl"].offset)
        self.items = np.ndarray((capacity,), np.int64, buffer=buffer,
                                offset=regions["pel_items"].offset)
        self.count = 0
        # Home segments of the current window (plain lists: written by the coordinator
        # before the wake-up that orders them before every claim).
        self.seg_start: list[int] = [0]
        self.seg_end: list[int] = [0]

    @staticmethod
    def plan(layout: BufferLayout, capacity: int, segments: int = 1) -> dict[str, Region]:
        """Regions for ``capacity`` items and up to ``segments`` home segments."""
        return {"pel_ctl": layout.add("pel_ctl", WORDS_PER_LINE * (segments + 1)),
                "pel_items": layout.add("pel_items", capacity)}

    @classmethod
    def create(cls, capacity: int, segments: int = 1) -> ParallelExecutiveList:
        layout = BufferLayout()
        regions = cls.plan(layout, capacity, segments)
        return cls(capacity, layout.allocate(), regions)

    def publish(self, entities: Any) -> int:
        """Make ``entities`` the items of the next window (coordinator only, while no
        worker claims). Returns the count."""
        n = len(entities)
        if n > self.capacity:
            raise CapacityError(f"PEL capacity {self.capacity} < {n} ready entities")
        self.items[:n] = entities
        self.count = n
        self.ctl.array[COUNT] = n
        self.ctl.array[CURSOR] = 0
        return n

    def publish_homed(self, entities: np.ndarray, home: np.ndarray, segments: int) -> int:
        """Make ``entities`` the items of the next window, grouped by ``home`` (each in
        ``range(segments)``; the order within a home is kept). Coordinator only, while no
        worker claims. Claim with :meth:`home_claimer`. Returns the count."""
        n = len(entities)
        if n > self.capacity:
            raise CapacityError(f"PEL capacity {self.capacity} < {n} ready entities")
        if not 1 <= segments <= self.max_segments:
            raise CapacityError(f"PEL has room for {self.max_segments} home segments, "
                                f"asked for {segments}")
        # small ints sort stably in linear time (numpy uses radix sort for them)
        order = np.argsort(home.astype(np.int16), kind="stable")
        self.items[:n] = entities[order]
        counts = np.bincount(home, minlength=segments)
        ends = np.cumsum(counts)
        starts = (ends - counts).tolist()
        self.seg_start, self.seg_end = starts, ends.tolist()
        words = self.ctl.array
        for k in range(segments):
            words[segment_word(k)] = starts[k]
        self.count = n
        return n

    def claimer(self, threads: int, *, min_chunk: int = 1, path: str | None = None) -> PelClaimer:
        """The calling thread's claim handle."""
        return PelClaimer(self, self.ctl.accessor(path), max(1, threads), max(1, min_chunk))

    def home_claimer(self, home: int, threads: int, *, min_chunk: int = 1,
                     path: str | None = None) -> HomeClaimer:
        """The claim handle of the thread whose home segment is ``home``."""
        return HomeClaimer(self, self.ctl.accessor(path), home, max(1, threads),
                           max(1, min_chunk))


class PelClaimer:
    """``claim()`` returns ``(start, stop)`` of a chunk of ``items`` or None when the window
    is exhausted. ``claims`` counts the chunks this thread got."""

    __slots__ = ("_acc", "_div", "_items", "_min", "_pel", "_seen", "claims")

    def __init__(self, pel: ParallelExecutiveList, acc: Any, threads: int,
                 min_chunk: int) -> None:
        self._pel = pel
        self._acc = acc
        self._div = 2 * threads
        self._min = min_chunk
        self._seen = 0
        self._items = pel.items
        self.claims = 0

    def reset(self) -> None:
        """Forget the cursor estimate (call at the start of each window)."""
        self._seen = 0

    def claim(self) -> tuple[int, int] | None:
        count = self._pel.count
        # The chunk size uses this thread's last view of the cursor: stale views only make
        # a chunk larger than ideal, never overlapping (fetch_add decides the range).
        chunk = max(self._min, (count - self._seen) // self._div)
        start = self._acc.fetch_add(CURSOR, chunk)
        if start >= count:
            self._seen = count
            return None
        stop = min(start + chunk, count)
        self._seen = stop
        self.claims += 1
        return start, stop


class HomeClaimer:
    """``claim()`` returns ``(start, stop)`` of a chunk of ``items`` or None when every
    segment is exhausted: guided chunks from the home segment first, then from the other
    segments in turn (``steals`` counts those). A segment's cursor only grows, so once a
    ``fetch_add`` lands past its end the segment is done for this window."""

    __slots__ = ("_acc", "_div", "_home", "_min", "_pel", "_seen", "_seg", "_visited",
                 "claims", "steals")

    def __init__(self, pel: ParallelExecutiveList, acc: Any, home: int, threads: int,
                 min_chunk: int) -> None:
        self._pel = pel
        self._acc = acc
        self._home = home
        self._div = 2 * threads
        self._min = min_chunk
        self._seg = home
        self._seen = 0
        self._visited = 0
        self.claims = 0
        self.steals = 0

    def reset(self, segments: int) -> None:
        """Start a window that has ``segments`` home segments."""
        self._seg = self._home % segments
        self._seen = self._pel.seg_start[self._seg]
        self._visited = 0

    def claim(self) -> tuple[int, int] | None:
        pel = self._pel
        segments = len(pel.seg_end)
        while self._visited < segments:
            k = self._seg
            end = pel.seg_end[k]
            word = segment_word(k)
            if k != self._home and self._seen < 0:  # first look at a thief's target
                self._seen = self._acc.load(word)
            chunk = max(self._min, (end - self._seen) // self._div)
            start = self._acc.fetch_add(word, chunk) if self._seen < end else end
            if start < end:
                stop = min(start + chunk, end)
                self._seen = stop
                self.claims += 1
                if k != self._home:
                    self.steals += 1
                return start, stop
            self._visited += 1
            self._seg = (k + 1) % segments
            self._seen = -1  # unknown until loaded
        return None


class MpmcRing:
    """Bounded multi-producer multi-consumer FIFO of int64 values (Dmitry Vyukov's design).

    Words: ``ENQ`` and ``DEQ`` (positions, advanced only by CAS) and one sequence word per
    slot. Slot ``i`` with sequence ``s``: ``s == pos`` means free for the producer at
    ``pos``; ``s == pos + 1`` means full for the consumer at ``pos``; the consumer frees it
    for the next lap with ``s = pos + capacity``. The value itself is a plain store made
    before the release-store of the slot's sequence and read after its acquire-load, so a
    consumer never sees a half-written slot. FIFO: values leave in the order their producers'
    CASes on ``ENQ`` succeeded, so each producer's own values stay in order.
    """

    ENQ, DEQ = 0, 1

    def __init__(self, capacity: int, buffer: Any, regions: dict[str, Region],
                 *, initialise: bool = True) -> None:
        if capacity < 2 or capacity & (capacity - 1):
            raise ValueError(f"ring capacity must be a power of two >= 2, got {capacity}")
        self.capacity = capacity
        self.ctl = AtomicWords(2, buffer=buffer, offset=regions["ring_ctl"].offset)
        self.seqs = AtomicWords(capacity, buffer=buffer, offset=regions["ring_seq"].offset)
        self.buffer = buffer
        self.regions = regions
        if initialise:
            self.ctl.array[:] = 0
            self.seqs.array[:] = np.arange(capacity)

    @staticmethod
    def plan(layout: BufferLayout, capacity: int) -> dict[str, Region]:
        return {"ring_ctl": layout.add("ring_ctl", 2),
                "ring_seq": layout.add("ring_seq", capacity),
                "ring_data": layout.add("ring_data", capacity)}

    @classmethod
    def create(cls, capacity: int) -> MpmcRing:
        layout = BufferLayout()
        regions = cls.plan(layout, capacity)
        return cls(capacity, layout.allocate(), regions)

    def port(self, path: str | None = None) -> RingPort:
        """The calling thread's handle."""
        return RingPort(self, path)


class RingPort:
    """``try_push(v) -> bool`` (False when full), ``try_pop() -> int | None`` (None when
    empty), ``push(v)`` raising :class:`CapacityError` when full."""

    __slots__ = ("_ctl", "_data", "_mask", "_seq", "capacity", "cas_retries")

    def __init__(self, ring: MpmcRing, path: str | None) -> None:
        self._ctl = ring.ctl.accessor(path)
        self._seq = ring.seqs.accessor(path)
        r = ring.regions["ring_data"]
        self._data = memoryview(ring.buffer).cast("B")[r.offset: r.offset + 8 * ring.capacity] \
            .cast("q")
        self._mask = ring.capacity - 1
        self.capacity = ring.capacity
        self.cas_retries = 0

    def try_push(self, value: int) -> bool:
        ctl, seqs, mask = self._ctl, self._seq, self._mask
        pos = ctl.load(MpmcRing.ENQ)
        while True:
            dif = seqs.load(pos & mask) - pos
            if dif == 0:
                observed = ctl.compare_exchange(MpmcRing.ENQ, pos, pos + 1)
                if observed == pos:
                    break
                pos = observed
                self.cas_retries += 1
            elif dif < 0:
                return False
            else:
                pos = ctl.load(MpmcRing.ENQ)
        self._data[pos & mask] = value
        seqs.store(pos & mask, pos + 1)
        return True

    def push(self, value: int) -> None:
        if not self.try_push(value):
            raise CapacityError(f"ring full ({self.capacity} values)")

    def try_pop(self) -> int | None:
        ctl, seqs, mask = self._ctl, self._seq, self._mask
        pos = ctl.load(MpmcRing.DEQ)
        while True:
            dif = seqs.load(pos & mask) - (pos + 1)
            if dif == 0:
                observed = ctl.compare_exchange(MpmcRing.DEQ, pos, pos + 1)
                if observed == pos:
                    break
                pos = observed
                self.cas_retries += 1
            elif dif < 0:
                return None
            else:
                pos = ctl.load(MpmcRing.DEQ)
        value = self._data[pos & mask]
        seqs.store(pos & mask, pos + mask + 1)
        return value
