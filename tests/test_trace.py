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
