"""Every runtime gives bit-identical state and outputs to the serial runtime."""

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seer
from seer.testing import RandomModel, assert_equivalent, random_models
from tests.helpers import examples
from workloads.synthetic import BenchModel

KINDS = ["seer", "static", "static-block", "global", "executor"]
THREADS = [1, 2, 3, 4, 8]


def factory(kind, threads):
    return lambda model: seer.make_runtime(model, kind, threads=threads)


models = random_models()


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=models, kind=st.sampled_from(KINDS), threads=st.sampled_from(THREADS),
       seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 4))
def test_random_models_match_serial(model, kind, threads, seed, steps):
    # min_events=0: random models at their corners may legitimately run no event
    assert_equivalent(factory(kind, threads), model, seeds=[seed], steps=steps, min_events=0)


CORNERS = {
    "lookahead-0-dense-same-time": dict(lookahead=0.0, p_zero_delay=0.8, fanout=3, ttl=4),
    "heavy-fan-in": dict(p_fan_in=0.9, fanout=3),
    "mostly-silent": dict(silent_fraction=0.9),
    "long-lookahead": dict(lookahead=2.5, fanout=2),
    "no-emits": dict(fanout=0),
}


# The fast tier runs the corners at 2 threads only (the random models above sample every
# count); the other counts, and both forced layouts below, run in the full suite.
CORNER_THREADS = [t if t == 2 else pytest.param(t, marks=pytest.mark.slow) for t in THREADS]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("threads", CORNER_THREADS)
@pytest.mark.parametrize("corner", sorted(CORNERS))
def test_corner_models_match_serial(kind, threads, corner):
    model = RandomModel(60, seed=len(corner), **CORNERS[corner])
    assert_equivalent(factory(kind, threads), model, seeds=[1, 2], steps=4)


@pytest.mark.parametrize("kind", KINDS)
def test_bench_model_matches_serial(kind):
    assert_equivalent(factory(kind, 2), BenchModel(300, fanout=2), seeds=[0], steps=3)


@pytest.mark.parametrize("path", ["fast", "public"])
def test_seer_on_both_atomics_paths(path):
    model = RandomModel(50, seed=3, lookahead=0.0)
    assert_equivalent(lambda m: seer.SeerRuntime(m, threads=2, atomics_path=path), model,
                      seeds=[0], steps=4)


def test_parallel_outputs_match_serial():
    model = RandomModel(200, seed=4)  # enough agents for the outputs to be built in parallel
    assert_equivalent(factory("seer", 4), model, seeds=[5], steps=3)


LAYOUTS = {"sorted": False, "dense": True}


@contextlib.contextmanager
def _forced_layout(layout):
    """A context in which every windowed runtime uses the calendar ``layout`` from its first
    step on (the entries reset made are moved across, as an automatic change would)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("seer.sched.windows.prefer_dense", lambda *_: LAYOUTS[layout])
        yield


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=models, kind=st.sampled_from(KINDS), threads=st.sampled_from(THREADS),
       seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 4),
       layout=st.sampled_from(sorted(LAYOUTS)))
def test_each_calendar_layout_matches_serial(model, kind, threads, seed, steps, layout):
    with _forced_layout(layout):
        assert_equivalent(factory(kind, threads), model, seeds=[seed], steps=steps,
                          min_events=0)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("corner", sorted(CORNERS))
def test_corner_models_match_serial_on_each_calendar_layout(layout, kind, corner):
    model = RandomModel(60, seed=len(corner), **CORNERS[corner])
    with _forced_layout(layout):
        assert_equivalent(factory(kind, 3), model, seeds=[1, 2], steps=4)
