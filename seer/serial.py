"""The serial reference runtime: one thread, one global heap in κ order.

It is the oracle every parallel runtime is compared against, and the headline baseline,
so its loop is kept lean: events are tuples compared by ``heapq`` in C, handlers are
looked up by integer kind in a tuple, and nothing is allocated per event except the
events a handler emits.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from seer.errors import IsolationError, StepLimitError, tag_event
from seer.events import Event
from seer.model import Model
from seer.runtime import Runtime, run_event

__all__ = ["SerialRuntime"]


class SerialRuntime(Runtime):
    """Runs every event of a step in global κ = (τ, seq) order on the calling thread.

    ``debug=True`` additionally checks after every handler that no row of another entity
    changed (O(state size) per event: for finding bugs, not for production).
    """

    name = "serial"

    def __init__(self, model: Model, *, debug: bool = False,
                 max_events_per_step: int | None = None) -> None:
        self._heap: list[Event] = []
        super().__init__(model, debug=debug, max_events_per_step=max_events_per_step)

    def _make_push(self, entity: int) -> Callable[[Event], Any]:
        return partial(heapq.heappush, self._heap)

    def _push_external(self, event: Event) -> None:
        heapq.heappush(self._heap, event)

    def _clear_events(self) -> None:
        self._heap.clear()

    @property
    def pending(self) -> int:
        """Number of events scheduled for later steps."""
        return len(self._heap)

    def _run(self, t_end: float) -> None:
        if self.debug:
            self._run_checked(t_end)
            return
        heap = self._heap
        pop = heapq.heappop
        contexts = self._contexts
        handlers = self._handlers
        limit = self._event_limit
        n = 0
        ev = None
        # The dispatch of run_event(), inlined: this loop is the baseline every speed-up is
        # measured against, and a call per event would slow it by a measurable amount.
        try:
            while heap and heap[0][0] < t_end:
                ev = pop(heap)
                ctx = contexts[ev[2]]
                ctx.now = ev[0]
                ctx._seq = ev[1]
                handlers[ev[3]](ctx, ev)
                n += 1
                if n > limit:
                    raise self._step_limit_error(ev[2], ev, f"{n} events so far")
        except StepLimitError:
            self._mark_failed()
            raise
        except BaseException as exc:
            self._raise_failure(tag_event(exc, ev))
        finally:
            self.events_run += n

    def _run_checked(self, t_end: float) -> None:
        """The same loop, plus the isolation check after each handler."""
        heap = self._heap
        shadow = {name: a.copy() for name, a in self._arrays.items()}
        n = 0
        while heap and heap[0][0] < t_end:
            ev = heapq.heappop(heap)
            try:
                run_event(self._handlers, self._contexts[ev[2]], ev)
                self._check_isolation(ev[2], shadow)
            except BaseException as exc:
                self._raise_failure(tag_event(exc, ev))
            self.events_run += 1
            n += 1
            if n > self._event_limit:
                self._mark_failed()
                raise self._step_limit_error(ev[2], ev, f"{n} events so far")

    def _check_isolation(self, entity: int, shadow: dict[str, np.ndarray]) -> None:
        for name, live in self._arrays.items():
            before = shadow[name]
            before[entity] = live[entity]
            # Compare bytes, not values: NaN payloads and -0.0 must count as changes too.
            live_b = live.reshape(live.shape[0], -1).view(np.uint8)
            before_b = before.reshape(before.shape[0], -1).view(np.uint8)
            if not np.array_equal(live_b, before_b):
                changed = np.flatnonzero((live_b != before_b).any(axis=1))
                before[changed] = live[changed]
                raise IsolationError(
                    f"handler wrote to field {name!r} of entity {int(changed[0])} "
                    f"(entities changed: {changed[:8].tolist()}); a handler may write only "
                    "its own entity's rows and must emit an event to affect another",
                    model=self.spec.name, entity=entity, kind=None, time=self._contexts[
                        entity].now, field=name, other_entities=changed.tolist())
