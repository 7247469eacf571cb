"""The optimistic (Time Warp) runtime: bit-identical to serial whatever the rollbacks;
handler failures on undone paths never surface, committed ones are serial's; no thread
leaks; usable after a failure.

Rollbacks depend on timing. The tests that must see them force them with a handshake: a
handler on thread 0 waits (outside the model's state) until another thread has run ahead
in model time, then sends it a straggler.

Misuse and faults that every parallel runtime must survive (a second operation during a
step, a failed resize, Ctrl-C on a handler that never returns, bad actions and seeds) are
tested for this runtime with the others, in ``test_faults.py``.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seer
from seer.busywork import BusyWork
from seer.testing import (
    RandomModel,
    assert_equivalent,
    assert_outputs_identical,
    assert_states_identical,
    random_models,
)
from tests.helpers import examples
from tests.sched.test_faults import _first_failure
from tests.sched.test_stress import Exploding

THREADS = [1, 2, 3, 4, 5, 6, 7, 8]
WAIT = 20.0


def optimistic(threads, **options):
    return lambda model: seer.make_runtime(model, "optimistic", threads=threads, **options)


# -- equivalence on random models ----------------------------------------------------------
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=random_models(30), threads=st.sampled_from(THREADS),
       seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 3),
       checkpoint_every=st.sampled_from([1, 1, 3]))
def test_random_models_match_serial(model, threads, seed, steps, checkpoint_every):
    assert_equivalent(optimistic(threads, checkpoint_every=checkpoint_every, rebind_every=1),
                      model, seeds=[seed], steps=steps, min_events=0)


CORNERS = {
    "lookahead-0-dense-same-time": dict(lookahead=0.0, p_zero_delay=0.8, fanout=3, ttl=4),
    "heavy-fan-in": dict(p_fan_in=0.9, fanout=3),
    "long-lookahead": dict(lookahead=2.5, fanout=2),
    "no-emits": dict(fanout=0),
}


# as in test_equivalence.py: the fast tier runs the corners at 2 threads only
@pytest.mark.parametrize("threads", [t if t == 2 else pytest.param(t, marks=pytest.mark.slow)
                                     for t in THREADS])
@pytest.mark.parametrize("corner", sorted(CORNERS))
def test_corner_models_match_serial(threads, corner):
    model = RandomModel(40, seed=len(corner), **CORNERS[corner])
    assert_equivalent(optimistic(threads), model, seeds=[1], steps=3)


@pytest.mark.parametrize("checkpoint_every", [2, 5])
@pytest.mark.parametrize("threads", [2, 4])
def test_periodic_checkpoints_coast_forward_to_the_same_bits(checkpoint_every, threads):
    model = RandomModel(40, seed=11, lookahead=0.0, fanout=3, ttl=4, p_fan_in=0.4)
    assert_equivalent(optimistic(threads, checkpoint_every=checkpoint_every), model,
                      seeds=[3, 4], steps=3)


class SlowBlock(RandomModel):
    """Thread 0's entities (the first id block) are much slower, so the other threads run
    ahead and then receive stragglers from them: deep and cascading rollbacks."""

    def __init__(self, n: int, threads: int, **kw) -> None:
        super().__init__(n, **kw)
        self.slow_below = n // threads
        self.slow = BusyWork(150.0)

    def _fold(self, ctx, event, x):
        if ctx.id < self.slow_below:
            self.slow()
        super()._fold(ctx, event, x)


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_a_slow_thread_forces_cascading_rollbacks_and_results_stay_identical(threads):
    model = SlowBlock(24, threads, seed=5, lookahead=0.05, fanout=3, ttl=4, p_fan_in=0.3,
                      silent_fraction=0.0, action_fraction=1.0)
    ref = seer.SerialRuntime(model)
    rt = seer.make_runtime(model, "optimistic", threads=threads, rebind_every=0)
    try:
        ref.reset(2)
        rt.reset(2)
        for t in range(3):
            a = ref.step(model.sample_actions(t))
            b = rt.step(model.sample_actions(t))
            assert_states_identical(ref, rt, f"step {t}: ")
            assert_outputs_identical(a, b, f"step {t}: ")
        s = rt.stats
        # the emit counters were restored with every rollback: same counts as serial
        assert {k: s[k] for k in ("events_run", "emitted", "cross_entity")} == ref.stats
        assert s["events_processed"] - s["rolled_back"] == s["events_run"]
        assert s["rollbacks"] > 0  # 150 µs per event on thread 0 against ~10 elsewhere
    finally:
        rt.close()


# -- forced stragglers: a handshake between threads -----------------------------------------
class Straggle(seer.Model):
    """Entity ``n-1`` (the last thread's block) ticks every 0.1 and echoes each tick along
    a chain that crosses threads (``n-1 -> 1 -> n-2 -> 2 -> ...``). Entity 0 (thread 0)
    pings ``n-1`` at ``t + 0.15`` from its event at ``t + 0.05``; with ``handshake`` on it
    first waits until ``n-1`` has run a tick at ``t + 0.5`` or later, so the ping is a
    straggler that undoes five ticks and, through the echoes, events on other threads.

    ``fail`` makes ``n-1``'s tick at ``t + 0.5`` of step ``fail_step`` raise: ``"unpinged"``
    only when the ping has not arrived (only on the speculative path; never in serial),
    ``"pinged"`` only when it has (only on the committed path, i.e. on re-execution)."""

    kinds = ("tick", "ping", "echo", "go")
    fields = {"ticks": ((), np.int64), "pinged_at": ((), np.float64),  # noqa: RUF012
              "acc": ((), np.float64), "trail": ((4,), np.float64)}
    lookahead = 0.1

    def __init__(self, n: int = 8) -> None:
        super().__init__(n)
        self.handshake = False
        self.fail: str | None = None
        self.fail_step = 1
        self.seen = -1.0  # written by entity n-1's handler: how far it has run (test only)

    def init_entity(self, ctx):
        ctx.row.pinged_at = -1.0
        if ctx.id == 0:
            ctx.emit(0, 0.05, "go")
        if ctx.id == self.n_entities - 1:
            ctx.emit(ctx.id, 0.2, "tick")

    def _mix(self, ctx, x):
        row = ctx.row
        row.acc = float(row.acc) * 0.9 + x + ctx.rng.random()
        row.trail = np.roll(row.trail, 1) + x

    def on_go(self, ctx, event):
        if self.handshake:
            deadline = time.monotonic() + 2.0
            while self.seen < ctx.now + 0.45 and time.monotonic() < deadline:
                time.sleep(0.0005)
        self._mix(ctx, 1.0)
        ctx.emit(self.n_entities - 1, 0.1, "ping", ctx.now)
        ctx.emit(0, 1.0, "go")

    def on_ping(self, ctx, event):
        ctx.row.pinged_at = ctx.now
        self._mix(ctx, event.payload)

    def on_tick(self, ctx, event):
        row = ctx.row
        now = ctx.now
        self.seen = max(self.seen, now)
        step = int(now)
        if self.fail is not None and step == self.fail_step and now - step >= 0.45:
            pinged = int(row.pinged_at) == step and row.pinged_at >= 0
            if (self.fail == "pinged") == pinged:
                raise ZeroDivisionError(f"tick at {now} ({self.fail})")
        row.ticks += 1
        self._mix(ctx, float(row.pinged_at))
        ctx.emit(ctx.id, 0.1, "tick")
        ctx.emit(1, 0.1, "echo", (3, float(row.acc)))

    def on_echo(self, ctx, event):
        hops, x = event.payload
        self._mix(ctx, x)
        if hops:
            n = self.n_entities
            nxt = n - 1 - ctx.id if ctx.id < n // 2 else n - ctx.id
            ctx.emit(nxt, 0.1, "echo", (hops - 1, float(ctx.row.acc)))

    def outputs(self, entity, state, start):
        return (float(state.acc[entity]), int(state.ticks[entity])), 0.0, False, False, {}


def _serial_run(steps, fail=None, fail_step=1):
    model = Straggle()
    model.fail, model.fail_step = fail, fail_step
    ref = seer.SerialRuntime(model)
    ref.reset(0)
    outs = []
    try:
        for _ in range(steps):
            outs.append(ref.step())
    except seer.HandlerError as exc:
        return ref, outs, exc
    return ref, outs, None


@pytest.mark.timeout(120)
@pytest.mark.parametrize("threads", [2, 4])
@pytest.mark.parametrize("checkpoint_every", [1, 3])
def test_forced_stragglers_roll_back_across_threads(threads, checkpoint_every):
    ref, ref_outs, _ = _serial_run(3)
    model = Straggle()
    model.handshake = True
    rt = seer.make_runtime(model, "optimistic", threads=threads, rebind_every=0,
                           checkpoint_every=checkpoint_every)
    try:
        rt.reset(0)
        for t in range(3):
            assert_outputs_identical(ref_outs[t], rt.step(), f"step {t}: ")
        assert_states_identical(ref, rt)
        s = rt.stats
        assert s["rollbacks"] >= 3 and s["rolled_back"] >= 12  # four ticks a step at least
        assert s["anti_messages"] > 0
        assert s["events_run"] == ref.events_run
        assert s["events_processed"] - s["rolled_back"] == s["events_run"]
        assert s["gvt_rounds"] == 3 and s["gvt"] >= 3.0
        if checkpoint_every > 1:
            assert s["coasted"] > 0
        assert s["state_saving_bytes"] == s["checkpoints"] * rt._ckpt_bytes
    finally:
        rt.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("threads", [2, 3])
def test_a_failure_only_on_an_undone_path_does_not_surface(threads):
    ref, ref_outs, err = _serial_run(3, fail="unpinged")
    assert err is None  # serial always has the ping first
    model = Straggle()
    model.handshake = True
    model.fail = "unpinged"
    rt = seer.make_runtime(model, "optimistic", threads=threads, rebind_every=0)
    try:
        rt.reset(0)
        for t in range(3):
            assert_outputs_identical(ref_outs[t], rt.step(), f"step {t}: ")
        assert_states_identical(ref, rt)
        assert rt.stats["provisional_failures"] >= 1  # it did raise, speculatively
    finally:
        rt.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("threads", [2, 3])
def test_a_failure_on_re_execution_is_the_error_serial_reports(threads):
    before = threading.active_count()
    _, _, expected = _serial_run(3, fail="pinged")
    assert expected is not None
    model = Straggle()
    model.handshake = True
    model.fail = "pinged"
    rt = seer.make_runtime(model, "optimistic", threads=threads, rebind_every=0)
    rt.reset(0)
    rt.step()
    with pytest.raises(seer.HandlerError) as info:
        rt.step()
    err = info.value
    assert (err.step, err.entity, err.kind, tuple(err.event[:2])) == \
        (expected.step, expected.entity, expected.kind, tuple(expected.event[:2]))
    assert isinstance(err.__cause__, ZeroDivisionError)
    assert rt.stats["rolled_back"] >= 5  # the tick first ran without error, unpinged
    with pytest.raises(seer.RuntimeStateError, match="previous step failed"):
        rt.step()
    # usable again after a reset
    model.fail = None
    ref, ref_outs, _ = _serial_run(3)
    rt.reset(0)
    for t in range(3):
        assert_outputs_identical(ref_outs[t], rt.step(), f"after the failure, step {t}: ")
    assert_states_identical(ref, rt)
    rt.close()
    assert threading.active_count() == before


# -- failures ------------------------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_the_reported_failure_is_the_one_serial_meets_first():
    expected = _first_failure("serial", 1)
    for threads in (1, 2, 3, 4):
        for options in ({}, {"checkpoint_every": 4}):
            assert _first_failure("optimistic", threads, **options) == expected


@pytest.mark.timeout(120)
def test_handler_error_then_reset_and_a_correct_run_without_thread_leaks():
    before = threading.active_count()
    model = Exploding(40, seed=2, fanout=2, lookahead=0.0)
    model.fail_entity = next(e for e in model._actors if e % 4 == 2)
    rt = seer.make_runtime(model, "optimistic", threads=4)
    rt.reset(1)
    with pytest.raises(seer.HandlerError) as info:
        for t in range(10):
            rt.step(model.sample_actions(t))
    assert info.value.step == 3 and info.value.entity == model.fail_entity
    assert isinstance(info.value.__cause__, ArithmeticError)
    model.fail_step = -1
    ref = seer.SerialRuntime(model)
    rt.reset(4)
    ref.reset(4)
    for t in range(5):
        assert_outputs_identical(ref.step(model.sample_actions(t)),
                                 rt.step(model.sample_actions(t)))
    assert_states_identical(ref, rt)
    rt.close()
    assert threading.active_count() == before


# -- stress, resize, rebinding, options -------------------------------------------------------
@pytest.mark.timeout(120)
def test_many_steps_on_four_threads_with_rebinding():
    before = threading.active_count()
    model = RandomModel(24, seed=8, lookahead=0.1, fanout=2, ttl=3, p_fan_in=0.3)
    rt = seer.make_runtime(model, "optimistic", threads=4, rebind_every=2,
                           rebind_tolerance=0.0)
    ref = seer.SerialRuntime(model)
    rt.reset(7)
    ref.reset(7)
    for t in range(400):
        rt.step(model.sample_actions(t))
        ref.step(model.sample_actions(t))
    assert_states_identical(ref, rt)
    s = rt.stats
    assert s["events_run"] == ref.events_run > 2000
    assert s["gvt_rounds"] == 400
    assert s["rebinding_moves"] > 0
    assert s["events_processed"] - s["rolled_back"] == s["events_run"]
    rt.close()
    assert threading.active_count() == before


@pytest.mark.timeout(120)
def test_resize_between_steps_keeps_results():
    model = RandomModel(30, seed=3, lookahead=0.0, fanout=3, ttl=3)
    rt = seer.make_runtime(model, "optimistic", threads=2)
    ref = seer.SerialRuntime(model)
    try:
        rt.reset(5)
        ref.reset(5)
        for t, threads in enumerate([2, 5, 1, 3, 8, 2]):
            rt.resize(threads)
            assert_outputs_identical(ref.step(model.sample_actions(t)),
                                     rt.step(model.sample_actions(t)), f"step {t}: ")
        assert_states_identical(ref, rt)
    finally:
        rt.close()


@pytest.mark.parametrize(("option", "value"), [("checkpoint_every", 0),
                                               ("checkpoint_every", 1.5),
                                               ("rebind_every", -1),
                                               ("rebind_tolerance", -0.5)])
def test_bad_options_are_refused(option, value):
    with pytest.raises(seer.ModelError, match=option):
        seer.make_runtime(RandomModel(4), "optimistic", threads=2, **{option: value})


def test_registered_and_exported():
    assert seer.sched.RUNTIMES["optimistic"] is seer.sched.OptimisticRuntime
    assert seer.OptimisticRuntime is seer.sched.OptimisticRuntime
    with pytest.raises(seer.ModelError, match=r"threads must be an int in 1\.\.256"):
        seer.make_runtime(RandomModel(4), "optimistic", threads=0)


@pytest.mark.timeout(120)
def test_the_rng_state_dict_path_gives_the_same_bits(monkeypatch):
    """Checkpoints save a PCG64 generator's raw 40 bytes (self-tested at import); any other
    generator, or a failed self-test, goes through ``bit_generator.state``."""
    from seer.peers import optimistic as module

    assert module._RAW_PCG64  # numpy's PCG64 layout passed the self-test here
    monkeypatch.setattr(module, "_RAW_PCG64", False)
    model = SlowBlock(24, 2, seed=6, lookahead=0.05, fanout=3, ttl=4, p_fan_in=0.3,
                      silent_fraction=0.0, action_fraction=1.0)
    assert_equivalent(optimistic(2, checkpoint_every=2), model, seeds=[1], steps=3)
    rt = seer.make_runtime(model, "optimistic", threads=2)
    rt.reset(0)
    rt.step(model.sample_actions(0))
    assert all(v is None or v[1] is None for v in rt._shared.views)
    rt.close()


def test_trace_records_one_slice_per_thread_and_step():
    model = RandomModel(20, seed=1, lookahead=0.0)
    rt = seer.make_runtime(model, "optimistic", threads=2, trace=True)
    try:
        rt.reset(0)
        for t in range(3):
            rt.step(model.sample_actions(t))
        slices = rt.trace.slices("optimistic")
        assert sorted({s[0] for s in slices}) == [0, 1] and len(slices) == 6
        s = rt.stats
        assert sum(x[4]["events"] for x in slices) == s["events_processed"]
        assert sum(x[4]["rolled_back"] for x in slices) == s["rolled_back"]
        chrome = rt.trace.to_chrome()["traceEvents"]
        assert sum(e["ph"] == "X" and e["name"] == "optimistic" for e in chrome) == 6
    finally:
        rt.close()
