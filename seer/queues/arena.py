"""Event records as structure-of-arrays in the shared buffer, addressed by int handles.

Record ``h`` is row ``h`` of seven int64-sized fields::

    tau     float64  timestamp τ
    seq     int64    sequence number (κ = (τ, seq))
    target  int64    entity the event is for
    meta    int64    kind << 8 | payload type
    p0, p1  8 bytes  numeric payload slots
    next    int64    link to the next record in an LEQ intake chain (NIL = -1)

Payload types: None, a float (in ``p0``), an int that fits int64 (in ``p0``), a pair of
floats (``p0``, ``p1``; written with :meth:`ArenaSlab.write_numeric`, the form another
process can read), or any other object, kept in the arena's in-process *side table*.
Within one process, :meth:`ArenaSlab.write_event` stores the whole immutable event tuple
in the side table instead (two stores instead of six, and no tuple to rebuild on read):
the runtime uses that form, since its records never leave the process.

Ownership and allocation. A record is owned by exactly one party at a time: the slab that
allocated it (while writing), then the LEQ intake it was pushed to (the push's release
publishes the fields), then the worker that drained it (the exchange's acquire makes the
fields visible), which frees it into *its own* slab. Each slab keeps a private free list,
so allocation and freeing need no atomics. Handles therefore migrate between slabs. All
handles start in a process-wide pool; a slab that runs dry takes a batch from it, and a
slab whose free list exceeds two batches gives one back (one lock per batch, never per
record). So at most ``2 * batch`` free records sit in any one slab, and
:class:`ArenaFullError` means that fewer than that many records per slab were free when
one was needed: size ``capacity`` as the peak of pending events plus
``n_slabs * 2 * batch``. Nothing is ever overwritten.

Several processes can share one arena (in a shared-memory block) by giving each a disjoint
``handles`` range: the pool and the side table are per process.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from seer.events import Event
from seer.queues.layout import BufferLayout, Region

__all__ = ["NIL", "ArenaFullError", "ArenaSlab", "EventArena", "HandleError"]

NIL = -1
P_NONE, P_FLOAT, P_INT, P_PAIR, P_OBJECT, P_EVENT = 0, 1, 2, 3, 4, 5
_SIDE_CHUNK_BITS = 10
_SIDE_CHUNK = 1 << _SIDE_CHUNK_BITS
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_tuple_new = tuple.__new__

FIELDS = ("tau", "seq", "target", "meta", "p0", "p1", "next")


class ArenaFullError(RuntimeError):
    """Every record of the arena is in use."""


class HandleError(IndexError):
    """A handle outside ``range(capacity)``."""


class EventArena:
    """``capacity`` event records in ``buffer`` (see the module docstring)."""

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
        self._pool_lock = threading.Lock()
        self._side: list[list[Any]] = [[None] * _SIDE_CHUNK
                                       for _ in range(-(-capacity // _SIDE_CHUNK))]
        self.n_slabs = n_slabs
        self.arrays = {
            name: np.ndarray((capacity,), np.float64 if name == "tau" else np.int64,
                             buffer=buffer, offset=regions["ev_" + name].offset)
            for name in FIELDS
        }

    @staticmethod
    def plan(layout: BufferLayout, capacity: int) -> dict[str, Region]:
        """Add this arena's regions to ``layout``."""
        if capacity < 1:
            raise ValueError(f"arena capacity must be >= 1, got {capacity}")
        return {"ev_" + f: layout.add("ev_" + f, capacity) for f in FIELDS}

    @classmethod
    def create(cls, capacity: int, *, n_slabs: int = 1, batch: int = 256) -> EventArena:
        """An arena in its own in-process buffer."""
        layout = BufferLayout()
        regions = cls.plan(layout, capacity)
        return cls(capacity, layout.allocate(), regions, n_slabs=n_slabs, batch=batch)

    def slab(self, index: int) -> ArenaSlab:
        """The allocator of worker ``index`` (make it on, and use it from, that worker's
        thread). It starts empty and takes handles from the pool as needed."""
        if not 0 <= index < self.n_slabs:
            raise ValueError(f"slab {index} out of range({self.n_slabs})")
        return ArenaSlab(self)

    def reset(self) -> None:
        """Forget every record and put all handles back in the pool (single-threaded use
        only; slabs made before must not be used again: make new ones)."""
        self._pool[:] = reversed(self.handles)
        for chunk in self._side:
            chunk[:] = [None] * _SIDE_CHUNK

    # -- overflow pool (process-wide, one lock per batch of handles) --------------------------
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
    exactly one thread uses a slab, so its free list and memoryviews are private."""

    __slots__ = ("_free", "_high", "_meta", "_next", "_p0f", "_p0i", "_p1f", "_seq", "_side",
                 "_target", "_tau", "arena", "capacity")

    def __init__(self, arena: EventArena) -> None:
        self.arena = arena
        self.capacity = arena.capacity
        self._free: list[int] = []
        self._high = 2 * arena.batch
        self._side = arena._side
        regions, buf = arena.regions, memoryview(arena.buffer).cast("B")

        def view(name: str, fmt: str) -> memoryview:
            r = regions["ev_" + name]
            return buf[r.offset: r.offset + 8 * arena.capacity].cast(fmt)

        self._tau = view("tau", "d")
        self._seq = view("seq", "q")
        self._target = view("target", "q")
        self._meta = view("meta", "q")
        self._p0f = view("p0", "d")
        self._p0i = view("p0", "q")
        self._p1f = view("p1", "d")
        self._next = view("next", "q")

    @property
    def next(self) -> memoryview:
        """The ``next`` links, as an int64 memoryview private to this slab."""
        return self._next

    def free_count(self) -> int:
        return len(self._free)

    def alloc(self) -> int:
        """A free handle; raises :class:`ArenaFullError` when none is left anywhere."""
        free = self._free
        if not free:
            free.extend(self.arena._take_batch())
            if not free:
                raise ArenaFullError(
                    f"event arena full: no free record among {self.capacity} (pending "
                    f"events, plus up to {2 * self.arena.batch} free records held by each "
                    "other slab); use a larger arena capacity")
        return free.pop()

    def free(self, h: int) -> None:
        """Return record ``h`` to this slab."""
        if not 0 <= h < self.capacity:
            raise HandleError(f"event handle {h} out of range({self.capacity})")
        free = self._free
        free.append(h)
        if len(free) > self._high:
            batch = free[-self.arena.batch:]
            del free[-self.arena.batch:]
            self.arena._give_batch(batch)

    def write(self, h: int, tau: float, seq: int, target: int, kind: int,
              payload: Any) -> None:
        """Fill record ``h`` (not yet published: no other thread may see ``h``)."""
        self._tau[h] = tau
        self._seq[h] = seq
        self._target[h] = target
        cls = payload.__class__
        if payload is None:
            self._meta[h] = kind << 8
        elif cls is float:
            self._p0f[h] = payload
            self._meta[h] = (kind << 8) | P_FLOAT
        elif cls is int and _INT64_MIN <= payload <= _INT64_MAX:
            self._p0i[h] = payload
            self._meta[h] = (kind << 8) | P_INT
        else:
            self._side[h >> _SIDE_CHUNK_BITS][h & (_SIDE_CHUNK - 1)] = payload
            self._meta[h] = (kind << 8) | P_OBJECT

    def write_event(self, h: int, event: Event) -> None:
        """Fill record ``h`` with an in-process event object (see the module docstring)."""
        self._side[h >> _SIDE_CHUNK_BITS][h & (_SIDE_CHUNK - 1)] = event
        self._meta[h] = P_EVENT

    def write_numeric(self, h: int, tau: float, seq: int, target: int, kind: int,
                      p0: float, p1: float) -> None:
        """Fill record ``h`` with a pair-of-floats payload (readable from any process)."""
        self._tau[h] = tau
        self._seq[h] = seq
        self._target[h] = target
        self._p0f[h] = p0
        self._p1f[h] = p1
        self._meta[h] = (kind << 8) | P_PAIR

    def read(self, h: int) -> Event:
        """Record ``h`` as an :class:`~seer.events.Event`."""
        if not 0 <= h < self.capacity:
            raise HandleError(f"event handle {h} out of range({self.capacity})")
        meta = self._meta[h]
        ptype = meta & 0xFF
        if ptype == P_EVENT:
            return self._side[h >> _SIDE_CHUNK_BITS][h & (_SIDE_CHUNK - 1)]
        if ptype == P_NONE:
            payload = None
        elif ptype == P_FLOAT:
            payload = self._p0f[h]
        elif ptype == P_INT:
            payload = self._p0i[h]
        elif ptype == P_OBJECT:
            payload = self._side[h >> _SIDE_CHUNK_BITS][h & (_SIDE_CHUNK - 1)]
        else:
            payload = (self._p0f[h], self._p1f[h])
        return _tuple_new(Event, (self._tau[h], self._seq[h], self._target[h], meta >> 8,
                                  payload))

    def close(self) -> None:
        """Release this slab's memoryviews (needed before closing a shared-memory block)."""
        for name in ("_tau", "_seq", "_target", "_meta", "_p0f", "_p0i", "_p1f", "_next"):
            getattr(self, name).release()
