import numpy as np
import pytest

import seer
from seer.testing import assert_equivalent
from workloads.pcs import PCS


def run(model, seed, steps):
    rt = seer.SerialRuntime(model)
    rt.reset(seed)
    for t in range(steps):
        rt.step(model.sample_actions(t))
    return rt


@pytest.mark.parametrize("kind", ["seer", "static", "global", "executor"])
def test_all_runtimes_match_serial(kind):
    model = PCS(8, 8, cost_us=5, step_length=200.0)
    assert_equivalent(lambda m: seer.make_runtime(m, kind, threads=2), model, seeds=[2],
                      steps=4)


def test_five_event_kinds_all_happen_and_blocking_is_a_probability():
    model = PCS(10, 10, cost_us=5, step_length=300.0, move_interval=900.0)
    rt = run(model, 0, 6)
    s = rt.state
    assert s.attempts.sum() > 0 and s.handoff_attempts.sum() > 0
    assert rt.stats["cross_entity"] > 0
    p = PCS.blocking_probability(s)
    assert 0.0 <= p <= 1.0
    assert s.portables.sum() <= 100 * 16


def test_hotspot_makes_load_uneven():
    hot = run(PCS(12, 12, cost_us=5, step_length=300.0, hotspot=True, seed=1), 0, 4)
    flat = run(PCS(12, 12, cost_us=5, step_length=300.0, hotspot=False, seed=1), 0, 4)
    assert hot.state.attempts.std() > 1.5 * flat.state.attempts.std()
    assert PCS.blocking_probability(hot.state) >= PCS.blocking_probability(flat.state)


def test_deterministic_for_a_seed():
    a = run(PCS(6, 6, cost_us=5, step_length=200.0), 7, 3)
    b = run(PCS(6, 6, cost_us=5, step_length=200.0), 7, 3)
    assert np.array_equal(a.state.attempts, b.state.attempts)


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(width=2), "PCS torus must be at least 3x3, got 2x40"),
    (dict(width=4.0), "PCS width must be an int >= 1, got 4.0"),
    (dict(height="4"), "PCS height must be an int >= 1, got '4'"),
    (dict(channels=0), "PCS channels must be an int >= 1, got 0"),
    (dict(portables=True), "PCS portables must be an int >= 1, got True"),
    (dict(cost_us=0), r"PCS cost_us must be a finite number in \(0, 1e\+06\], got 0"),
    (dict(cost_us=1e12),
     r"PCS cost_us must be a finite number in \(0, 1e\+06\], got 1000000000000.0"),
    (dict(signal_delay=float("inf")), "PCS signal_delay must be a finite number > 0, got inf"),
    (dict(step_length="30"), "PCS step_length must be a finite number > 0, got '30'"),
    (dict(hotspot_gain="x"), "PCS hotspot_gain must be a finite number >= 0, got 'x'"),
    (dict(hotspot_gain=-1), "PCS hotspot_gain must be a finite number >= 0, got -1"),
    (dict(hotspot="no"), r"PCS hotspot must be a bool \(True or False\), got 'no'"),
    (dict(seed=-1), "PCS seed must be an int >= 0, got -1"),
    (dict(max_steps=0), "PCS max_steps must be an int >= 1 or None, got 0"),
    (dict(max_steps=-5), "PCS max_steps must be an int >= 1 or None, got -5"),
    (dict(max_steps="x"), "PCS max_steps must be an int >= 1 or None, got 'x'"),
    (dict(max_steps=2.0), "PCS max_steps must be an int >= 1 or None, got 2.0"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(seer.ModelError, match="^" + message + "$"):
        PCS(**kwargs)


@pytest.mark.parametrize(("bad", "shown"), [(True, "True"), (2.0, "2.0"), (-1, "-1"),
                                            (PCS.RESERVE_CHOICES, str(PCS.RESERVE_CHOICES)),
                                            ("1", "'1'")])
def test_bad_actions_name_the_first_bad_cell(bad, shown):
    model = PCS(4, 4, cost_us=5)
    actions = [1] * model.n_entities
    actions[5] = np.int64(2)  # numpy ints are reserves too
    actions[6] = bad
    actions[9] = bad
    with pytest.raises(seer.ModelError, match=rf"^PCS action for cell 6 must be an int "
                                              rf"reserve in 0\.\.{PCS.RESERVE_CHOICES - 1}, "
                                              rf"got {shown}$"):
        model.action_events(actions)
    actions[6] = actions[9] = 0
    assert [a for _, _, a in model.action_events(actions)] == actions


def test_numpy_numbers_are_arguments_too():
    model = PCS(np.int64(4), np.int32(5), cost_us=np.float64(5), seed=np.uint8(3),
                max_steps=np.int64(2), hotspot=np.False_, hotspot_gain=np.int64(1))
    assert (model.width, model.height, model.seed, model.max_steps) == (4, 5, 3, 2)
    assert model.n_entities == 20 and model.hotspot_gain == 0.0


@pytest.mark.parametrize(("bad", "shown"), [
    (1 + 0j, r"\(1\+0j\)"), (np.float64(1), r"np.float64\(1.0\)"), (np.True_, "np.True_"),
    (np.array(1), r"array\(1\)"), (np.ma.masked, "masked"), (10**400, r"1000.*000")])
def test_actions_that_are_not_reserves_are_refused_before_anything_runs(bad, shown):
    model = PCS(4, 4, cost_us=5)
    actions = list(model.sample_actions(0))
    actions[2] = bad
    with seer.SerialRuntime(model) as rt:
        rt.reset(0)
        before = rt.state.attempts.copy()
        with pytest.raises(seer.ModelError, match=rf"^PCS action for cell 2 must be an int "
                                                  rf"reserve in 0\.\.3, got {shown}$"):
            rt.step(actions)
        assert rt.step_index == 0 and np.array_equal(rt.state.attempts, before)
        rt.step(np.ma.masked_array(model.sample_actions(0)))  # unmasked values are values
        assert rt.step_index == 1
