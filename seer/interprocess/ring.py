"""A bounded multi-producer multi-consumer FIFO of int64 values over a shared buffer.

Dmitry Vyukov's bounded MPMC queue ("Bounded MPMC queue", 1024cores.net, 2010), with every
control word an :class:`~seer.queues.atomic.AtomicWords` word, so that it works between
threads and, over a ``multiprocessing.shared_memory`` block, between processes. The SEER
runtime does not use it (its windows are published all at once, through the PEL); it is
here for work that is published while it runs, e.g. handing event handles from producer
processes to a consumer process.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seer.queues.atomic import RELAXED, AtomicWords, data_view
from seer.queues.layout import BufferLayout, Region
from seer.queues.pel import CapacityError

__all__ = ["MpmcRing", "RingPort"]


class MpmcRing:
    """Bounded multi-producer multi-consumer FIFO of int64 values (Dmitry Vyukov's design).

    Words: ``ENQ`` and ``DEQ`` (positions, advanced only by CAS; the CAS and the loads of
    these words need only atomicity, so they are *relaxed*) and one sequence word per slot,
    which carries the ordering: a producer's release-store of ``s = pos + 1`` publishes the
    value it stored before, and pairs with the consumer's acquire-load of ``s``; the
    consumer's release-store of ``s = pos + capacity`` pairs with the next lap's producer's
    acquire-load, so the consumer's read of the value happens before the slot is
    overwritten.

    Slot ``i`` with sequence ``s``: ``s == pos`` means free for the producer at ``pos``;
    ``s == pos + 1`` means full for the consumer at ``pos``; the consumer frees it for the
    next lap with ``s = pos + capacity``. So a consumer never sees a half-written slot.
    FIFO: values leave in the order their producers' CASes on ``ENQ`` succeeded, so each
    producer's own values stay in order.
    """

    ENQ, DEQ = 0, 1

    def __init__(self, capacity: int, buffer: Any, regions: dict[str, Region],
                 *, initialise: bool = True) -> None:
        if capacity < 2 or capacity & (capacity - 1):
            raise ValueError(f"ring capacity must be a power of two >= 2, got {capacity}")
        self.capacity = capacity
        self.ctl = AtomicWords(2, buffer=buffer, offset=regions["ring_ctl"].offset,
                               name="ring_ctl")
        self.seqs = AtomicWords(capacity, buffer=buffer, offset=regions["ring_seq"].offset,
                                name="ring_seq")
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
        self._data = data_view("ring_data", ring.buffer, r.offset, ring.capacity)
        self._mask = ring.capacity - 1
        self.capacity = ring.capacity
        self.cas_retries = 0

    def _claim(self, cursor: int, lag: int) -> int | None:
        """Claim the next position of ``cursor`` (``ENQ`` or ``DEQ``) whose slot sequence is
        ``pos + lag`` (0: free for a producer, 1: full for a consumer); None when the ring
        is full (producers) or empty (consumers). The two sides are Vyukov's mirror image."""
        ctl, seqs, mask = self._ctl, self._seq, self._mask
        # The cursor's loads and CAS need only atomicity (RELAXED, as in Vyukov's
        # original): the slot's sequence word carries every ordering.
        pos = ctl.load(cursor, RELAXED)
        while True:
            dif = seqs.load(pos & mask) - (pos + lag)  # acquire: pairs with the slot's store
            if dif == 0:
                observed = ctl.compare_exchange(cursor, pos, pos + 1, RELAXED, RELAXED)
                if observed == pos:
                    return pos
                pos = observed
                self.cas_retries += 1
            elif dif < 0:
                return None
            else:  # another thread claimed this position: catch up
                pos = ctl.load(cursor, RELAXED)

    def try_push(self, value: int) -> bool:
        pos = self._claim(MpmcRing.ENQ, 0)
        if pos is None:
            return False
        self._data[pos & self._mask] = value
        self._seq.store(pos & self._mask, pos + 1)  # release: publishes the value
        return True

    def push(self, value: int) -> None:
        if not self.try_push(value):
            raise CapacityError(f"ring full ({self.capacity} values)")

    def try_pop(self) -> int | None:
        pos = self._claim(MpmcRing.DEQ, 1)
        if pos is None:
            return None
        mask = self._mask
        value = self._data[pos & mask]
        self._seq.store(pos & mask, pos + mask + 1)  # release: the slot is free next lap
        return value
