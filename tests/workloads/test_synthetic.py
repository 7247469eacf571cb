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


def test_synthetic_models_reject_bad_parameters():
    with pytest.raises(seer.ModelError, match=r"fanout must be in 0\.\.16, got 17"):
        BenchModel(5, fanout=17)
    with pytest.raises(seer.ModelError, match=r"per_step must be >= 1, got 0"):
        EmptyModel(5, per_step=0)
    with pytest.raises(seer.ModelError, match="busy-work cost must be a finite number"):
        BenchModel(5, cost_us=-1)
