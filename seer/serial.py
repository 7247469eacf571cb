"""The serial reference runtime: one thread, one global heap in κ order.

It is the oracle every parallel runtime is compared against, and the headline baseline,
so its loop is kept lean: events are tuples compared by ``heapq`` in C, handlers are
looked up by integer kind in a tuple, and nothing is allocated per event except the
events a handler emits.
"""

from __future__ import annotations

import heapq
import pickle
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from seer.errors import ContractError, IsolationError, StepLimitError, tag_event
from seer.events import Event, seq_origin
from seer.model import Model
from seer.runtime import Runtime, run_event

__all__ = ["SerialRuntime"]


class SerialRuntime(Runtime):
    """Runs every event of a step in global κ = (τ, seq) order on the calling thread.

    ``debug=True`` additionally checks, for finding bugs (O(state size) per event, not for
    production), that after every handler no row of another entity changed, and that no
    payload changed between its emit and its delivery (the sender kept and mutated it) or
    while its receiver handled it.
    """

    name = "serial"

    def __init__(self, model: Model, *, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False) -> None:
        self._heap: list[Event] = []
        self._payload_copies: dict[int, bytes] = {}  # debug: seq -> payload at emit
        super().__init__(model, debug=debug, max_events_per_step=max_events_per_step,
                         trace=trace)
        if self.trace is not None:
            self.trace.ensure(1, [threading.current_thread().name])

    def _make_push(self, e: int) -> Callable[[Event], Any]:
        if self.debug:
            return self._push_recording_payload
        return partial(heapq.heappush, self._heap)

    def _push_recording_payload(self, ev: Event) -> None:
        frozen = _frozen(ev.payload)
        if frozen is not None:
            self._payload_copies[ev.seq] = frozen
        heapq.heappush(self._heap, ev)

    def _push_external(self, ev: Event) -> None:
        heapq.heappush(self._heap, ev)

    def _clear_events(self) -> None:
        self._heap.clear()
        self._payload_copies.clear()

    @property
    def pending(self) -> int:
        """Number of events scheduled for later steps."""
        return len(self._heap)

    def _earliest_pending(self) -> tuple[float, int] | None:
        return self._heap[0][:2] if self._heap else None

    def _run(self, t_end: float) -> None:
        if self.debug or self.trace is not None:
            self._run_checked(t_end)
            return
        heap = self._heap
        pop = heapq.heappop
        contexts = self._contexts
        handlers = self._handlers
        limit = self._event_limit
        ran = 0  # events run in this step
        ev = None
        # The dispatch of run_event(), inlined: this loop is the baseline every speed-up is
        # measured against, and a call per event would slow it by a measurable amount.
        # Events are read by position (seer.events, "Layout": a name costs more here).
        try:
            while heap and heap[0][0] < t_end:  # the head's tau
                ev = pop(heap)
                ctx = contexts[ev[2]]  # target
                ctx.now = ev[0]  # tau
                ctx._seq = ev[1]  # seq
                handlers[ev[3]](ctx, ev)  # kind
                ran += 1
                if ran > limit:
                    raise self._step_limit_error(ev.target, ev, f"{ran} events so far")
        except StepLimitError:
            self._mark_failed()
            raise
        except BaseException as exc:
            self._raise_failure(tag_event(exc, ev))
        finally:
            self.events_run += ran

    def _run_checked(self, t_end: float) -> None:
        """The same loop, plus (debug) the isolation and payload checks after each
        handler, and (trace) a ``run`` slice per stretch of one entity's events. A twin
        of :meth:`_run`, not checks inside it: each would cost the baseline loop a test
        per event, and this one calls :func:`run_event` per event."""
        heap = self._heap
        debug = self.debug
        shadow = {name: a.copy() for name, a in self._arrays.items()} if debug else {}
        run = _TracedRun(self.trace) if self.trace is not None else None
        ran = 0
        try:
            while heap and heap[0].tau < t_end:
                ev = heapq.heappop(heap)
                if run is not None:
                    run.event(ev)
                try:
                    if debug:
                        frozen = self._payload_copies.pop(ev.seq, None)
                        self._check_payload(ev, frozen, "between its emit and its delivery "
                                            "(the sender kept a reference and changed it)")
                    run_event(self._handlers, self._contexts[ev.target], ev)
                    if debug:
                        self._check_isolation(ev.target, shadow)
                        self._check_payload(ev, frozen, "by its receiver's handler")
                except BaseException as exc:
                    self._raise_failure(tag_event(exc, ev))
                self.events_run += 1
                ran += 1
                if ran > self._event_limit:
                    self._mark_failed()
                    raise self._step_limit_error(ev.target, ev, f"{ran} events so far")
        finally:
            if run is not None:
                run.close()

    def _check_payload(self, ev: Event, frozen: bytes | None, when: str) -> None:
        if frozen is not None and _frozen(ev.payload) != frozen:
            raise ContractError(
                f"the payload of this {self._kind_name(ev.kind)!r} event (emitted by entity "
                f"{seq_origin(ev.seq)}) was mutated {when}; payloads are shared, not copied: "
                "emit a fresh object and never change one after emitting or receiving it",
                model=self.spec.name, entity=ev.target, kind=None, time=ev.tau)

    def _check_isolation(self, e: int, shadow: dict[str, np.ndarray]) -> None:
        for name, live in self._arrays.items():
            before = shadow[name]
            before[e] = live[e]
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
                    model=self.spec.name, entity=e, kind=None, time=self._contexts[e].now,
                    field=name, other_entities=changed.tolist())


class _TracedRun:
    """Coalesces consecutive events of one entity into one ``run`` slice (serial)."""

    __slots__ = ("count", "entity", "first", "last", "start", "trace")

    def __init__(self, trace: Any) -> None:
        self.trace = trace
        self.entity = -1
        self.count = 0

    def event(self, ev: Event) -> None:
        if ev.target != self.entity:
            self.close()
            self.entity, self.first, self.count = ev.target, ev[:2], 0
            self.start = time.perf_counter_ns()
        self.count += 1
        self.last = ev[:2]  # its key

    def close(self) -> None:
        if self.count:
            self.trace.slice(0, "run", self.start, time.perf_counter_ns(), entity=self.entity,
                             events=self.count, first=self.first, last=self.last)
        self.entity, self.count = -1, 0


_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes)


def _frozen(payload: Any) -> bytes | None:
    """A byte image of ``payload`` to detect later mutation (None: immutable or unpicklable,
    nothing to check)."""
    if payload.__class__ in _IMMUTABLE:
        return None
    try:
        return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an object pickle cannot copy: not checked
        return None
