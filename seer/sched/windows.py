"""Conservative bounded windows: what the per-entity parallel runtimes share.

The scheme is a YAWNS-style conservative window (D. M. Nicol, "The cost of conservative
synchronization in parallel discrete event simulations", JACM 1993): every thread may run
any event below a bound ``B`` that no event still to be created can undercut, then all
threads meet at a barrier and the next bound is computed. See ``docs/design.md``, "The
window scheme", for why it is serial-equivalent.

Pending events live in per-entity heaps (subclasses decide how cross-entity events reach
them). A *calendar* of ``(τ, seq, entity)`` entries (:mod:`seer.sched.calendar`) knows when
each entity next has work, so finding the next window never scans all entities. Each
window has a bound ``B`` in κ order:

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
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numpy as np

from seer.errors import tag_event
from seer.events import DEPTH_SHIFT, Event
from seer.model import Model
from seer.runtime import ActionBatch, run_event
from seer.sched.calendar import Calendar, CalendarBatch, DenseCalendar, prefer_dense
from seer.sched.threaded import ThreadedRuntime

__all__ = ["WindowedRuntime", "window_bound"]

_heappush = heapq.heappush


def window_bound(t_min: float, s_min: int, t_end: float,
                 lookahead: float) -> tuple[float, int]:
    """The κ bound ``B`` of the window whose earliest event is ``(t_min, s_min)``, cut at
    the step end ``t_end`` (see the module docstring)."""
    end = t_min + lookahead
    if end > t_min:
        return (end if end < t_end else t_end, -1)
    return (t_min, ((s_min >> DEPTH_SHIFT) + 1) << DEPTH_SHIFT)


class WindowedRuntime(ThreadedRuntime):
    """Base of the runtimes that keep per-entity heaps and run conservative windows of
    ready entities; see the module docstring. Subclasses implement :meth:`_run_window`."""

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False) -> None:
        n = model.n_entities if isinstance(model, Model) else 0
        heaps: list[list[Event]] = [[] for _ in range(n)]
        # The calendar in use, in a box the closure below reads (the layout can change).
        calendar_box: list[Calendar | DenseCalendar] = [Calendar(n)]  # sorted runs first

        def coordinator_push(ev: Event) -> None:
            e = ev.target
            _heappush(heaps[e], ev)
            calendar_box[0].add(ev.tau, ev.seq, e)

        self._heaps = heaps
        self._calendar_box = calendar_box
        # the last step's windows and the entities they readied (for the layout)
        self._step_windows = self._step_ready = 0
        # A closure, not a bound method: contexts keep it, and a bound method would tie the
        # runtime into a reference cycle that only the garbage collector could break (its
        # threads would outlive a dropped runtime until then).
        self._coordinator_push = coordinator_push
        super().__init__(model, threads=threads, debug=debug,
                         max_events_per_step=max_events_per_step, trace=trace)

    # -- coordinator-side event placement (between windows, single-threaded) ----------------
    def _make_push(self, e: int) -> Callable[[Event], Any]:
        return self._coordinator_push

    def _push_external(self, ev: Event) -> None:
        self._coordinator_push(ev)

    def _push_externals(self, batch: ActionBatch) -> None:
        heaps, push = self._heaps, _heappush
        for ev, e in zip(batch.events(), batch.entities, strict=True):
            push(heaps[e], ev)
        self._calendar.add_many([batch.t0] * len(batch), batch.seqs, batch.entities)

    def _clear_events(self) -> None:
        for heap in self._heaps:
            heap.clear()
        self._calendar.clear()  # its layout stays: the next episode's windows look alike
        self._step_windows = self._step_ready = 0
        for ctx in self._contexts:
            ctx._push = ctx._self_push = self._coordinator_push

    @property
    def pending(self) -> int:
        """Events scheduled for later steps (after a step has completed)."""
        return sum(len(h) for h in self._heaps)

    def _earliest_pending(self) -> tuple[float, int] | None:
        return self._calendar.head()

    # -- the calendar's layout --------------------------------------------------------------
    @property
    def _calendar(self) -> Calendar | DenseCalendar:
        """The calendar in use (one box holds it, read by the coordinator's push too)."""
        return self._calendar_box[0]

    def _pick_calendar(self) -> None:
        """Change the calendar's layout if the last step's windows call for the other one
        (:func:`prefer_dense`), moving its entries across."""
        dense = isinstance(self._calendar, DenseCalendar)
        n = self.spec.n_entities
        if prefer_dense(dense, self._step_ready, self._step_windows, n) != dense:
            new = Calendar(n) if dense else DenseCalendar(n)
            new.extend_sorted(*self._calendar.arrays())
            self._calendar_box[0] = new

    # -- the window loop ------------------------------------------------------------------------
    def _run(self, t_end: float) -> None:
        self._pick_calendar()
        calendar = self._calendar
        lookahead = self.spec.lookahead
        limit = self.events_run + self._event_limit
        windows = readied = 0
        while (head := calendar.head()) is not None:
            t_min, s_min = head
            if t_min >= t_end:
                break
            bound = window_bound(t_min, s_min, t_end, lookahead)
            ready = calendar.pop_ready(bound)
            windows += 1
            readied += len(ready)
            self._run_window(ready, bound)
            self.windows_run += 1
            if self._interrupted:
                raise KeyboardInterrupt
            if self.events_run > limit:
                self._mark_failed()
                raise self._step_limit_error(int(ready[0]), None, f"window at t={t_min!r} "
                                             f"with {len(ready)} ready entities")
        # (a step that raises needs a reset, which zeroes them)
        self._step_windows, self._step_ready = windows, readied

    def _run_window(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        """Run every entity in ``ready`` (distinct ids) on its events ``< bound``, and
        give the calendar each entity's next head and every cross-entity event's entry."""
        raise NotImplementedError

    def _run_entity(self, e: int, bound: tuple[float, int], push: Callable[[Event], Any],
                    cal: CalendarBatch) -> int:
        """Run entity ``e``'s events ``< bound`` from its heap in κ order, with emits going
        to ``push``; add the entity's next head to the calendar batch ``cal``. Returns the
        number of events run. (SEER's worker loop inlines the same steps.)"""
        heap = self._heaps[e]
        ctx = self._contexts[e]
        ctx._push = ctx._self_push = push
        handlers = self._handlers
        pop = heapq.heappop
        limit = self._event_limit
        ran = 0
        while heap and heap[0] < bound:
            ev = pop(heap)
            run_event(handlers, ctx, ev)
            ran += 1
            if ran > limit:
                raise tag_event(self._step_limit_error(e, ev, "in one window"), ev)
        if heap:
            head = heap[0]
            cal.add(head[0], head[1], e)  # its tau and seq
        return ran
