"""A step always ends: every runtime stops a runaway step by default (issue 42, item 4).

A self-loop whose time barely advances never reaches the step end; the default
``max_events_per_step`` (:func:`seer.runtime.default_event_limit`) turns it into a
:class:`~seer.StepLimitError` that names the model, the entity, the kind and the time, and
says how to raise the limit. Every test has a timeout, so a broken guard fails instead of
hanging the run.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import seer
import seer.runtime
from seer.runtime import DEFAULT_EVENTS_PER_ENTITY, DEFAULT_MIN_EVENTS, default_event_limit

#: Every runtime that ships (registered ones from other tests are not included).
KINDS = ["serial", "seer", "static", "static-block", "seer-ms", "global", "executor",
         "optimistic"]
#: Every kind at 2 threads in the fast tier (a default-limit run is about a second each);
#: at 1 thread in the slow tier.
RUNS = [("serial", None), pytest.param("serial", 1, marks=pytest.mark.slow)] + [
    (k, t) if t == 2 else pytest.param(k, t, marks=pytest.mark.slow)
    for k in KINDS[1:] for t in (1, 2)]


def build(model, kind, threads, **options):
    return seer.make_runtime(model, kind, threads=threads, **options)


class Flock(seer.Model):
    """README's "A model in 40 lines"."""

    kinds = ("move", "warn")
    action_kind = "move"
    lookahead = 0.5
    step_length = 1.0
    fields = {"pos": ((), np.float64), "warned": ((), np.int64)}  # noqa: RUF012

    def init_entity(self, ctx):
        ctx.row.pos = ctx.rng.uniform(0.0, 100.0)

    def on_move(self, ctx, event):
        ctx.row.pos = (ctx.row.pos + event.payload + ctx.rng.normal(0, 0.1)) % 100.0
        right = (ctx.id + 1) % self.n_entities
        if abs(ctx.snapshot.pos[right] - ctx.row.pos) < 1.0:
            ctx.emit(right, self.lookahead, "warn", ctx.id)

    def on_warn(self, ctx, event):
        ctx.row.warned += 1

    def outputs(self, entity, state, start):
        obs = np.array([state.pos[entity], state.warned[entity]], dtype=np.float32)
        reward = -float(state.warned[entity] - start.warned[entity])
        return obs, reward, False, False, {}


class RunawayFlock(Flock):
    """The Flock whose "warn" handler re-emits itself 1e-9 later, for ever: bird 7 warns
    itself a quarter into every step, and from then on its step never ends."""

    runaway = True

    def on_move(self, ctx, event):
        super().on_move(ctx, event)
        if ctx.id == 7:
            ctx.emit(ctx.id, 0.25, "warn", ctx.id)

    def on_warn(self, ctx, event):
        ctx.row.warned += 1
        if self.runaway:
            ctx.emit(ctx.id, 1e-9, "warn", ctx.id)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("kind", "threads"), RUNS)
def test_a_self_loop_stops_by_default_on_every_runtime(kind, threads):
    model = RunawayFlock(50)
    rt = build(model, kind, threads)
    try:
        assert rt.max_events_per_step == DEFAULT_MIN_EVENTS == 1_000_000
        rt.reset(42)
        start = time.perf_counter()
        with pytest.raises(seer.StepLimitError) as info:
            rt.step([1.0] * 50)
        took = time.perf_counter() - start
        err = info.value
        assert (err.model, err.step, err.entity, err.kind) == ("RunawayFlock", 0, 7, "warn")
        assert 0.25 < err.time < 0.26  # stuck a quarter into the step
        text = str(err)
        assert "the step ran more than 1000000 events" in text
        assert "max_events_per_step=1000000, the default for 50 entities" in text
        assert "entity 7 was handling a 'warn' event emitted by itself at t=0.25" in text
        assert "model time had advanced only 0.25" in text and "[0.0, 1.0)" in text
        assert f"make_runtime(model, {kind!r}, max_events_per_step=N) or " \
               f"{type(rt).__name__}(model, max_events_per_step=N)" in text
        assert "(max_events_per_step=0: no limit)" in text
        assert "[model 'RunawayFlock', step 0, entity 7, while handling a 'warn' event" in text
        assert took < 60, f"{kind} took {took:.1f} s to stop the runaway step"
        with pytest.raises(seer.RuntimeStateError, match="previous step failed"):
            rt.step([1.0] * 50)
        model.runaway = False  # usable again after reset, with serial's results
        rt.reset(42)
        ref = seer.SerialRuntime(model)
        ref.reset(42)
        for _ in range(3):
            rt.step([1.0] * 50)
            ref.step([1.0] * 50)
        assert rt.state.warned.tobytes() == ref.state.warned.tobytes()
        assert rt.state.pos.tobytes() == ref.state.pos.tobytes()
    finally:
        rt.close()


class PingPong(seer.Model):
    """Two entities pass a ball 1e-9 apart with lookahead 0: every window holds one
    event, so the windowed runtimes' coordinator, not a worker, counts the step over."""

    kinds = ("ball",)
    fields = {"hits": ((), np.int64)}  # noqa: RUF012
    lookahead = 0.0

    def init_entity(self, ctx):
        if ctx.id == 0:
            ctx.emit(0, 0.5, "ball")

    def on_ball(self, ctx, event):
        ctx.row.hits += 1
        ctx.emit(1 - ctx.id, 1e-9, "ball")

    def outputs(self, entity, state, start):
        return None, 0.0, False, False, {}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", KINDS)
def test_a_loop_across_entities_is_named_too(kind):
    rt = build(PingPong(2), kind, None, max_events_per_step=300)
    try:
        rt.reset(0)
        with pytest.raises(seer.StepLimitError) as info:
            rt.step()
        err = info.value
        text = str(err)
        assert err.step == 0 and err.entity in (0, 1) and 0.5 <= err.time < 0.51
        assert "the step ran more than 300 events" in text
        assert "(the limit: max_events_per_step=300)" in text
        # a worker names the event it ran; a coordinator the entity that emitted the most
        assert ("was handling a 'ball' event emitted by entity " in text
                or f"entity {err.entity} emitted the most events this episode" in text), text
        assert f"make_runtime(model, {kind!r}, max_events_per_step=N)" in text
        rt.reset(0)  # usable again
    finally:
        rt.close()


class Burst(seer.Model):
    """Entity 0 runs ``events`` self-events 1e-6 apart in step 0, then stops: a step that
    is long but ends."""

    kinds = ("tick",)
    fields = {"n": ((), np.int64)}  # noqa: RUF012
    lookahead = 0.5

    def __init__(self, n: int, events: int) -> None:
        super().__init__(n)
        self.events = events

    def init_entity(self, ctx):
        ctx.emit(ctx.id, 0.0, "tick")

    def on_tick(self, ctx, event):
        ctx.row.n += 1
        if ctx.id == 0 and ctx.row.n < self.events:
            ctx.emit(0, 1e-6, "tick")

    def outputs(self, entity, state, start):
        return None, 0.0, False, False, {}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", KINDS)
def test_none_is_the_default_and_zero_turns_the_guard_off(kind, monkeypatch):
    monkeypatch.setattr(seer.limits, "DEFAULT_MIN_EVENTS", 100)
    monkeypatch.setattr(seer.limits, "DEFAULT_EVENTS_PER_ENTITY", 10)
    model = Burst(4, events=500)
    for limit, expected in ((None, 100), (0, 0), (1000, 1000)):
        with build(model, kind, None, max_events_per_step=limit) as rt:
            assert rt.max_events_per_step == expected
            rt.reset(0)
            if limit is None:
                with pytest.raises(seer.StepLimitError, match=r"max_events_per_step=100, the "
                                   r"default for 4 entities: 10 per entity, at least 100"):
                    rt.step()
            else:
                rt.step()
                assert rt.state.n.tolist() == [500, 1, 1, 1]


def test_the_default_scales_with_the_entity_count():
    assert default_event_limit(1) == DEFAULT_MIN_EVENTS
    assert default_event_limit(100) == DEFAULT_MIN_EVENTS
    assert default_event_limit(1000) == 1000 * DEFAULT_EVENTS_PER_ENTITY == 10_000_000
    assert seer.SerialRuntime(Flock(1000)).max_events_per_step == 10_000_000
    assert seer.SerialRuntime(Flock(3), max_events_per_step=7).max_events_per_step == 7
