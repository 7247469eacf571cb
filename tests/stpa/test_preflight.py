"""STPA's measuring side: metrics per thread, the preflight, labels and model specs."""

import numpy as np
import pytest

import seer
from seer.specs import load_model, parse_kwargs
from seer.stpa.dataset import Configuration, label_of, measure_configuration
from seer.stpa.metrics import METRICS, MetricSampler, aggregate, caller_thread_id
from seer.stpa.preflight import STATIC_FEATURES, run_preflight
from workloads.pcs import PCS
from workloads.synthetic import BenchModel


def test_sampler_reports_deltas_per_thread_and_masks_what_is_missing():
    model = BenchModel(200, cost_us=5, fanout=2)
    rt = seer.make_runtime(model, "seer", threads=2)
    rt.reset(0)
    rt.step(model.sample_actions(0))
    pool = rt.pool
    sampler = MetricSampler([caller_thread_id()] + [t.native_id for t in pool._threads],
                            pool.stats)
    rt.step(model.sample_actions(1))
    sample = sampler.sample()
    sampler.close()
    rt.close()
    assert sample.shape == (2, len(METRICS))
    events = sample[:, METRICS.index("events")]
    assert events.sum() == pytest.approx(600, rel=0.2)  # n * (1 + fanout) events
    assert sampler.mask[: METRICS.index("rss_growth_mb") + 1].all()  # runtime + /proc on Linux
    missing = ~sampler.mask
    assert (sample[:, missing] == 0).all()  # a missing metric is 0, never invented


def test_aggregate_is_mean_variance_range_across_threads():
    samples = [np.array([[1.0, 10.0], [3.0, 10.0]]), np.array([[2.0, 0.0], [2.0, 4.0]])]
    f = aggregate(samples)
    assert f.shape == (2, 2, 3)  # metrics, steps, stats
    assert f[0, 0].tolist() == [2.0, 1.0, 2.0]
    assert f[1, 1].tolist() == [2.0, 4.0, 4.0]


def test_preflight_leaves_the_users_runtime_untouched():
    model = PCS(8, 8, cost_us=2)
    user = seer.make_runtime(model, "seer", threads=2)
    ref = seer.SerialRuntime(model)
    user.reset(5)
    ref.reset(5)
    user.step(model.sample_actions(0))
    pre = run_preflight(model, steps=4)  # between the user's steps
    ref.step(model.sample_actions(0))
    for t in (1, 2):
        user.step(model.sample_actions(t))
        ref.step(model.sample_actions(t))
    assert user.state.busy.tobytes() == ref.state.busy.tobytes()
    user.close()
    assert pre.features.shape == (len(METRICS), 4, 3)
    assert set(pre.static) == set(STATIC_FEATURES) and pre.probe == 2
    assert pre.static["entities"] == 64 and pre.static["events_per_step"] > 0
    assert 0 < pre.seconds < 30


def test_a_model_that_fails_in_preflight_gives_its_own_error():
    class Broken(BenchModel):
        def on_tick(self, ctx, event):
            raise ZeroDivisionError("the model's own bug")

    with pytest.raises(seer.HandlerError) as info:
        run_preflight(Broken(10))
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_label_is_the_smallest_count_within_three_percent_of_the_best():
    thr = np.array([[10.0, 10.0], [19.5, 19.6], [19.8, 20.0], [20.0, 20.1]])
    assert label_of(thr) == 2  # median 19.55 >= 0.97 * 20.05 = 19.45
    assert label_of(thr, tolerance=0.0) == 4


def test_measure_configuration_scans_every_thread_count():
    config = Configuration("tiny", "workloads.synthetic:BenchModel",
                           {"n_entities": 40, "cost_us": 0, "fanout": 1}, steps=1)
    row = measure_configuration(config, t_max=3, repeats=1, scan_repeats=2, steps_pre=3)
    assert np.array(row["throughput"]).shape == (3, 2)
    assert row["label"] == label_of(np.array(row["throughput"]))  # the scan labels the row
    assert np.array(row["features"]).shape == (1, len(METRICS), 3, 3)


def test_model_specs():
    model = load_model("workloads.pcs:PCS", parse_kwargs(["width=4", "height=3",
                                                           "hotspot=False"]))
    assert model.n_entities == 12
    with pytest.raises(seer.ModelError, match=r"not a registered model name .* and not "
                                              r"'module:callable'"):
        load_model("workloads.pcs.PCS")
    with pytest.raises(seer.ModelError, match="has no 'Nope'"):
        load_model("workloads.pcs:Nope")
    with pytest.raises(seer.ModelError, match="key=value"):
        parse_kwargs(["width"])
    assert parse_kwargs(["name=abc"]) == {"name": "abc"}


def test_stpa_loads_when_threads_auto_first_needs_it():
    import subprocess
    import sys

    script = ("import sys, seer\n"
              "assert 'seer.stpa' not in sys.modules\n"
              "from workloads.synthetic import BenchModel\n"
              "rt = seer.make_runtime(BenchModel(50), 'seer', threads='auto')\n"
              "assert 'seer.stpa' in sys.modules and rt.stpa['threads'] == rt.threads\n"
              "rt.close()\n"
              "assert seer.stpa.predict is sys.modules['seer.stpa'].predict\n"
              "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


def test_importing_seer_stpa_registers_stpa_as_the_thread_chooser():
    from seer import sched, stpa

    previous = sched.register_thread_chooser(None)
    try:
        assert previous is stpa.choose_threads
    finally:
        sched.register_thread_chooser(previous)


def test_threads_auto_asks_the_registered_chooser_and_fails_clearly_without_one():
    from seer import sched

    asked = []

    def chooser(model, runtime):
        asked.append((model.n_entities, runtime))
        return 3, {"why": "test"}

    previous = sched.register_thread_chooser(chooser)
    try:
        with seer.make_runtime(BenchModel(10), "static", threads="auto") as rt:
            assert (rt.threads, rt.stpa) == (3, {"why": "test"})
        assert asked == [(10, "static")]
        sched.register_thread_chooser(None)
        with pytest.raises(seer.ModelError, match="threads='auto' for runtime 'seer': no "
                                                  "thread chooser is registered"):
            seer.make_runtime(BenchModel(10), "seer", threads="auto")
        with pytest.raises(seer.ModelError, match="needs a callable, got 3"):
            sched.register_thread_chooser(3)
    finally:
        sched.register_thread_chooser(previous)
