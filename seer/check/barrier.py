"""A barrier for a check's workers under the model: :class:`Barrier`.

Two scheduling points a wait: arriving (arrivals commute) and passing (enabled once all
parties arrived). The last arrival sets every arriver's vector clock to their join, so
passing orders what each did before the barrier before what any does after it. A Barrier is made by
the check, not by the session, so it finds the calling thread's execution itself.
"""

from __future__ import annotations

import threading

from seer.check.execution import Op, _active_session

__all__ = ["Barrier"]


class Barrier:
    """A barrier for the workers of a check (``parties`` of them), modelled: waiting is
    a scheduling point, a thread is blocked until all have arrived, and passing it
    orders everything each thread did before it before everything any thread does after
    (as the runtime's window barrier does). Outside an execution it is a
    ``threading.Barrier``."""

    def __init__(self, parties: int) -> None:
        if parties < 1:
            raise ValueError(f"a barrier needs at least one party, got {parties}")
        self.parties = parties
        self._arrived: list[list[int]] = [[]]
        self._plain = threading.Barrier(parties)

    def wait(self) -> None:
        session = _active_session()
        ex, t = session.bound() if session is not None else (None, -1)
        if ex is None:
            self._plain.wait()
            return
        gen = len(self._arrived) - 1
        # Arrivals commute (DPOR may treat them as independent reads); passing depends on
        # every arrival.
        ex.point(t, Op("barrier", id(self), "barrier", False))
        arrived = self._arrived[gen]
        arrived.append(t)
        ex.note(t, detail=f"arrives ({len(arrived)} of {self.parties})")
        if len(arrived) == self.parties:
            ex.memory.barrier(arrived)
            self._arrived.append([])
        ex.point(t, Op("pass", id(self), "barrier", True,
                       ready=lambda: len(arrived) >= self.parties))
        ex.note(t, detail="passes")
