"""Queues shared between processes, on one ``multiprocessing.shared_memory`` block.

The runtime itself is in-process (threads of one free-threaded interpreter) and never
imports this package. It is for work that crosses a process boundary, built from the same
lock-free parts: LEQ intakes whose records carry numeric fields that any process can read
(:mod:`~seer.interprocess.records`), and a Vyukov MPMC ring
(:mod:`~seer.interprocess.ring`).
"""

from __future__ import annotations

from multiprocessing import shared_memory

from seer.interprocess.records import NumericRecords, drain_numeric
from seer.interprocess.ring import MpmcRing, RingPort
from seer.queues.arena import EventArena
from seer.queues.layout import BufferLayout
from seer.queues.leq import LocalEventQueues

__all__ = ["MpmcRing", "NumericRecords", "RingPort", "SharedQueues", "drain_numeric"]


class SharedQueues:
    """LEQs, their arena and numeric records in one shared-memory block.

    ``SharedQueues(n, capacity)`` creates a new block; ``SharedQueues(n, capacity,
    name=...)`` attaches to the block another process created with the same sizes (nothing
    is re-initialised). Processes that allocate records must each pass a disjoint
    ``handles`` range. Call :meth:`close` in every process, and :meth:`unlink` once in the
    creating one.
    """

    def __init__(self, n_entities: int, capacity: int, *, n_slabs: int = 1, batch: int = 256,
                 name: str | None = None, handles: range | None = None) -> None:
        layout = BufferLayout()
        arena_regions = EventArena.plan(layout, capacity)
        record_regions = NumericRecords.plan(layout, capacity)
        heads = LocalEventQueues.plan(layout, n_entities)
        self.block: shared_memory.SharedMemory = layout.allocate_shared(name)
        buf = self.block.buf
        self.arena = EventArena(capacity, buf, arena_regions, n_slabs=n_slabs, batch=batch,
                                handles=handles)
        self.records = NumericRecords(capacity, buf, record_regions)
        self.leqs = LocalEventQueues(n_entities, self.arena, buf, heads,
                                     initialise=name is None)

    @property
    def name(self) -> str:
        return self.block.name

    def close(self) -> None:
        """Drop this process's views and close the block (slabs must be closed first)."""
        self.leqs.close()
        self.records.close()
        self.block.close()

    def unlink(self) -> None:
        self.block.unlink()
