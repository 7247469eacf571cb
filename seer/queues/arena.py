"""The event arena: event records addressed by int handles, with per-worker slabs.

Record ``h`` has two parts:

* ``next[h]``, an int64 word in the shared buffer: the link to the next record of an LEQ
  intake chain (:data:`NIL` ends a chain). It lives in the buffer because the LEQ's atomic
  head words point at handles, and a chain must be readable by whoever takes it.
* slot ``h`` of the arena's *side table*, which holds the :class:`~seer.events.Event`
  tuple itself. Events are immutable Python objects, so the in-process runtime stores the
  object rather than copying its fields into numbers and rebuilding a tuple on the other
  side (two stores instead of six, and no allocation on read). Records that must be read by
  another process carry numeric fields instead: see :mod:`seer.interprocess`.

Ownership. A record is owned by exactly one party at a time: the slab that allocated it
(while writing), then the LEQ intake it was pushed to (the push's release publishes the
side-table slot and the ``next`` link), then the worker that took the intake (the
exchange's acquire makes them visible), which consumes the record and frees it into *its
own* slab. Consuming clears the slot, so the arena never keeps a payload alive.

Allocation. Each slab keeps a private free list, so allocation and freeing need no atomics;
handles therefore migrate between slabs. All handles start in a process-wide pool; a slab
that runs dry takes a batch from it, and a slab whose free list exceeds two batches gives
one back (one lock per batch, never per record). So at most ``2 * batch`` free records sit
in any one slab, and :class:`ArenaFullError` means fewer than that many were free when one
was needed: size ``capacity`` as the peak of events in flight plus
``n_slabs * 2 * batch``. Nothing is ever overwritten.
"""

from __future__ import annotations

from typing import Any

from seer.errors import SeerError
from seer.events import Event, make_event
from seer.queues.atomic import data_slots, data_view, shared_lock
from seer.queues.layout import BufferLayout, Region

__all__ = ["NIL", "ArenaFullError", "ArenaSlab", "EventArena", "HandleError"]

#: The null handle: ends an intake chain and marks an empty intake.
NIL = -1
#: Record ``h``'s side-table slot is ``side[h >> SIDE_CHUNK_BITS][h & SIDE_MASK]``.
SIDE_CHUNK_BITS = 10
_SIDE_CHUNK = 1 << SIDE_CHUNK_BITS
SIDE_MASK = _SIDE_CHUNK - 1


class ArenaFullError(SeerError, RuntimeError):
    """Every record of the arena is in use."""


class HandleError(SeerError, IndexError):
    """A handle outside ``range(capacity)``."""


class EventArena:
    """``capacity`` event records; their ``next`` links live in ``buffer`` (region
    ``ev_next``). ``handles`` restricts this arena object to part of the records, so that
    several processes can share one buffer, each allocating from a disjoint range."""

    def __init__(self, capacity: int, buffer: Any, regions: dict[str, Region],
                 *, n_slabs: int = 1, batch: int = 256, handles: range | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"arena capacity must be >= 1, got {capacity}")
        if n_slabs < 1:
            raise ValueError(f"arena needs at least one slab, got {n_slabs}")
        self.capacity = capacity
        self.buffer = buffer
        self.regions = regions
        self.batch = max(1, batch)
        if handles is None:
            handles = range(capacity)
        if handles.step != 1 or handles.start < 0 or handles.stop > capacity:
            raise ValueError(f"handles {handles!r} must be a contiguous part of "
                             f"range({capacity})")
        self.handles = handles
        self._pool: list[int] = list(reversed(handles))  # pop() hands out low handles first
        self._pool_lock = shared_lock()
        self._side: list[list[Any]] = [[None] * _SIDE_CHUNK
                                       for _ in range(-(-capacity // _SIDE_CHUNK))]
        self.n_slabs = n_slabs

    @staticmethod
    def plan(layout: BufferLayout, capacity: int) -> dict[str, Region]:
        """Add this arena's region (the ``next`` links) to ``layout``."""
        if capacity < 1:
            raise ValueError(f"arena capacity must be >= 1, got {capacity}")
        return {"ev_next": layout.add("ev_next", capacity)}

    @classmethod
    def create(cls, capacity: int, *, n_slabs: int = 1, batch: int = 256) -> EventArena:
        """An arena in its own in-process buffer."""
        layout = BufferLayout()
        regions = cls.plan(layout, capacity)
        return cls(capacity, layout.allocate(), regions, n_slabs=n_slabs, batch=batch)

    def slab(self, index: int) -> ArenaSlab:
        """The allocator of worker ``index`` (used by that worker's thread only). It starts
        empty and takes handles from the pool as needed."""
        if not 0 <= index < self.n_slabs:
            raise ValueError(f"slab {index} out of range({self.n_slabs})")
        return ArenaSlab(self)

    def pooled(self) -> int:
        """Free records in the process-wide pool (not counting those held by slabs)."""
        with self._pool_lock:
            return len(self._pool)

    def reset(self) -> None:
        """Forget every record and put all handles back in the pool (single-threaded use
        only; slabs made before must not be used again: make new ones)."""
        with self._pool_lock:
            self._pool[:] = reversed(self.handles)
        for chunk in self._side:
            chunk[:] = [None] * _SIDE_CHUNK

    # -- the pool, used by slabs only (one lock per batch of handles) --------------------------
    def _take_batch(self) -> list[int]:
        with self._pool_lock:
            batch = self._pool[-self.batch:]
            del self._pool[-self.batch:]
            return batch  # descending, so the slab's pop() hands out low handles first

    def _give_batch(self, handles: list[int]) -> None:
        with self._pool_lock:
            self._pool.extend(handles)


class ArenaSlab:
    """One worker's allocator and reader/writer of records. Not thread-safe by design:
    exactly one thread uses a slab, so its free list and memoryview are private."""

    __slots__ = ("_free", "_high", "_next", "_side", "arena", "capacity")

    def __init__(self, arena: EventArena) -> None:
        self.arena = arena
        self.capacity = arena.capacity
        self._free: list[int] = []  # one list for the slab's life (see free_list)
        self._high = 2 * arena.batch
        # Plain shared data: published by the LEQ push's release, read after the take's
        # acquire (module docstring); views that a model session can watch.
        self._side = data_slots("ev_side", arena._side)
        r = arena.regions["ev_next"]
        self._next = data_view("ev_next", arena.buffer, r.offset, arena.capacity)

    @property
    def next(self) -> memoryview:
        """The ``next`` links, as an int64 memoryview private to this slab."""
        return self._next

    def free_count(self) -> int:
        return len(self._free)

    # The LEQ worker of this slab inlines store and consume on its hot path: it holds
    # these three and keeps to the same rules (the object behind ``free_list`` never
    # changes; a free list longer than ``high`` is trimmed).
    @property
    def free_list(self) -> list[int]:
        """The free handles (a ``pop`` takes one; an ``append`` frees one)."""
        return self._free

    @property
    def side(self) -> list[list[Any]]:
        """The arena's side table: record ``h`` is ``side[h >> SIDE_CHUNK_BITS][h & SIDE_MASK]``."""
        return self._side

    @property
    def high(self) -> int:
        """Above this many free handles the slab gives batches back (:meth:`trim`)."""
        return self._high

    def trim(self) -> None:
        """Give batches back to the pool until at most :attr:`high` handles are free."""
        free, batch = self._free, self.arena.batch
        while len(free) > self._high:
            handles = free[-batch:]
            del free[-batch:]
            self.arena._give_batch(handles)

    def alloc(self) -> int:
        """A free handle; raises :class:`ArenaFullError` when none is left anywhere."""
        free = self._free
        if not free:
            free.extend(self.arena._take_batch())
            if not free:
                raise ArenaFullError(
                    f"event arena full: no free record among {self.capacity} (events in "
                    f"flight, plus up to {2 * self.arena.batch} free records held by each "
                    "other slab); use a larger arena capacity")
        return free.pop()

    def free(self, h: int) -> None:
        """Return record ``h`` to this slab."""
        if not 0 <= h < self.capacity:
            raise HandleError(f"event handle {h} out of range({self.capacity})")
        free = self._free
        free.append(h)
        if len(free) > self._high:
            self.trim()

    def release(self) -> None:
        """Give every free record this slab holds back to the pool (when the slab's thread
        goes away, e.g. on a resize). The slab stays usable."""
        if self._free:
            self.arena._give_batch(self._free[:])
            self._free.clear()

    def store(self, event: Event) -> int:
        """A new record holding ``event`` (:meth:`alloc` + :meth:`write_event` in one call);
        raises :class:`ArenaFullError` when none is left."""
        free = self._free
        h = free.pop() if free else self.alloc()
        self._side[h >> SIDE_CHUNK_BITS][h & SIDE_MASK] = event
        return h

    def write_event(self, h: int, event: Event) -> None:
        """Fill record ``h`` (not yet published: no other thread may see ``h``)."""
        self._side[h >> SIDE_CHUNK_BITS][h & SIDE_MASK] = event

    def write(self, h: int, tau: float, seq: int, target: int, kind: int,
              payload: Any = None) -> None:
        """Fill record ``h`` with the event ``(tau, seq, target, kind, payload)``."""
        self._side[h >> SIDE_CHUNK_BITS][h & SIDE_MASK] = make_event(tau, seq, target, kind,
                                                                      payload)

    def read(self, h: int) -> Event:
        """Record ``h``'s event (the record stays allocated)."""
        if not 0 <= h < self.capacity:
            raise HandleError(f"event handle {h} out of range({self.capacity})")
        return self._side[h >> SIDE_CHUNK_BITS][h & SIDE_MASK]

    def consume(self, h: int) -> Event:
        """Record ``h``'s event; the record is cleared and freed into this slab."""
        chunk = self._side[h >> SIDE_CHUNK_BITS]
        event = chunk[h & SIDE_MASK]
        chunk[h & SIDE_MASK] = None  # the arena must not keep the payload alive
        self.free(h)
        return event

    def close(self) -> None:
        """Release this slab's memoryview (needed before closing a shared-memory block)."""
        self._next.release()
