from pathlib import Path

import numpy as np
import pytest

import seer
from seer.testing import assert_equivalent
from tests.helpers import run_serial
from workloads.aircraft import Aircraft, load_tracks

HERE = Path(__file__).resolve().parents[2] / "workloads" / "aircraft"


def test_real_tracks_load_and_have_provenance():
    tracks = load_tracks()
    assert tracks.shape == (48, 64, 2) and tracks.dtype == np.float32
    assert np.all(np.isfinite(tracks)) and np.all(tracks[:, 0] == 0)
    lengths = np.hypot(*(tracks[:, -1] - tracks[:, 0]).T)
    assert lengths.min() > 5.0  # km: real flights going somewhere
    provenance = (HERE / "PROVENANCE.md").read_text()
    for needed in ("traffic", "quickstart", "MIT", "OpenSky", "make_tracks.py"):
        assert needed in provenance
    assert (HERE / "make_tracks.py").exists()


def test_deterministic_for_a_seed_and_seed_dependent():
    model = Aircraft(80, cost_us=70)
    a, _ = run_serial(model, 3, 4)
    b, _ = run_serial(model, 3, 4)
    c, _ = run_serial(model, 4, 4)
    assert a.state.pos.tobytes() == b.state.pos.tobytes()
    assert a.state.pos.tobytes() != c.state.pos.tobytes()


@pytest.mark.parametrize("kind", ["seer", "static", "global", "executor"])
def test_all_runtimes_match_serial(kind):
    model = Aircraft(120, cost_us=70, density=3.0)
    assert_equivalent(lambda m: seer.make_runtime(m, kind, threads=2), model, seeds=[1],
                      steps=4)


def test_dense_hubs_do_more_work_and_move():
    model = Aircraft(400, cost_us=70, density=2.0)
    rt, _ = run_serial(model, 0, 6)
    assert rt.stats["cross_entity"] > 0  # conflicts happen
    sizes = np.bincount(model._hub_of)
    assert sizes.max() > 3 * sizes.min()  # uneven hubs
    moved = np.hypot(*(model.hub_centre(0, 100.0) - model.hub_centre(0, 0.0)))
    assert moved > 0.5


def test_knob_sizes_the_collision_search():
    assert Aircraft(10, cost_us=400).candidates > Aircraft(10, cost_us=100).candidates


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(cost_us=-1), r"Aircraft cost_us must be a finite number in \(0, 1e\+06\], got -1"),
    (dict(cost_us="200"),
     r"Aircraft cost_us must be a finite number in \(0, 1e\+06\], got '200'"),
    (dict(cost_us=1e300),
     r"Aircraft cost_us must be a finite number in \(0, 1e\+06\], got 1e\+300"),
    (dict(density=float("nan")), "Aircraft density must be a finite number > 0, got nan"),
    (dict(interaction=True), "Aircraft interaction must be a finite number > 0, got True"),
    (dict(hotspots=1), r"Aircraft hotspots must be a bool \(True or False\), got 1"),
    (dict(k_neighbours=0), r"Aircraft k_neighbours must be an int in 1\.\.16, got 0"),
    (dict(k_neighbours="3"), r"Aircraft k_neighbours must be an int in 1\.\.16, got '3'"),
    (dict(horizon=1), r"Aircraft horizon must be an int in 2\.\.64, got 1"),
    (dict(horizon=2.5), r"Aircraft horizon must be an int in 2\.\.64, got 2\.5"),
    (dict(max_steps="x"), "Aircraft max_steps must be an int >= 1 or None, got 'x'"),
    (dict(max_steps=0), "Aircraft max_steps must be an int >= 1 or None, got 0"),
    (dict(seed=-1), "Aircraft seed must be an int >= 0, got -1"),
    (dict(seed=1.0), "Aircraft seed must be an int >= 0, got 1.0"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(seer.ModelError, match="^" + message + "$"):
        Aircraft(10, **kwargs)


def test_numpy_numbers_are_arguments_too():
    model = Aircraft(np.int64(10), cost_us=np.float32(100), density=np.int32(2),
                     k_neighbours=np.int8(3), horizon=np.uint16(4), seed=np.int64(5),
                     max_steps=np.int64(7), hotspots=np.True_)
    assert (model.k, model.horizon, model.seed, model.max_steps) == (3, 4, 5, 7)
    assert model.state_fields()["nbrs"] == ((3, 2), np.float64)
    assert model.candidates == Aircraft(10, cost_us=100).candidates


_BAD_ACTIONS = {
    "int beyond float": (10**400, 0),
    "complex": (0.5 + 1j, 0.0),
    "complex array": np.array([0.5 + 1j, 0.0]),
    "numeric strings": ("0.5", "0"),
    "string array": np.array(["0.5", "0"]),
    "masked array": np.ma.masked_array([0.5, 0.0], [False, True]),
    "nan": (float("nan"), 0.0),
    "inf": (0.0, np.inf),
    "bool": (True, 0.0),
    "bool array": np.array([True, False]),
    "one number": 0.5,
    "three numbers": (0.1, 0.2, 0.3),
    "nested": ((0.1,), (0.2,)),
}


@pytest.mark.parametrize("name", list(_BAD_ACTIONS))
def test_actions_that_are_not_two_real_numbers_are_refused_naming_the_uav(name):
    model = Aircraft(5, cost_us=70)
    actions = model.sample_actions(0)
    actions[3] = _BAD_ACTIONS[name]
    with seer.SerialRuntime(model) as rt:
        rt.reset(0)
        before = rt.state.pos.copy()
        with pytest.raises(seer.ModelError, match=r"^Aircraft action for UAV 3 must be two "
                                                  r"finite real numbers \(turn, throttle\), "
                                                  r"got \S"):
            rt.step(actions)
        assert rt.step_index == 0 and np.array_equal(rt.state.pos, before)
        rt.step(model.sample_actions(0))  # nothing changed: the episode goes on
        assert rt.step_index == 1


def test_actions_as_arrays_and_numpy_numbers_are_taken():
    model = Aircraft(4, cost_us=70)
    joint = np.array(model.sample_actions(0))
    with seer.SerialRuntime(model) as rt:
        rt.reset(0)
        rt.step(joint.astype(np.float32))  # a policy's float32 (n, 2) array
        rt.step([(np.float32(0.5), np.int64(1)), [0, 0], (2.5, -3), None])  # clipped
        rt.step({1: np.array([0, 1], np.int16)})
        assert rt.step_index == 3


@pytest.mark.parametrize(("joint", "uav"), [
    (np.array([[0, 0], [0, 0], [np.nan, 0], [0, 0]]), 2),
    (np.array([[0, 0], [0, 0], [0, 1j], [0, 0]]), 0),  # the whole array is complex
    (np.ma.masked_array(np.zeros((4, 2)), [[0, 0], [0, 0], [1, 0], [0, 0]]), 0),
    (np.array([["0", "0"]] * 4), 0),
], ids=["nan", "complex", "masked", "strings"])
def test_a_bad_joint_array_names_its_first_bad_uav(joint, uav):
    with pytest.raises(seer.ModelError, match=rf"^Aircraft action for UAV {uav} must be two "):
        Aircraft(4, cost_us=70).action_events(joint)
