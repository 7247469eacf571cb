"""bench.handler_time: CPU split into handlers, outputs and the rest."""

import pytest

import seer
from bench import handler_time
from bench.bench_runtimes import make_model
from bench.manycore import state_digest


def _digest(model, steps=3):
    rt = seer.make_runtime(model, "seer", threads=2)
    try:
        rt.reset(seed=1)
        for t in range(steps):
            rt.step(model.sample_actions(t))
        return state_digest(rt)
    finally:
        rt.close()


def test_timing_a_model_changes_no_result():
    plain = make_model("pcs", 64, 15.0, 1)
    timed = handler_time.timed_model(make_model("pcs", 64, 15.0, 1))
    assert type(timed).__name__ == "TimedPCS" and isinstance(timed, type(plain))
    assert _digest(timed) == _digest(plain)


def test_smoke_run_splits_every_setting():
    result = handler_time.measure("pcs", 64, 15.0, 2, rounds=1, steps=2)
    assert list(result["settings"]) == ["serial", "seer(1)", "seer(2)",
                                        "2 independent runs"]
    for r in result["settings"].values():
        assert 0 < r["handlers_s"] < r["cpu_s"] and 0 < r["outputs_s"] < r["cpu_s"]
    text = "\n".join(handler_time.section(result))
    assert "| seer(2) |" in text and "in handlers" in text


def test_refuses_one_thread():
    with pytest.raises(SystemExit):
        handler_time.main(["--threads", "1"])
