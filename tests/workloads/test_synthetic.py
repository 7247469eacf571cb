import numpy as np
import pytest

import seer
from workloads.synthetic import BenchModel, EmptyModel


def test_empty_model_events_per_step():
    rt = seer.SerialRuntime(EmptyModel(10, per_step=4))
    rt.reset(seed=0)
    rt.step()
    assert rt.events_run == 40


def test_bench_model_sends_fanout_pings_per_tick():
    model = BenchModel(50, cost_us=0, fanout=2)
    rt = seer.SerialRuntime(model)
    rt.reset(seed=0)
    rt.step(model.sample_actions(0))
    # 50 ticks, each emitting 2 pings; most pings land in the same step (delay 0.5)
    assert rt.stats["emitted"] == 100
    assert 50 < rt.stats["events_run"] <= 150
    assert rt.state.hits.sum() == rt.stats["events_run"] - 50


@pytest.mark.parametrize(("make", "message"), [
    (lambda: BenchModel(5, fanout=17), r"BenchModel fanout must be an int in 0\.\.16, got 17"),
    (lambda: BenchModel(5, fanout="1"), r"BenchModel fanout must be an int in 0\.\.16, got '1'"),
    (lambda: BenchModel(5, fanout=1.5), r"BenchModel fanout must be an int in 0\.\.16, got 1.5"),
    (lambda: BenchModel(5, fanout=True), r"BenchModel fanout must be an int in 0\.\.16, got True"),
    (lambda: BenchModel(5, cost_us=-1), "BenchModel cost_us must be a finite number >= 0, got -1"),
    (lambda: BenchModel(5, cost_us="2"),
     "BenchModel cost_us must be a finite number >= 0, got '2'"),
    (lambda: BenchModel(5, wait_us=1e6), r"BenchModel wait_us must be a finite number in "
                                         r"\[0, 1e\+06\), got 1000000.0"),
    (lambda: BenchModel(5, wait_us=None), r"BenchModel wait_us must be a finite number in "
                                          r"\[0, 1e\+06\), got None"),
    (lambda: BenchModel("5"), "n_entities must be an int, got str '5'"),
    (lambda: EmptyModel(5, per_step=0), "EmptyModel per_step must be an int >= 1, got 0"),
    (lambda: EmptyModel(5, per_step=2.5), "EmptyModel per_step must be an int >= 1, got 2.5"),
])
def test_synthetic_models_reject_bad_parameters_by_name(make, message):
    with pytest.raises(seer.ModelError, match="^" + message + "$"):
        make()


def test_numpy_numbers_are_arguments_too():
    model = BenchModel(np.int64(6), cost_us=np.float32(0), fanout=np.int8(2),
                       wait_us=np.int64(0))
    assert model.fanout == 2 and type(model.fanout) is int
    assert model.name == "BenchModel(n=6, cost=0.0us, fanout=2)"
    assert EmptyModel(3, per_step=np.int16(5)).period == 0.2
    rt = seer.SerialRuntime(model)
    rt.reset(seed=0)
    rt.step(model.sample_actions(0))
    assert rt.stats["emitted"] == 12
