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
    (dict(cost_us=-1), "Aircraft cost_us must be a finite number > 0, got -1"),
    (dict(density=float("nan")), "Aircraft density must be a finite number > 0, got nan"),
    (dict(k_neighbours=0), "Aircraft k_neighbours must be in 1..16, got 0"),
    (dict(horizon=1), "Aircraft horizon must be in 2..64, got 1"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(seer.ModelError, match="^" + message + "$"):
        Aircraft(10, **kwargs)
