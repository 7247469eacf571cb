"""The tutorial's strategy (examples/locality_steal.py): serial-equivalent, every PEL item
to exactly one thread under contention, its script runs, the benchmark can import it,
and the audit catches the tutorial's claimer mistakes."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seer
from examples.locality_steal import LocalityRuntime, LocalitySteal, audit_claims, main
from examples.mistakes import FullChunksOnly, Overlapping, buggy
from seer.queues import ParallelExecutiveList
from seer.sched import RUNTIMES, register_runtime
from seer.testing import RandomModel, assert_equivalent, random_models
from tests.helpers import examples
from tests.queues.stress import run_threads

ROOT = Path(__file__).resolve().parents[2]

# Importing the example registered "locality" for the whole process; other test files
# (collected after this one) expect the stock runtimes, so it is registered only while a
# test of this file runs.
RUNTIMES.pop("locality", None)


@pytest.fixture(autouse=True)
def locality_registered():
    register_runtime(LocalityRuntime)
    yield
    RUNTIMES.pop("locality", None)


def test_locality_is_a_registered_runtime():
    rt = seer.make_runtime(RandomModel(10), "locality", threads=2)
    try:
        assert isinstance(rt, LocalityRuntime)
        assert rt.stats["runtime"] == "locality" and rt.stats["assignment"] == "locality"
    finally:
        rt.close()


@pytest.mark.parametrize("lookahead", [0.25, 0.0])
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_locality_matches_serial(threads, lookahead):
    model = RandomModel(70, seed=5, fanout=2, p_fan_in=0.5, lookahead=lookahead)
    assert_equivalent(lambda m: seer.make_runtime(m, "locality", threads=threads), model,
                      seeds=[0, 1], steps=4)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=random_models(30), threads=st.sampled_from([2, 3, 4]))
def test_locality_matches_serial_on_random_models(model, threads):
    assert_equivalent(lambda m: seer.make_runtime(m, "locality", threads=threads), model,
                      seeds=[0], steps=3, min_events=0)


@pytest.mark.parametrize("path", ["fast", "public"])
@pytest.mark.parametrize("threads", [2, 3, 4])
def test_locality_claims_hand_out_every_item_exactly_once(path, threads):
    windows = 40 if path == "fast" else 8
    assignment = LocalitySteal()
    pel = ParallelExecutiveList.create(4096, segments=threads)
    claimers = [assignment.claimer(pel, t, threads, path) for t in range(threads)]
    claimed = [[] for _ in range(threads)]
    published = []
    start, end = threading.Barrier(threads), threading.Barrier(threads)
    rng = np.random.default_rng(threads)

    def work(t):
        c = claimers[t]
        for w in range(windows):
            if t == 0:
                ready = np.unique(rng.integers(0, 3000, 50 + 40 * (w % 30)))
                # uneven homes (home = e % T): most ids moved to thread 0's home, so the
                # other threads must steal; the offset keeps every id's home
                ready = np.unique(np.where(ready % 7 == 0, ready, ready - ready % threads))
                ready += 12_000 * w
                published.extend(ready.tolist())
                assignment.publish(pel, ready, threads, 12_000 * windows)
            start.wait()  # stands in for the pool's hand-off
            c.reset(threads)
            while (r := c.claim()) is not None:
                claimed[t].extend(int(x) for x in pel.items[r[0]:r[1]])
            end.wait()  # stands in for the window barrier
        return c.steals

    steals = run_threads(threads, work)
    got = sorted(x for part in claimed for x in part)
    assert got == sorted(published)  # nothing lost, nothing claimed twice
    assert sum(steals) > 0


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_audit_passes_the_right_claimer(threads):
    claims, steals = audit_claims(LocalitySteal(), threads, windows=20, seed=threads)
    assert claims > steals > 0


def test_audit_catches_the_tutorial_mistakes():
    with pytest.raises(AssertionError, match=r"handed out more than once"):
        audit_claims(buggy(Overlapping), 1, windows=1)
    with pytest.raises(AssertionError, match=r"0 handed out more than once .* [1-9]\d* never"):
        audit_claims(buggy(FullChunksOnly), 2, windows=40)


def test_the_script_runs_quick(tmp_path, capsys):
    assert main(["--quick", "--out-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1. serial-equivalent" in out and "locality(2)" in out
    for name in ("trace-seer.json", "trace-locality.json", "locality-vs-seer.png"):
        assert (tmp_path / name).stat().st_size > 0
    doc = json.loads((tmp_path / "trace-locality.json").read_text())
    assert any(e["name"] == "run" for e in doc["traceEvents"])


def test_bench_runtimes_imports_the_strategy(tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, "-m", "bench.bench_runtimes", "--debug-single-value",
                           "--quiet", "--entities", "60", "--costs", "0",
                           "--import", "examples.locality_steal", "--runtimes", "serial",
                           "locality:2", "-o", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    names = {b["metadata"]["name"] for b in json.loads(out.read_text())["benchmarks"]}
    assert names == {"step-n60-cost0us-serial", "step-n60-cost0us-locality(2)"}
    # without the import, the name is refused up front, with a hint
    proc = subprocess.run([sys.executable, "-m", "bench.bench_runtimes", "--debug-single-value",
                           "--entities", "60", "--costs", "0", "--runtimes", "locality:2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "--import MODULE" in proc.stderr
