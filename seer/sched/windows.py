"""Conservative windows (DESIGN.md section 4): what every parallel runtime here shares.

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
is ever stale, because every entry added after a window has ``κ >= B``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numpy as np

from seer.events import DEPTH_SHIFT, Event
from seer.model import Model
from seer.runtime import Runtime
from seer.sched.calendar import Calendar, CalendarBatch
from seer.sched.interrupts import deferred_interrupt

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


class WindowedRuntime(Runtime):
    """Base of the runtimes that execute conservative windows; see the module docstring.

    Subclasses implement :meth:`_run_window` (run every ready entity's events ``< bound``)
    and may override :meth:`_after_window` to collect calendar entries and errors.
    """

    def __init__(self, model: Model, *, threads: int = 1, debug: bool = False) -> None:
        from seer.errors import ModelError
        from seer.platform import warn_if_gil_enabled

        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ModelError(f"threads must be an int >= 1, got {threads!r}")
        if debug:
            raise ModelError(f"debug mode (isolation checks) is only available in "
                             f"SerialRuntime; {type(self).__name__} would race on them")
        self._threads = threads
        n = model.n_entities if isinstance(model, Model) else 0
        self._heaps: list[list[Event]] = [[] for _ in range(n)]
        self._calendar = Calendar(n)
        self._interrupted = False
        self.windows_run = 0
        super().__init__(model, debug=False)
        warn_if_gil_enabled(threads)

    @property
    def threads(self) -> int:
        return self._threads

    # -- coordinator-side event placement (between windows, single-threaded) ----------------
    def _make_push(self, entity: int) -> Callable[[Event], Any]:
        return self._coordinator_push

    def _coordinator_push(self, ev: Event) -> None:
        _heappush(self._heaps[ev[2]], ev)
        self._calendar.add(ev[0], ev[1], ev[2])

    def _push_external(self, event: Event) -> None:
        self._coordinator_push(event)

    def _clear_events(self) -> None:
        for heap in self._heaps:
            heap.clear()
        self._calendar.clear()
        for ctx in self._contexts:
            ctx._push = self._coordinator_push
        self.windows_run = 0

    @property
    def pending(self) -> int:
        """Events scheduled for later steps (after a step has completed)."""
        return sum(len(h) for h in self._heaps)

    # -- the window loop ------------------------------------------------------------------------
    def step(self, actions: Any = None) -> Any:
        """As :meth:`Runtime.step`; Ctrl-C stops the workers and then raises
        KeyboardInterrupt (see :mod:`seer.sched.interrupts`)."""
        self._interrupted = False
        try:
            with deferred_interrupt(self._on_interrupt):
                return super().step(actions)
        except KeyboardInterrupt:
            self._status = "failed"  # even if the step had finished: reset before going on
            raise

    def reset(self, seed: Any = None) -> Any:
        """As :meth:`Runtime.reset`, with Ctrl-C deferred like in :meth:`step`."""
        self._interrupted = False
        try:
            with deferred_interrupt(self._on_interrupt):
                return super().reset(seed)
        except KeyboardInterrupt:
            self._status = "failed"
            raise

    def _on_interrupt(self) -> None:
        self._interrupted = True
        self._abort_window()

    def _abort_window(self) -> None:
        """Ask the threads running the current window to stop soon: after their current
        chunk of entities (SEER) or their current few entities (static)."""

    def _run(self, t_end: float) -> None:
        calendar = self._calendar
        lookahead = self.spec.lookahead
        while (head := calendar.head()) is not None and head[0] < t_end:
            bound = window_bound(head[0], head[1], t_end, lookahead)
            self._run_window(calendar.pop_ready(bound), bound)
            self.windows_run += 1
            if self._interrupted:
                raise KeyboardInterrupt

    def _run_window(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        """Run every entity in ``ready`` (distinct ids) on its events ``< bound``."""
        raise NotImplementedError

    # -- running one entity (the executor peer; SEER's worker loop inlines the same steps) ----
    def _run_entity(self, e: int, bound: tuple[float, int], push: Callable[[Event], Any],
                    calendar_out: CalendarBatch) -> int:
        """Run entity ``e``'s events ``< bound`` from its heap in κ order, with emits going
        to ``push``; add the entity's next head to ``calendar_out``. Returns the number
        of events run. An exception leaves with the event attached as ``__seer_event__``
        (see :meth:`_raise_failure`)."""
        heap = self._heaps[e]
        ctx = self._contexts[e]
        ctx._push = push
        handlers = self._handlers
        pop = heapq.heappop
        n = 0
        while heap and heap[0] < bound:
            ev = pop(heap)
            ctx.now = ev[0]
            ctx._seq = ev[1]
            try:
                handlers[ev[3]](ctx, ev)
            except BaseException as exc:
                exc.__seer_event__ = ev  # type: ignore[attr-defined]
                raise
            n += 1
        if heap:
            head = heap[0]
            calendar_out.t.append(head[0])
            calendar_out.s.append(head[1])
            calendar_out.e.append(e)
        return n

    def _raise_failure(self, exc: BaseException) -> None:
        """Turn an exception from a window into the runtime's error and raise it."""
        ev = getattr(exc, "__seer_event__", None)
        if ev is None:
            if isinstance(exc, Exception):
                self._status = "failed"
            raise exc
        err = self._handler_failed(exc, ev[2], self._kind_name(ev[3]), ev)
        if err is exc:
            raise exc
        raise err from exc
