"""The tutorial's planted bugs: found fast, replayed exactly, fixed; explained as a trace
and a graph; from the command line and from pytest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from seer.check import explore, replay, run_threads
from seer.check.cli import main as check_main
from seer.check.examples import FreeList, SpscRing, free_list_check, spsc_check
from seer.queues.atomic import RELAXED, RELEASE


def test_the_planted_aba_is_found_in_under_a_second_with_one_preemption():
    setup, a, b, invariant = free_list_check(tagged=False)
    started = time.perf_counter()
    report = explore(setup, a, b, invariant=invariant, raises=False)
    assert time.perf_counter() - started < 1.0
    assert report.failure is not None and report.failure.preemptions == 1
    assert "not every node once" in report.failure.message or "twice" in report.failure.message


def test_tagging_the_head_fixes_it():
    setup, a, b, invariant = free_list_check(tagged=True)
    report = explore(setup, a, b, invariant=invariant)
    assert report.exhaustive and report.failure is None


def test_the_relaxed_publication_is_found_in_weak_mode_only():
    setup, producer, consumer, _ = spsc_check(publish=RELAXED)
    sc = explore(setup, producer, consumer)
    assert sc.failure is None and sc.exhaustive
    weak = explore(setup, producer, consumer, weak=True, raises=False).failure
    assert weak is not None and "stale" in weak.message
    assert weak.schedule.startswith("weak:")
    again = replay(weak.schedule, setup, producer, consumer, raises=False).failure
    # the first line: under pytest, the assert's own explanation names objects by address
    assert again is not None
    assert again.message.splitlines()[0] == weak.message.splitlines()[0]
    assert [str(s) for s in again.steps] == [str(s) for s in weak.steps]
    setup, producer, consumer, _ = spsc_check(publish=RELEASE)
    fixed = explore(setup, producer, consumer, weak=True)
    assert fixed.failure is None and fixed.exhaustive


def test_the_examples_run_on_real_threads_too():
    fl = FreeList(64, tagged=True)

    def churn(i):
        h = fl.handle()
        for _ in range(200):
            node = h.pop()
            if node is not None:
                h.push(node)

    run_threads(2, churn)
    ring = SpscRing(4)
    got = []

    def side(i):
        h = ring.producer()
        if i == 0:
            for v in range(1, 301):
                while not h.try_push(v):
                    pass
        else:
            while len(got) < 300:
                v = h.try_pop()
                if v is not None:
                    got.append(v)

    run_threads(2, side)
    assert got == list(range(1, 301))


def test_a_failure_as_a_perfetto_trace_and_a_graph(tmp_path):
    setup, a, b, invariant = free_list_check(tagged=False)
    failure = explore(setup, a, b, invariant=invariant, raises=False).failure
    path = failure.to_trace().save(tmp_path / "aba.json")
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"T0", "T1"} <= names
    slices = [e for e in events if e["ph"] == "X"]
    assert any(e["name"].startswith("cas freelist[0]") for e in slices)
    starts = {e["id"] for e in events if e["ph"] == "s"}
    ends = {e["id"] for e in events if e["ph"] == "f"}
    assert starts and starts == ends  # every reads-from arrow has both ends
    dot = failure.to_dot()
    assert dot.startswith("digraph") and "rf" in dot and "->" in dot


def test_seer_check_on_the_command_line(capsys, tmp_path):
    assert check_main(["--example", "aba", "--trace", str(tmp_path / "t.json")]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and (tmp_path / "t.json").exists()
    schedule = out.split("schedule (1 preemption): ")[1].split("\n")[0].strip("'")
    assert check_main(["--example", "aba", "--replay", schedule]) == 1
    assert check_main(["--example", "aba-fixed"]) == 0
    assert check_main(["pel", "arena"]) == 0
    out = capsys.readouterr().out
    assert "pel/double-claim" in out and "arena/late-write" in out
    assert check_main(["nosuch"]) == 2


def test_pytest_replays_a_schedule_from_the_command_line(tmp_path):
    test = tmp_path / "test_aba.py"
    test.write_text(
        "from seer.check import explore\n"
        "from seer.check.examples import free_list_check\n"
        "def test_aba():\n"
        "    setup, a, b, inv = free_list_check(tagged=False)\n"
        "    r = explore(setup, a, b, invariant=inv, raises=False)\n"
        "    print('STRATEGY', r.strategy, r.schedules, r.failure.schedule)\n")
    setup, a, b, invariant = free_list_check(tagged=False)
    schedule = explore(setup, a, b, invariant=invariant, raises=False).failure.schedule
    env = {k: v for k, v in os.environ.items() if k != "SEER_CHECK_REPLAY"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                          str(test), f"--seer-replay={schedule}"], capture_output=True,
                         text=True, cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"STRATEGY replay 1 {schedule}" in run.stdout


def test_python_dash_m_seer_check_runs(tmp_path):
    run = subprocess.run([sys.executable, "-m", "seer.check", "--example", "relaxed"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 1 and "stale" in run.stdout
    assert Path(tmp_path).exists()


# -- Chase-Lev (Lê et al., PPoPP 2013) --------------------------------------------------------
def _chase_lev(bug=None, **options):
    from seer.check.examples import chase_lev_check

    setup, owner, thief, invariant = chase_lev_check(bug=bug)
    return explore(setup, owner, thief, invariant=invariant, raises=False, **options)


def test_chase_lev_as_published_passes_in_weak_mode():
    report = _chase_lev(weak=True, strategy="dpor")
    assert report.verdict == "PASSED" and report.exhaustive
    assert _chase_lev(weak=False).verdict == "PASSED"


def test_chase_lev_release_store_and_seq_cst_load_is_store_buffering():
    """Take's release store of bottom and seq_cst load of top (no fence), with seq_cst
    loads in steal: RC11 lets the load pass the store; SC cannot show it."""
    assert _chase_lev("sb").verdict == "PASSED"
    failure = _chase_lev("sb", weak=True).failure
    assert failure is not None and "taken twice" in failure.message
    assert failure.preemptions == 0 and failure.stale_reads > 0  # not a sequential bug


def test_chase_lev_steal_without_its_fence_double_takes_in_weak_mode():
    assert _chase_lev("steal-fence").verdict == "PASSED"
    failure = _chase_lev("steal-fence", weak=True).failure
    assert failure is not None and "taken twice" in failure.message
    assert failure.stale_reads > 0


def test_chase_lev_last_item_without_the_cas_double_takes():
    failure = _chase_lev("last-no-cas", weak=True).failure
    assert failure is not None and "taken twice" in failure.message
    from seer.check.examples import chase_lev_check

    setup, owner, thief, invariant = chase_lev_check(bug="last-no-cas")
    again = replay(failure.schedule, setup, owner, thief, invariant=invariant, raises=False)
    assert again.verdict == "FAILED" and "taken twice" in again.failure.message
    setup, owner, thief, invariant = chase_lev_check()
    fixed = replay(failure.schedule, setup, owner, thief, invariant=invariant, raises=False,
                   then="explore", preemptions=1)
    assert fixed.failure is None and fixed.verdict == "PASSED"


def test_chase_lev_refuses_an_unknown_bug():
    import pytest

    from seer.check.examples import ChaseLev

    with pytest.raises(ValueError, match="no planted bug"):
        ChaseLev(bug="typo")
