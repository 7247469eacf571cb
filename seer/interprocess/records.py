"""Event records that another process can read: numeric fields in the shared buffer.

The in-process arena keeps each event as a Python object in a side table, which only the
process that wrote it can read. For events that cross a process boundary, a record's
fields live in the shared buffer as structure-of-arrays, indexed by the same arena handle::

    tau     float64  timestamp τ
    seq     int64    sequence number (κ = (τ, seq))
    target  int64    entity the event is for
    kind    int64    event kind id
    p0, p1  float64  the payload: a pair of floats

The writer fills the fields with plain stores before it publishes the handle with the LEQ
push (a release); the reader reads them after taking the intake (an acquire), exactly as
for in-process records.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seer.events import Event, make_event
from seer.queues.arena import NIL
from seer.queues.layout import BufferLayout, Region
from seer.queues.leq import LeqWorker

__all__ = ["FIELDS", "NumericRecords", "drain_numeric"]

FIELDS = ("tau", "seq", "target", "kind", "p0", "p1")
_FLOAT_FIELDS = ("tau", "p0", "p1")


class NumericRecords:
    """``capacity`` numeric records in ``buffer`` (regions planned by :meth:`plan`)."""

    def __init__(self, capacity: int, buffer: Any, regions: dict[str, Region]) -> None:
        self.capacity = capacity
        self.arrays = {
            name: np.ndarray((capacity,), np.float64 if name in _FLOAT_FIELDS else np.int64,
                             buffer=buffer, offset=regions["rec_" + name].offset)
            for name in FIELDS
        }
        a = self.arrays
        self._tau, self._seq, self._target = a["tau"], a["seq"], a["target"]
        self._kind, self._p0, self._p1 = a["kind"], a["p0"], a["p1"]

    @staticmethod
    def plan(layout: BufferLayout, capacity: int) -> dict[str, Region]:
        return {"rec_" + f: layout.add("rec_" + f, capacity) for f in FIELDS}

    def write(self, h: int, tau: float, seq: int, target: int, kind: int,
              p0: float, p1: float) -> None:
        """Fill record ``h`` (before it is pushed: no other process may see ``h`` yet)."""
        self._tau[h] = tau
        self._seq[h] = seq
        self._target[h] = target
        self._kind[h] = kind
        self._p0[h] = p0
        self._p1[h] = p1

    def read(self, h: int) -> Event:
        """Record ``h`` as an :class:`~seer.events.Event` with payload ``(p0, p1)``."""
        return make_event(float(self._tau[h]), int(self._seq[h]), int(self._target[h]),
                          int(self._kind[h]), (float(self._p0[h]), float(self._p1[h])))

    def close(self) -> None:
        """Drop the numpy views (before closing a shared-memory block)."""
        self.arrays.clear()
        self._tau = self._seq = self._target = self._kind = self._p0 = self._p1 = None


def drain_numeric(worker: LeqWorker, records: NumericRecords, entity: int) -> list[Event]:
    """Take ``entity``'s whole intake and return its events (numeric records), freeing the
    records into ``worker``'s slab. Intake order is newest first; sort by κ if needed.

    Records move with the events: a consumed record belongs to the consumer's slab from then
    on, and the producing process's handle range does not get it back. A producer can
    therefore send at most ``len(handles)`` events over the block's life unless records are
    handed back (e.g. through an :class:`~seer.interprocess.ring.MpmcRing` of free handles).
    """
    h = worker.take(entity)
    events = []
    nxt, free = worker.slab.next, worker.slab.free
    while h != NIL:
        events.append(records.read(h))
        following = nxt[h]
        free(h)
        h = following
    return events
