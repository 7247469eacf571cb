"""STPA's predicting side: threads="auto", the shipped model, and the evaluation code."""

import sys

import numpy as np
import pytest

import seer
from seer.marl import SeerParallelEnv
from seer.stpa import predictor as predictor_module
from seer.stpa.cli import DEFAULT_DATASETS
from seer.stpa.dataset import load_rows
from seer.stpa.metrics import METRICS
from seer.stpa.predictor import (
    DATA_DIR,
    DEFAULT_TARGET,
    Predictor,
    choose_threads,
    thread_cap,
    threads_for,
    wait_share,
)
from seer.stpa.preflight import PREFLIGHT_STEPS, STATIC_FEATURES
from seer.stpa.train import METHODS, evaluate, evaluate_machines, fit_stpa, group_folds
from seer.stpa.trees import TreeEnsemble
from seer.testing import assert_outputs_identical
from workloads.pcs import PCS
from workloads.synthetic import BenchModel


def test_the_shipped_model_loads_and_predicts_a_thread_count():
    """The thread count is the shipped trees' prediction for the preflight just run,
    mapped onto this machine: recomputed here from the preflight's features (the count
    itself depends on timings, so no fixed value can be expected)."""
    predictor = Predictor.load(DATA_DIR)
    assert predictor.mask.any() and predictor.target == DEFAULT_TARGET
    assert set(predictor.trained_on["machines"]) == {"2-core", "16-core"}
    threads, info = choose_threads(BenchModel(200, cost_us=5, fanout=1), predictor=predictor)
    static = np.array([[info["static"][name] for name in STATIC_FEATURES]])
    again = predictor.predict_target(info["features"][None], info["mask"], static)
    assert float(again[0]) == info["predicted"] and np.isfinite(info["predicted"])
    cores = int(info["static"]["cores"])
    wait = wait_share(info["features"][None], info["mask"] & predictor.mask)[0]
    assert info["wait_share"] == wait and info["cap"] == min(thread_cap(cores, wait),
                                                             info["t_max"])
    assert threads == predictor.choose(info["features"][None], info["mask"], static)[0]
    assert 1 <= threads <= info["cap"]
    assert info["features"].shape[1] == predictor.steps


class _PeakAt:
    """Trees stand-in for the curve target: predicted throughput peaks where the
    normalised count (the last input) is ``peak``."""

    def __init__(self, peak):
        self.peak = peak

    def predict(self, x):
        return -np.abs(np.asarray(x)[:, -1] - self.peak)


@pytest.mark.parametrize(("cores", "wait", "peak", "threads"), [
    (16, 0.0, 0.5, 8), (16, 0.0, 1.0, 16), (2, 0.0, 0.5, 2), (2, 0.9, 0.5, 4),
    (2, 0.9, 1.0, 8), (1, 0.0, 1.0, 1)])
def test_the_curve_target_chooses_the_fastest_count_under_the_cap(cores, wait, peak,
                                                                   threads):
    """The count predicted fastest within 1..min(t_max, cap): on 2 cores a step that
    does not wait stays at 2 even where the trees say 4 would be faster."""
    shipped = Predictor.load(DATA_DIR)
    predictor = Predictor(shipped.encoder, _PeakAt(peak), shipped.mask, shipped.steps,
                          target="curve")
    busy = 1.0
    features = _counters(busy=busy, cpu=busy * (1 - wait), events=100, voluntary=100)
    static = np.array([[100, 100, 10, 0.1, 3, cores, 8, 2, cores]], float)
    assert predictor.choose(features, np.ones(len(METRICS), bool), static)[0] == threads


@pytest.mark.parametrize(("y", "cores", "threads"), [
    (-5.0, 2, 1), (0.0, 2, 2), (1.0, 2, 4), (2.0, 2, 8), (3.0, 2, 8), (0.0, 16, 16),
    (-0.5, 16, 11), (-1.0, 16, 8), (1.0, 16, 16), (0.0, 64, 64), (-1.0, 64, 32)])
def test_a_prediction_maps_onto_the_machine_it_runs_on(y, cores, threads):
    """round(cores * 2**y) within 1..max(8, cores): never clipped to a training t_max."""
    assert threads_for(y, cores) == threads


@pytest.mark.parametrize(("y", "cores", "cap", "threads"), [
    (2.0, 2, 2, 2), (2.0, 2, 5, 5), (2.0, 2, 100, 8), (-1.0, 2, 2, 1), (1.0, 16, 16, 16)])
def test_a_cap_bounds_the_count_from_above_only(y, cores, cap, threads):
    assert threads_for(y, cores, cap=cap) == threads


@pytest.mark.parametrize(("cores", "wait", "cap"), [
    (2, 0.0, 2), (2, 0.3, 2), (2, 0.5, 4), (2, 0.75, 8), (16, 0.2, 20), (1, 0.9, 10)])
def test_the_cap_is_the_threads_that_keep_the_cores_busy(cores, wait, cap):
    """floor(cores / (1 - wait)), never below the cores."""
    assert thread_cap(cores, wait) == cap


def _counters(busy, cpu, events, voluntary, involuntary=0.0, steps=4):
    """Preflight features (1, N, steps, 3) whose per-thread means over the steps sum to
    the given totals."""
    f = np.zeros((1, len(METRICS), steps, 3))
    for name, total in (("busy_s", busy), ("cpu_s", cpu), ("events", events),
                        ("voluntary_switches", voluntary),
                        ("involuntary_switches", involuntary)):
        f[0, METRICS.index(name), :, 0] = total / steps
    return f


def test_waiting_is_told_from_preemption_by_voluntary_switches():
    """A task off the CPU half its time counts as waiting when it gave the CPU up itself
    (a voluntary switch per event), not when it was preempted (involuntary switches)."""
    mask = np.ones(len(METRICS), bool)
    sleeps = _counters(busy=1.0, cpu=0.2, events=100, voluntary=100)
    preempted = _counters(busy=1.0, cpu=0.5, events=100, voluntary=0.5, involuntary=300)
    assert wait_share(sleeps, mask)[0] == pytest.approx(0.8)
    assert wait_share(preempted, mask)[0] == pytest.approx(0.5 * 0.005)
    assert thread_cap(2, wait_share(preempted, mask)[0]) == 2
    assert thread_cap(2, wait_share(sleeps, mask)[0]) == 10
    no_switches = mask.copy()
    no_switches[METRICS.index("voluntary_switches")] = False
    assert wait_share(preempted, no_switches)[0] == pytest.approx(0.5)
    no_runtime = mask.copy()
    no_runtime[METRICS.index("cpu_s")] = False
    assert wait_share(sleeps, no_runtime)[0] == 1.0  # nothing known: no cap


def test_the_shipped_rows_separate_waiting_handlers_from_compute():
    """On the shipped rows of both machines, every waiting handler (wait-*) shows a wait
    share above 0.6 and every compute-bound row below 0.3: the cap keeps compute rows at
    the cores and leaves the waiting ones their range (a measured property of the data,
    which the cap relies on)."""
    data = load_rows(DEFAULT_DATASETS)
    wait = wait_share(data["features"][:, :, :PREFLIGHT_STEPS], data["mask"])
    waiting = np.char.startswith(data["names"].astype(str), "wait")
    assert wait[waiting].min() > 0.6 and wait[~waiting].max() < 0.3


def test_the_numpy_trees_predict_what_xgboost_predicts():
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 6))
    x[::7, 2] = np.nan  # missing values follow default_left
    y = np.sin(x[:, 0]) + np.nan_to_num(x[:, 2])
    booster = xgboost.train({"max_depth": 3, "eta": 0.1, "nthread": 1},
                            xgboost.DMatrix(x, label=y), num_boost_round=30)
    path = DATA_DIR.parent / "__pycache__" / "trees-test.json"
    path.parent.mkdir(exist_ok=True)
    booster.save_model(str(path))
    try:
        ours = TreeEnsemble.load(path).predict(x)
    finally:
        path.unlink()
    np.testing.assert_allclose(ours, booster.predict(xgboost.DMatrix(x)), rtol=1e-5,
                               atol=1e-5)


def test_threads_auto_is_bit_identical_to_the_same_fixed_count():
    model = PCS(10, 10, cost_us=3)
    auto = seer.make_runtime(model, "seer", threads="auto")
    info = auto.stpa
    assert info["threads"] == auto.threads and info["probe"] >= 2 and info["seconds"] > 0
    assert info["features"].shape[1] == PREFLIGHT_STEPS and np.isfinite(info["predicted"])
    fixed = seer.make_runtime(model, "seer", threads=auto.threads)
    try:
        assert_outputs_identical(fixed.reset(3), auto.reset(3))
        for t in range(4):
            assert_outputs_identical(fixed.step(model.sample_actions(t)),
                                     auto.step(model.sample_actions(t)))
    finally:
        auto.close()
        fixed.close()


def test_threads_auto_through_the_pettingzoo_adapter():
    env = SeerParallelEnv(PCS(6, 6, cost_us=2), "seer", threads="auto")
    env.reset(seed=0)
    info = env.runtime.stpa
    assert info is not None and env.runtime.threads == info["threads"]
    assert 1 <= info["threads"] <= info["cap"]
    env.close()


def test_threads_auto_needs_no_xgboost(monkeypatch):
    """Inference walks the trees in numpy (the offline bundle has no xgboost)."""
    monkeypatch.setitem(sys.modules, "xgboost", None)  # import xgboost -> ImportError
    monkeypatch.setattr(predictor_module, "_loaded", {})
    rt = seer.make_runtime(BenchModel(10), "seer", threads="auto")
    try:
        assert rt.threads == rt.stpa["threads"] >= 1
    finally:
        rt.close()


def test_a_failing_model_reports_its_own_error_not_a_predictor_error():
    class Broken(BenchModel):
        def on_tick(self, ctx, event):
            raise KeyError("model bug")

    with pytest.raises(seer.HandlerError, match="model bug"):
        choose_threads(Broken(10))


def test_missing_metrics_lower_the_input_but_do_not_crash():
    predictor = Predictor.load(DATA_DIR)
    pre_f = np.random.default_rng(0).random((1, len(predictor.mask), 8, 3))
    static = np.array([[100, 200, 10, 0.1, 3, 2, 8, 2, 1.9]], float)
    none = np.zeros(len(predictor.mask), bool)
    some = predictor.mask.copy()
    some[: len(some) // 2] = False
    for mask in (none, some):
        value = predictor.predict_target(pre_f, mask, static)
        assert np.isfinite(value).all()


def test_group_folds_never_split_a_group():
    groups = np.array(["a", "a", "b", "c", "c", "c", "d", "e"])
    folds = group_folds(groups, 3, seed=1)
    seen = np.concatenate([test for _, test in folds])
    assert sorted(seen.tolist()) == list(range(8))
    for train, test in folds:
        assert not set(groups[train]) & set(groups[test])


def _small_rows():
    data = load_rows(DEFAULT_DATASETS)
    keep = np.isin(data["groups"], [g for g in np.unique(data["groups"])
                                    if g.split("/")[1] in ("bench-c0", "wait-w150", "pcs-20",
                                                           "aircraft-150")])
    return {k: (v[keep] if v.ndim and len(v) == len(data["labels"]) and k != "mask" else v)
            for k, v in data.items()}


def test_evaluation_reports_every_method_on_a_small_dataset():
    report = evaluate(_small_rows(), folds=2, epochs=2, steps=4)
    assert set(report["methods"]) == set(METHODS)
    assert set(report["machines"]) == {"2-core", "16-core"}
    assert report["methods"]["oracle"]["mae_threads"] == 0.0
    for m in report["methods"].values():
        assert 0 < m["regret_worst"] <= m["regret_mean"] <= 1.0
    assert report["checks"]["best_above_8"] > 0


def test_every_method_reads_only_the_preflight_steps_it_is_given():
    data = _small_rows()
    report = evaluate(data, folds=2, epochs=1, steps=4)
    later = data["features"].copy()
    later[:, :, 4:] = np.random.default_rng(1).uniform(0, 1e3, later[:, :, 4:].shape)
    changed = evaluate({**data, "features": later}, folds=2, epochs=1, steps=4)
    assert changed["rows"] == report["rows"]  # steps 5.. of the data sets change nothing
    assert report["steps"] == 4 == PREFLIGHT_STEPS
    with pytest.raises(ValueError, match="9 preflight steps asked, the data set has 8"):
        evaluate(data, folds=2, epochs=1, steps=9)


def test_a_predictor_is_trained_on_the_steps_threads_auto_runs():
    data = _small_rows()
    assert fit_stpa(data, np.arange(len(data["labels"])), epochs=1).steps == PREFLIGHT_STEPS


def test_held_out_machines_train_on_one_and_test_on_the_other():
    report = evaluate_machines(_small_rows(), epochs=2, steps=4)
    assert set(report) == {"2-core -> 16-core", "16-core -> 2-core"}
    assert {r["machine"] for r in report["2-core -> 16-core"]["rows"]} == {"16-core"}
    # the previous method trains on 2-core rows only: nothing to train on from 16 cores
    assert report["16-core -> 2-core"]["methods"]["stpa-2core-v1"] == {"rows": 0}
    assert max(r["stpa-2core-v1"] for r in report["2-core -> 16-core"]["rows"]) <= 8
