"""Synthetic benchmark workloads: uniform load with a cost knob, and an empty handler.

* :class:`BenchModel`: every event costs :class:`~seer.busywork.BusyWork` µs; no hotspot.
* :class:`EmptyModel`: handlers do nothing but re-schedule themselves, so a step's time is
  the runtime's own overhead per event.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import seer
from seer.busywork import BusyWork
from workloads._args import integer, real

__all__ = ["BenchModel", "EmptyModel"]


class BenchModel(seer.Model):
    """A lean model for runtime benchmarks: per-event cost is the :class:`BusyWork` knob.

    Every step each entity gets an action ("tick"): it reads two neighbours from the
    snapshot, updates its row, and sends ``fanout`` "ping" events to entities chosen by its
    own RNG, with delays of one lookahead (half a step) or more; a ping does the same busy
    work and folds its payload into the row. So a step has about ``n * (1 + fanout)`` events
    in at least two windows, and about ``n * fanout`` cross-entity events. An action's value
    is never read: any action but None makes its entity tick (``sample_actions``: all 1).

    ``wait_us`` > 0 makes every event also *wait* that long (``time.sleep``, which releases
    the CPU), like a handler that calls an external simulator or service: such a model's
    best thread count exceeds the core count.
    """

    kinds = ("tick", "ping")
    action_kind = "tick"
    lookahead = 0.5
    step_length = 1.0
    fields = {"x": ((), np.float64), "hits": ((), np.int64)}  # noqa: RUF012

    def __init__(self, n_entities: int, cost_us: float = 0.0, fanout: int = 1,
                 wait_us: float = 0.0) -> None:
        super().__init__(n_entities)
        shown_cost = cost_us  # the name shows the numbers as given (0 and 0.0 alike)
        b = "BenchModel"
        cost_us = real(b, "cost_us", cost_us, at_least=0)
        fanout = integer(b, "fanout", fanout, minimum=0, maximum=16)
        wait_us = real(b, "wait_us", wait_us, at_least=0, below=1e6)
        waits = f", wait={wait_us:g}us" if wait_us else ""
        self.name = f"BenchModel(n={n_entities}, cost={shown_cost}us, fanout={fanout}{waits})"
        self.busy = BusyWork(cost_us)
        if wait_us:
            self.busy = _Waiting(self.busy, wait_us * 1e-6)
        self.fanout = fanout
        self._all = [1] * n_entities

    def sample_actions(self, step: int) -> list[int]:
        return self._all

    def init_entity(self, ctx: seer.Context) -> None:
        ctx.row.x = ctx.rng.random()

    def on_tick(self, ctx: seer.Context, event: Any) -> None:
        self.busy()
        n = self.n_entities
        e = ctx.id
        snap = ctx.snapshot.x
        ctx.row.x = 0.5 * float(ctx.row.x) + 0.25 * (float(snap[(e + 1) % n])
                                                      + float(snap[e - 1]))
        rng = ctx.rng
        for _ in range(self.fanout):
            target = int(rng.integers(n))
            ctx.emit(target, self.lookahead if rng.random() < 0.8 else 1.25, "ping",
                     float(ctx.row.x))

    def on_ping(self, ctx: seer.Context, event: Any) -> None:
        self.busy()
        ctx.row.x = float(ctx.row.x) * 0.999 + event.payload * 0.001
        ctx.row.hits += 1

    def outputs(self, entity: int, state: seer.StateArrays,
                start: seer.StateArrays) -> tuple[Any, float, bool, bool, dict]:
        return (float(state.x[entity]), float(state.hits[entity] - start.hits[entity]), False,
                False, {})


class EmptyModel(seer.Model):
    """Scheduler overhead: every entity re-schedules itself ``per_step`` times per step and
    its handler does nothing else (no state write, no RNG, no busy work)."""

    kinds = ("tick",)
    fields = {"x": ((), np.int64)}  # noqa: RUF012
    lookahead = 1.0

    def __init__(self, n_entities: int, per_step: int = 10) -> None:
        super().__init__(n_entities)
        per_step = integer("EmptyModel", "per_step", per_step, minimum=1)
        self.name = f"EmptyModel(n={n_entities}, per_step={per_step})"
        self.period = 1.0 / per_step

    def sample_actions(self, step: int) -> None:
        return None

    def init_entity(self, ctx: seer.Context) -> None:
        ctx.emit(ctx.id, 0.0, "tick")

    def on_tick(self, ctx: seer.Context, event: Any) -> None:
        ctx.emit(ctx.id, self.period, 0)

    def outputs(self, entity: int, state: seer.StateArrays,
                start: seer.StateArrays) -> tuple[Any, float, bool, bool, dict]:
        return None, 0.0, False, False, {}


class _Waiting:
    """Busy work followed by a wait that releases the CPU."""

    __slots__ = ("busy", "seconds")

    def __init__(self, busy: BusyWork, seconds: float) -> None:
        self.busy = busy
        self.seconds = seconds

    def __call__(self) -> None:
        self.busy()
        time.sleep(self.seconds)
