import heapq

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seer
from seer.testing import RandomModel, assert_equivalent, assert_outputs_identical, random_models
from tests.helpers import examples

models = random_models()


def run(model, seed, steps):
    rt = seer.SerialRuntime(model)
    outs = [rt.reset(seed)]
    outs += [rt.step(model.sample_actions(t)) for t in range(steps)]
    return rt, outs


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=models, seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 4))
def test_serial_runtime_is_deterministic_on_random_models(model, seed, steps):
    a, outs_a = run(model, seed, steps)
    b, outs_b = run(model, seed, steps)
    for name in a.state.names:
        assert a.state[name].tobytes() == b.state[name].tobytes()
    for x, y in zip(outs_a, outs_b, strict=True):
        assert_outputs_identical(x, y)
    assert a.stats == b.stats


class TieBreakBug(seer.SerialRuntime):
    """A plausible scheduler bug: events with equal τ run in reverse κ order."""

    def _run(self, t_end):
        heap = self._heap
        while heap and heap[0][0] < t_end:
            tau = heap[0][0]
            batch = []
            while heap and heap[0][0] == tau:
                batch.append(heapq.heappop(heap))
            for ev in reversed(batch):
                ctx = self._contexts[ev.target]
                ctx.now, ctx._seq = ev.tau, ev.seq
                self._handlers[ev.kind](ctx, ev)
                self.events_run += 1


class StaleSnapshot(seer.SerialRuntime):
    """Another plausible bug: the boundary snapshot is not refreshed between steps."""

    def _take_snapshot(self):
        if self.step_index == 0:
            super()._take_snapshot()


@pytest.mark.parametrize("faulty", [TieBreakBug, StaleSnapshot])
def test_assert_equivalent_catches_faulty_runtimes(faulty):
    model = RandomModel(30, seed=2)
    with pytest.raises(AssertionError, match=r"vs serial, seed 0, step \d+: .*differ"):
        assert_equivalent(faulty, model, seeds=[0], steps=5)


def test_assert_equivalent_passes_for_serial_in_debug_mode():
    for lookahead in (0.0, 0.3):
        model = RandomModel(25, seed=9, lookahead=lookahead)
        assert_equivalent(lambda m: seer.SerialRuntime(m, debug=True), model,
                          seeds=range(3), steps=4)


def test_random_model_exercises_the_contract_corners():
    model = RandomModel(80, seed=4, lookahead=0.0, p_zero_delay=0.5)
    rt, _ = run(model, 1, 5)
    stats = rt.stats
    assert stats["cross_entity"] > 100
    assert stats["events_run"] > stats["cross_entity"]
    assert model.silent, "some entities have no events"
    assert all(rt.state.count[e] == 0 for e in model.silent)
    assert rt.state.count[0] > np.median(rt.state.count), "entity 0 takes heavy fan-in"


def test_random_model_rejects_bad_parameters():
    with pytest.raises(seer.ModelError, match=r"p_fan_in must be a probability in \[0, 1\], "
                       r"got 1\.5"):
        RandomModel(5, p_fan_in=1.5)
    with pytest.raises(seer.ModelError, match=r"fanout and ttl must be in 0\.\.8"):
        RandomModel(5, fanout=9)

