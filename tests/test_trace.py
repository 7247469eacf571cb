"""Execution traces: every event accounted for, per-thread slices that never overlap,
valid Chrome Trace Event JSON, and results unchanged."""

import itertools
import json

import pytest

import seer
from seer.testing import RandomModel, assert_equivalent
from seer.trace import Trace, plot_gantt

RUNTIMES = ["serial", "seer", "static", "static-block", "global", "executor"]


def traced(runtime, threads=3, steps=3, model=None):
    model = model or RandomModel(60, seed=4, fanout=2, lookahead=0.5)
    rt = seer.make_runtime(model, runtime, threads=None if runtime == "serial" else threads,
                           trace=True)
    rt.reset(1)
    rt.trace.clear()  # count only the steps' events
    before = rt.events_run
    for t in range(steps):
        rt.step(model.sample_actions(t))
    events = rt.events_run - before
    rt.close()
    return rt.trace, events


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_every_event_is_in_exactly_one_run_slice(runtime):
    trace, events = traced(runtime)
    runs = trace.runs()
    assert sum(r["events"] for r in runs) == events > 0
    for r in runs:
        assert r["events"] >= 1 and r["first"] <= r["last"] and r["start"] <= r["end"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_slices_of_one_thread_never_overlap(runtime):
    trace, _ = traced(runtime)
    for t in range(len(trace.threads)):
        spans = sorted((s, e) for th, name, s, e, _ in trace.slices()
                       if th == t and name in ("run", "wait", "outputs"))
        for (_, e1), (s2, _) in itertools.pairwise(spans):
            assert e1 <= s2, f"thread {t}: slices overlap"


def test_seer_trace_shows_windows_claims_waits_and_wake_ups():
    trace, _ = traced("seer", threads=2)
    names = {r[1] for records in trace.threads for r in records}
    assert {"run", "window", "claim", "wake", "ready entities"} <= names
    assert trace.names[0] and trace.names[1].startswith("seer-seer[steal]-")
    windows = trace.slices("window")
    assert windows and all(args["ready"] >= 1 for *_, args in windows)


def test_chrome_trace_event_format():
    trace, _ = traced("seer", threads=2)
    doc = json.loads(json.dumps(trace.to_chrome()))
    events = doc["traceEvents"]
    assert {e["ph"] for e in events} >= {"X", "i", "C", "M"}
    for e in events:
        assert {"name", "ph", "pid", "tid"} <= set(e)
        if e["ph"] in ("i", "C"):
            assert e["ts"] >= 0  # recorded after the trace's start
    # the slices as recorded, in µs from the trace's start (to_chrome would hide a slice
    # that ends before it starts: it writes max(duration, 0))
    slices = [(e["tid"], e["name"], e["ts"], e["dur"]) for e in events if e["ph"] == "X"]
    assert slices == [(t, name, (s - trace.start_ns) / 1e3, (end - s) / 1e3)
                      for t, name, s, end, _ in trace.slices()]
    assert all(ts >= 0 and dur >= 0 for _, _, ts, dur in slices)
    runs = [e for e in events if e["ph"] == "X" and e["name"] == "run"]
    assert all({"entity", "events", "first", "last"} <= set(e["args"]) for e in runs)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_tracing_never_changes_results(runtime):
    model = RandomModel(50, seed=7, fanout=3, lookahead=0.0)
    threads = None if runtime == "serial" else 3  # serial runs on its one thread
    assert_equivalent(lambda m: seer.make_runtime(m, runtime, threads=threads, trace=True),
                      model, seeds=[2], steps=3)


def test_gantt_and_save(tmp_path):
    trace, _ = traced("seer", threads=2)
    png = plot_gantt(trace, tmp_path / "t.png")
    assert png.stat().st_size > 1000
    saved = trace.save(tmp_path / "t.json")
    assert json.loads(saved.read_text())["traceEvents"]


def test_a_trace_object_can_be_shared_by_the_caller():
    trace = Trace()
    rt = seer.make_runtime(RandomModel(20), "seer", threads=2, trace=trace)
    rt.reset(0)
    rt.step(rt.model.sample_actions(0))
    rt.close()
    assert rt.trace is trace and trace.runs()


# -- the parallelism profile -----------------------------------------------------------------
def _synthetic(windows):
    """A trace of one thread: each window a list of (entity, run µs), back to back."""
    trace = Trace()
    trace.ensure(1)
    t = 0
    for runs in windows:
        start = t
        for entity, us in runs:
            trace.slice(0, "run", t, t + int(us * 1e3), entity=entity, events=1)
            t += int(us * 1e3)
        trace.slice(0, "window", start, t, ready=len(runs), bound=(0.0, -1))
        t += 5_000  # the coordinator's own time between windows
    return trace


def test_profile_list_schedules_each_window_on_t_workers():
    from seer.trace import parallelism_profile

    # window 0: 4 runs of 10 µs; window 1: one of 30 µs and two of 10 µs
    trace = _synthetic([[(0, 10), (1, 10), (2, 10), (3, 10)], [(4, 30), (5, 10), (6, 10)]])
    p = parallelism_profile(trace, (1, 2, 4), barrier_us=1.0)
    assert (p.windows, p.runs, p.events) == (2, 7, 7)
    assert p.work_us == pytest.approx(90) and p.span_us == pytest.approx(40)
    assert p.makespan_us[1] == pytest.approx(90 + 2)
    assert p.makespan_us[2] == pytest.approx(20 + 30 + 2)  # 2 per worker; 30 | 10+10
    assert p.makespan_us[4] == pytest.approx(10 + 30 + 2)
    assert p.speedup[2] == pytest.approx(90 / 52)
    assert p.limit == pytest.approx(90 / 42)
    assert p.chain[0][:2] == (1, 4) and p.chain[0][3] == pytest.approx(30 / 40)
    assert p.runtime_us == pytest.approx(0.0)  # windows hold nothing but their runs here
    text = str(p)
    assert "2 windows, 7 entity runs" in text and "entity 4 ran 30.0 µs" in text


def test_profile_of_a_real_model_is_bounded_by_t_and_by_the_span():
    from seer.trace import parallelism_profile

    model = RandomModel(120, seed=3, lookahead=0.5, cost_us=5.0)
    with seer.make_runtime(model, "seer", threads=1, trace=True) as rt:
        rt.reset(0)
        for t in range(3):
            rt.step(model.sample_actions(t))
        p = parallelism_profile(rt.trace, (1, 2, 4, 64), barrier_us=0.0)
    assert p.events == rt.events_run and p.windows >= 3
    assert p.speedup[1] == pytest.approx(1.0)
    for t in (2, 4, 64):
        assert 1.0 <= p.speedup[t] <= t + 1e-9
    assert p.speedup[2] <= p.speedup[4] <= p.speedup[64] <= p.limit + 1e-9
    assert p.runtime_us > 0  # on one thread, the windows hold the runtime's own time too


def test_profile_needs_windows_and_sane_arguments():
    from seer.trace import parallelism_profile

    model = RandomModel(10, seed=1)
    with seer.make_runtime(model, "serial", trace=True) as rt:
        rt.reset(0)
        rt.step(model.sample_actions(0))
        with pytest.raises(seer.ModelError, match="needs a trace with windows"):
            parallelism_profile(rt.trace)
    trace = _synthetic([[(0, 1)]])
    with pytest.raises(seer.ModelError, match="threads must be ints >= 1"):
        parallelism_profile(trace, (0, 2))
    with pytest.raises(seer.ModelError, match="barrier_us"):
        parallelism_profile(trace, barrier_us=-1)


def test_seer_trace_prints_the_profile(tmp_path, capsys):
    from seer import cli

    out = tmp_path / "t.json"
    assert cli.main(["trace", "bench", "n_entities=200", "fanout=2", "--steps", "1", "-o", str(out),
                     "--parallelism", "2", "8"]) == 0
    text = capsys.readouterr().out
    assert "parallelism profile of" in text and "seer(1)" in text
    assert "     2 threads" in text and "     8 threads" in text and "the chain" in text
