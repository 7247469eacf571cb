"""Conservative bounded windows: what the per-entity parallel runtimes share.

The scheme is a YAWNS-style conservative window (D. M. Nicol, "The cost of conservative
synchronization in parallel discrete event simulations", JACM 1993): every thread may run
any event below a bound ``B`` that no event still to be created can undercut, then all
threads meet at a barrier and the next bound is computed. See ``docs/design.md``, "The
window scheme", for why it is serial-equivalent.

Pending events live in per-entity heaps (:class:`EntityEvents`; a runtime decides how
cross-entity events reach them). A *calendar* of ``(τ, seq, entity)`` entries
(:mod:`seer.sched.calendar`) knows when each entity next has work, so finding the next
window never scans all entities. Each window has a bound ``B`` in κ order:

* lookahead ``L > 0`` (and ``t_min + L > t_min`` in floating point):
  ``B = (min(t_min + L, τ_{t+1}), -1)``, i.e. every event with ``τ < t_min + L``. A
  cross-entity event emitted in the window arrives at ``τ + delay >= t_min + L``: never
  inside it (floating-point addition is monotonic, so this holds for the computed sums too).
* otherwise (``L == 0``): a *round* of the events at ``τ == t_min`` with the smallest
  zero-delay depth ``d``: ``B = (t_min, (d + 1) << 57)``. A child at the same time has depth
  ``d + 1`` (see :mod:`seer.events`), so it lands in a later round.

Every entity with an event ``< B`` is *ready*; it runs all its events ``< B`` in κ order,
including self-events it creates inside the window. No event ``< B`` can reach an entity
from another one during the window, so each entity sees exactly the event sequence it sees
in the serial runtime, and handlers depend only on that sequence, their own rows, their own
RNG and the step-start snapshot: the results are bit-identical.

Calendar entries are added for every cross-entity event and for each entity's remaining
head after it ran; duplicates are harmless (a window takes each entity once) and no entry
is ever stale, because every entry added after a window has ``κ >= B``. Every readied
entity is run and lists its new head, so a calendar may forget a readied entity's other
entries: the dense layout (:class:`~seer.sched.calendar.DenseCalendar`) keeps one key per
entity. A runtime starts with the sorted runs and, at each step start, takes the layout
that suits how many entities the last step's windows readied
(:func:`~seer.sched.calendar.prefer_dense`); a reset keeps the layout.

:meth:`EntityEvents.windows` yields a step's windows; the runtime runs each
(``SeerRuntime._run``; the ``executor`` peer composes the same pieces).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from seer.actions import ActionBatch
from seer.events import DEPTH_SHIFT, Event
from seer.sched.calendar import Calendar, DenseCalendar, prefer_dense

__all__ = ["EntityEvents", "window_bound"]

_heappush = heapq.heappush


def window_bound(t_min: float, s_min: int, t_end: float,
                 lookahead: float) -> tuple[float, int]:
    """The κ bound ``B`` of the window whose earliest event is ``(t_min, s_min)``, cut at
    the step end ``t_end`` (see the module docstring)."""
    end = t_min + lookahead
    if end > t_min:
        return (end if end < t_end else t_end, -1)
    return (t_min, ((s_min >> DEPTH_SHIFT) + 1) << DEPTH_SHIFT)


class EntityEvents:
    """A runtime's pending events by entity: ``heaps[e]`` holds entity ``e``'s events in
    κ order, and the calendar says when each entity next has work.

    Only the coordinator (the caller's thread, between windows) uses :attr:`push`,
    :meth:`push_batch`, :meth:`clear` and :meth:`windows`; inside a window each ready
    entity's heap belongs to the one thread that runs it.

    ``push`` is a closure over the heaps and the calendar's box, not a bound method:
    contexts keep it, and a bound method of the runtime would tie the runtime into a
    reference cycle that only the garbage collector could break (its threads would outlive
    a dropped runtime until then)."""

    __slots__ = ("box", "heaps", "push", "step_ready", "step_windows")

    def __init__(self, n: int) -> None:
        heaps: list[list[Event]] = [[] for _ in range(n)]
        # The calendar in use, in a box the closure below reads (the layout can change).
        box: list[Calendar | DenseCalendar] = [Calendar(n)]  # sorted runs first

        def coordinator_push(ev: Event) -> None:
            e = ev.target
            _heappush(heaps[e], ev)
            box[0].add(ev.tau, ev.seq, e)

        self.heaps = heaps
        self.box = box
        self.push = coordinator_push
        # this step's windows so far and the entities they readied (for the layout)
        self.step_windows = self.step_ready = 0

    @property
    def calendar(self) -> Calendar | DenseCalendar:
        """The calendar in use (one box holds it, read by :attr:`push` and the workers)."""
        return self.box[0]

    def push_batch(self, batch: ActionBatch) -> None:
        """Queue a step's action events."""
        heaps, push = self.heaps, _heappush
        for ev, e in zip(batch.events(), batch.entities, strict=True):
            push(heaps[e], ev)
        self.box[0].add_many([batch.t0] * len(batch), batch.seqs, batch.entities)

    def clear(self) -> None:
        """Drop every pending event; the calendar keeps its layout (the next episode's
        windows look alike)."""
        for heap in self.heaps:
            heap.clear()
        self.box[0].clear()
        self.step_windows = self.step_ready = 0

    def count(self) -> int:
        """Events in the heaps."""
        return sum(len(h) for h in self.heaps)

    def head(self) -> tuple[float, int] | None:
        """κ of the earliest pending event, or None."""
        return self.box[0].head()

    def windows(self, t_end: float,
                lookahead: float) -> Iterator[tuple[float, np.ndarray, tuple[float, int]]]:
        """The step's windows up to ``t_end``: ``(t_min, ready, bound)`` for each: its
        earliest event's τ, the ready entities (distinct ids) popped from the calendar,
        and its bound. The caller runs each window
        before asking for the next: the next window depends on what it added. The
        calendar's layout is picked first, from the last step's windows."""
        self._pick_layout()
        calendar = self.box[0]
        self.step_windows = self.step_ready = 0
        while (head := calendar.head()) is not None:
            t_min, s_min = head
            if t_min >= t_end:
                return
            bound = window_bound(t_min, s_min, t_end, lookahead)
            ready = calendar.pop_ready(bound)
            self.step_windows += 1
            self.step_ready += len(ready)
            yield t_min, ready, bound

    def _pick_layout(self) -> None:
        """Change the calendar's layout if the last step's windows call for the other one
        (:func:`prefer_dense`), moving its entries across."""
        calendar = self.box[0]
        dense = isinstance(calendar, DenseCalendar)
        n = len(self.heaps)
        if prefer_dense(dense, self.step_ready, self.step_windows, n) != dense:
            new = Calendar(n) if dense else DenseCalendar(n)
            new.extend_sorted(*calendar.arrays())
            self.box[0] = new
