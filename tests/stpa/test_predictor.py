"""STPA's predicting side: threads="auto", the shipped model, and the evaluation code."""

import sys

import numpy as np
import pytest

import seer
from seer.marl import SeerParallelEnv
from seer.stpa import predictor as predictor_module
from seer.stpa.predictor import DATA_DIR, Predictor, choose_threads
from seer.stpa.preflight import STATIC_FEATURES
from seer.stpa.train import evaluate, group_folds
from seer.testing import assert_outputs_identical
from workloads.pcs import PCS
from workloads.synthetic import BenchModel


def test_the_shipped_model_loads_and_predicts_a_thread_count():
    """The thread count is the shipped regressor's prediction for the preflight just run,
    rounded to a multiple of 1/t_max: recomputed here from the preflight's features (the
    count itself depends on timings, so no fixed value can be expected)."""
    predictor = Predictor.load(DATA_DIR)
    assert predictor.t_max == 8 and predictor.mask.any()
    threads, info = choose_threads(BenchModel(200, cost_us=5, fanout=1), predictor=predictor)
    static = np.array([[info["static"][name] for name in STATIC_FEATURES]])
    again = predictor.predict_normalised(info["features"][None], info["mask"], static)
    assert float(again[0]) == info["normalised"] and np.isfinite(info["normalised"])
    assert threads == min(max(round(info["normalised"] * 8), 1), 8)


@pytest.mark.parametrize(("normalised", "threads"), [
    (-0.5, 1), (0.0, 1), (0.06, 1), (0.2, 2), (0.3125, 2), (0.35, 3), (0.5, 4), (0.9, 7),
    (1.0, 8), (1.7, 8)])
def test_a_prediction_is_rounded_to_a_thread_count_and_clipped_to_1_through_t_max(
        normalised, threads):
    predictor = Predictor.load(DATA_DIR)
    assert predictor.threads_for(normalised) == threads  # 0.3125 * 8 = 2.5: to even
    assert predictor.threads_for(normalised, t_max=16) == min(max(round(normalised * 16), 1),
                                                              16)


def test_threads_auto_is_bit_identical_to_the_same_fixed_count():
    model = PCS(10, 10, cost_us=3)
    auto = seer.make_runtime(model, "seer", threads="auto")
    info = auto.stpa
    assert info["threads"] == auto.threads and info["probe"] >= 2 and info["seconds"] > 0
    assert info["features"].shape[1] == 8 and 0 < info["normalised"] < 2
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
    assert info["threads"] == min(max(round(info["normalised"] * info["t_max"]), 1),
                                  info["t_max"])
    env.close()


def test_without_xgboost_auto_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "xgboost", None)  # import xgboost -> ImportError
    monkeypatch.setattr(predictor_module, "_loaded", [])
    with pytest.raises(seer.ModelError, match=r"needs xgboost: install the 'stpa' extra"):
        seer.make_runtime(BenchModel(10), "seer", threads="auto")


def test_a_failing_model_reports_its_own_error_not_a_predictor_error():
    class Broken(BenchModel):
        def on_tick(self, ctx, event):
            raise KeyError("model bug")

    with pytest.raises(seer.HandlerError, match="model bug"):
        choose_threads(Broken(10))


def test_missing_metrics_lower_the_input_but_do_not_crash():
    predictor = Predictor.load(DATA_DIR)
    pre_f = np.random.default_rng(0).random((1, len(predictor.mask), 8, 3))
    static = np.array([[100, 200, 10, 0.1, 3, 2, 8, 2]], float)
    none = np.zeros(len(predictor.mask), bool)
    some = predictor.mask.copy()
    some[: len(some) // 2] = False
    for mask in (none, some):
        value = predictor.predict_normalised(pre_f, mask, static)
        assert np.isfinite(value).all()


def test_group_folds_never_split_a_group():
    groups = np.array(["a", "a", "b", "c", "c", "c", "d", "e"])
    folds = group_folds(groups, 3, seed=1)
    seen = np.concatenate([test for _, test in folds])
    assert sorted(seen.tolist()) == list(range(8))
    for train, test in folds:
        assert not set(groups[train]) & set(groups[test])


def test_evaluation_reports_every_method_on_a_small_dataset():
    from seer.stpa.dataset import load_dataset

    data = load_dataset(DATA_DIR / "dataset.npz")
    keep = np.isin(data["groups"], np.unique(data["groups"])[:6])
    per_row = {"features", "static", "labels", "groups", "names", "throughput"}
    small = {k: (v[keep] if k in per_row else v) for k, v in data.items()}
    report = evaluate(small, folds=2, epochs=2)
    assert set(report["methods"]) == {"stpa", "xgboost-static", "xgboost-raw", "lstm",
                                      "timesurl", "cores", "oracle"}
    assert report["methods"]["oracle"]["regret_mean"] == 1.0
    for m in report["methods"].values():
        assert 0 < m["regret_worst"] <= m["regret_mean"] <= 1.0
