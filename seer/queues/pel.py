"""The Parallel Executive List: the ready entities of a window, claimed in chunks.

PEL words (region ``pel_ctl``), each an int64 changed only through an accessor while
threads run:

* ``CURSOR``: index of the next unclaimed item of a plain (un-homed) publication. Written
  by ``fetch_add`` (claimers) and by ``publish`` (the coordinator, while no claimer runs).
* ``COUNT``: number of items published; written only by ``publish``.
* ``segment_word(k)``: the cursor of home segment ``k`` (see below), each on its own
  64-byte line so that two threads claiming from their own segments do not share one.
  Written by ``fetch_add`` (the segment's owner, and thieves) and by ``publish_homed``.
* ``segment_word(k, i)`` for ``1 <= i < SEGMENT_WORDS``: the other words of segment
  ``k``'s line, a strategy's own (a second cursor, a count of steals, a flag): the PEL
  never reads or writes them, so a strategy that needs them sets them in its ``publish``
  (coordinator, plain stores, published by the pool hand-off like the cursors) and says
  what each means, who writes it and with which order.

``fetch_add`` is *relaxed*: claims need only its *atomicity*: every index in
``[start, end)`` of a segment is handed to exactly one claimer because the read-modify-write
of one word is indivisible. What orders the coordinator's plain writes (``items``, the
cursors, ``seg_start``/``seg_end``) before the claims is the pool's hand-off, not these
words: the coordinator writes them, then publishes the window through the pool, and a
worker reads them only after it has seen that publication (see ``docs/design.md``, "The
pool hand-off"; a worker that is spinning does not take the pool's lock, so the ordering
rests on the release store / acquire load of the pool's published-task attribute).

Home segments (``publish_homed``): every item has a home thread; items are grouped by home,
and thread ``i`` claims from its own segment first, then steals from the others in turn,
each claim still one ``fetch_add``. Which home an item gets is the assignment strategy's
choice (:mod:`seer.sched.assignment`).

Chunk sizes follow guided self-scheduling (C. D. Polychronopoulos and D. J. Kuck, "Guided
self-scheduling: a practical scheduling scheme for parallel supercomputers", IEEE Trans.
Computers, 1987), at least ``min_chunk``: a thread claiming from its own home segment takes
remaining / threads, GSS's own rule; a thief, or a claim on a plain publication, takes
remaining / (2 * threads), leaving the owner (or the others) part of what is left. One
atomic is paid per chunk, not per entity, and the tail of a window is still shared out
finely. The owner's larger chunks matter because every claim also costs a Python call and
a cffi call, about 3 µs with the chunk's set-up: on PCS (1600 cells, 2 threads) they halve
a thread's claims per step, below the 32-entity chunks of the ``static`` peer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seer.errors import SeerError
from seer.queues.atomic import RELAXED, AtomicWords
from seer.queues.layout import BufferLayout, Region

__all__ = ["SEGMENT_WORDS", "CapacityError", "HomeClaimer", "OwnSegmentClaimer",
           "ParallelExecutiveList", "PelClaimer", "segment_word"]

CURSOR, COUNT = 0, 1
WORDS_PER_LINE = 8  # 64 bytes
#: Words per home segment: the cursor (word 0) and ``SEGMENT_WORDS - 1`` for a strategy.
SEGMENT_WORDS = WORDS_PER_LINE


def segment_word(k: int, i: int = 0) -> int:
    """The ctl word ``i`` of home segment ``k``: ``i = 0`` (the default) is the segment's
    cursor; ``1 <= i < SEGMENT_WORDS`` are free for a strategy's own use (module
    docstring), on the same 64-byte line as the cursor."""
    if not 0 <= i < SEGMENT_WORDS:
        raise ValueError(f"segment word {i!r} out of range(0, {SEGMENT_WORDS}): word 0 is "
                         f"the cursor, 1..{SEGMENT_WORDS - 1} a strategy's own")
    return WORDS_PER_LINE * (k + 1) + i


class CapacityError(SeerError, ValueError):
    """More items than a PEL (or an interprocess ring) can hold."""


class ParallelExecutiveList:
    """Up to ``capacity`` entity ids per window."""

    def __init__(self, capacity: int, buffer: Any, regions: dict[str, Region]) -> None:
        if capacity < 1:
            raise ValueError(f"PEL capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        words = regions["pel_ctl"].words
        self.max_segments = words // WORDS_PER_LINE - 1
        self.ctl = AtomicWords(words, buffer=buffer, offset=regions["pel_ctl"].offset,
                               name="pel_ctl")
        self.items = np.ndarray((capacity,), np.int64, buffer=buffer,
                                offset=regions["pel_items"].offset)
        self.count = 0
        # Home segments of the current window: plain lists written by the coordinator
        # before the pool hand-off that orders them before every claim.
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
        # Plain stores: no claimer runs now; the pool hand-off publishes them.
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
        words = self.ctl.array  # plain stores, published by the pool hand-off
        for k in range(segments):
            words[segment_word(k)] = starts[k]
        self.count = n
        return n

    def claimer(self, threads: int, *, min_chunk: int = 1, path: str | None = None) -> PelClaimer:
        """The calling thread's claim handle."""
        return PelClaimer(self, self.ctl.accessor(path), max(1, threads), max(1, min_chunk))

    def home_claimer(self, home: int, threads: int, *, min_chunk: int = 1,
                     path: str | None = None, steal_min: int = 1) -> HomeClaimer:
        """The claim handle of the thread whose home segment is ``home``."""
        return HomeClaimer(self, self.ctl.accessor(path), home, max(1, threads),
                           max(1, min_chunk), max(1, steal_min))


class OwnSegmentClaimer:
    """``claim()`` returns ``(start, stop)`` of the next ``chunk`` items of home segment
    ``home`` only, or None when it is done: static binding, no sharing. Only the segment's
    owner claims from it, so no atomic is needed; chunks exist so that the thread looks at
    the abort flag now and then."""

    __slots__ = ("_chunk", "_end", "_home", "_next", "_pel", "claims", "steals")

    def __init__(self, pel: ParallelExecutiveList, home: int, chunk: int = 32) -> None:
        self._pel = pel
        self._home = home
        self._chunk = max(1, chunk)
        self._next = self._end = 0
        self.claims = 0
        self.steals = 0  # never: kept so that every claimer reports the same counters

    def reset(self, segments: int) -> None:
        """Start a window that has ``segments`` home segments."""
        pel = self._pel
        k = self._home % segments
        self._next, self._end = pel.seg_start[k], pel.seg_end[k]

    def claim(self) -> tuple[int, int] | None:
        start = self._next
        if start >= self._end:
            return None
        stop = min(start + self._chunk, self._end)
        self._next = stop
        self.claims += 1
        return start, stop


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
        # fetch_add, relaxed: atomicity alone makes the claimed ranges disjoint.
        start = self._acc.fetch_add(CURSOR, chunk, RELAXED)
        if start >= count:
            self._seen = count
            return None
        stop = min(start + chunk, count)
        self._seen = stop
        self.claims += 1
        return start, stop


class HomeClaimer:
    """``claim()`` returns ``(start, stop)`` of a chunk of ``items`` or None when every
    segment is exhausted: guided chunks from the home segment first (remaining / threads),
    then from the other segments in turn (remaining / (2 * threads); ``steals`` counts
    those; ``misses`` counts fetch_adds that landed past a segment's end because other
    threads had taken the rest: the PEL's contention). A segment's cursor only grows, so
    once a ``fetch_add`` lands past its end the segment is done for this window.
    ``steal_min``: a thief leaves a segment that has fewer items left than this (by its
    relaxed estimate) to its owner; 1, the default, steals while anything is left."""

    __slots__ = ("_acc", "_div", "_home", "_min", "_own_div", "_pel", "_seen", "_seg",
                 "_steal_min", "_visited", "claims", "misses", "steals")

    def __init__(self, pel: ParallelExecutiveList, acc: Any, home: int, threads: int,
                 min_chunk: int, steal_min: int = 1) -> None:
        self._pel = pel
        self._acc = acc
        self._home = home
        self._own_div = threads  # own segment: GSS's remaining / P
        self._div = 2 * threads  # another's: leave its owner part of what is left
        self._min = min_chunk
        self._steal_min = steal_min
        self._seg = home
        self._seen = 0
        self._visited = 0
        self.claims = 0
        self.steals = 0
        self.misses = 0  # fetch_adds that came back past a segment's end (contention)

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
            own = k == self._home
            if not own and self._seen < 0:  # first look at a thief's target
                # Relaxed load: only an estimate for the chunk size; a stale value
                # makes the chunk larger than ideal, never overlapping another claim.
                self._seen = self._acc.load(word, RELAXED)
            chunk = max(self._min, (end - self._seen) // (self._own_div if own else self._div))
            # fetch_add, relaxed: its atomicity alone hands [start, start + chunk) to
            # this thread only; the items were ordered before us by the pool hand-off.
            if self._seen < end and (own or end - self._seen >= self._steal_min):
                start = self._acc.fetch_add(word, chunk, RELAXED)
                if start >= end:
                    self.misses += 1  # another thread took the segment's last items
            else:
                start = end
            if start < end:
                stop = min(start + chunk, end)
                self._seen = stop
                self.claims += 1
                if not own:
                    self.steals += 1
                return start, stop
            self._visited += 1
            self._seg = (k + 1) % segments
            self._seen = -1  # unknown until loaded
        return None
