"""Verdicts that never say more than was explored (issue 46)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from seer.check import ReplayError, explore, name_words, replay, yield_now
from seer.check.cli import INCOMPLETE, main
from seer.check.examples import free_list_check, spsc_check
from seer.queues import AtomicWords
from seer.queues.atomic import RELAXED, RELEASE


def test_a_dfs_stopped_by_its_cap_is_incomplete_and_never_runs_past_it():
    setup, a, b, invariant = free_list_check(tagged=True)
    full = explore(setup, a, b, invariant=invariant, preemptions=2, schedules=10**6)
    assert full.complete and "PASSED" in str(full) and full.schedules > 20
    for cap in (1, 7, full.schedules - 1):
        report = explore(setup, a, b, invariant=invariant, preemptions=2, schedules=cap)
        assert report.schedules == cap and not report.complete
        assert report.verdict == "INCOMPLETE" and "INCOMPLETE" in str(report)
    exact = explore(setup, a, b, invariant=invariant, preemptions=2, schedules=full.schedules)
    assert exact.complete and exact.schedules == full.schedules


def test_a_dpor_stopped_by_its_cap_is_incomplete():
    setup, a, b, invariant = free_list_check(tagged=True)
    report = explore(setup, a, b, invariant=invariant, strategy="dpor", schedules=5)
    assert "INCOMPLETE" in str(report) and report.schedules == 5


def test_weak_failures_count_stale_reads_beside_preemptions():
    setup, producer, consumer, invariant = spsc_check(publish=RELAXED)
    failure = explore(setup, producer, consumer, invariant=invariant, weak=True,
                      raises=False).failure
    assert failure.stale_reads >= 1
    assert f"{failure.stale_reads} stale read" in str(failure)


def test_to_dot_draws_rf_mo_and_fr_and_marks_synchronising_reads():
    setup, producer, consumer, invariant = spsc_check(publish=RELAXED)
    failure = explore(setup, producer, consumer, invariant=invariant, weak=True,
                      raises=False).failure
    dot = failure.to_dot()
    assert 'label="mo"' in dot and 'label="fr"' in dot and 'label="rf"' in dot
    setup, producer, consumer, _ = spsc_check(publish=RELEASE)
    published = explore(setup, producer, consumer, invariant=lambda s: False, weak=True,
                        raises=False).failure  # the consumer acquires the released tail
    assert 'rf (sync)' in published.to_dot()


class Flag:
    def __init__(self) -> None:
        self.w = name_words(AtomicWords(2, name="flag"), "ready", "data")


def test_words_can_be_named_one_by_one():
    def writer(s):
        s.w.accessor().store(0, 1)

    report = explore(Flag, writer, invariant=lambda s: False, raises=False)
    assert "ready" in report.failure.interleaving()


def test_a_spin_without_yield_now_is_named_with_the_fix():
    def spin(s):
        acc = s.w.accessor()
        while acc.load(0) == 0:
            pass

    def idle(s):
        s.w.accessor().load(1)

    report = explore(Flag, spin, idle, max_steps=300, raises=False)
    assert report.failure.kind == "step limit"
    assert "yield_now()" in report.failure.message and "T0 (ready)" in report.failure.message

    def polite(s):
        acc = s.w.accessor()
        while acc.load(0) == 0:
            yield_now()

    def setter(s):
        s.w.accessor().store(0, 1)

    assert explore(Flag, polite, setter).complete


def test_replay_tells_a_pass_from_a_misfit_and_explores_from_the_failing_point():
    buggy = free_list_check(tagged=False)
    fixed = free_list_check(tagged=True)
    schedule = explore(*buggy[:3], invariant=buggy[3], raises=False).failure.schedule
    again = replay(schedule, *buggy[:3], invariant=buggy[3], raises=False)
    assert again.verdict == "FAILED" and again.fit
    on_fixed = replay(schedule, *fixed[:3], invariant=fixed[3], raises=False)
    assert on_fixed.failure is None and on_fixed.verdict in ("PASSED", "MISFIT")
    assert "PASSED" in str(on_fixed) or "did NOT fit" in str(on_fixed)
    explored = replay(schedule, *fixed[:3], invariant=fixed[3], then="explore", raises=False)
    assert explored.verdict == "PASSED" and explored.schedules >= 1
    assert replay("sc:1,1,1,1,1,1", *fixed[:3], invariant=fixed[3],
                  raises=False).verdict == "MISFIT"
    try:
        replay("sc:1,1,1,1,1,1", *fixed[:3], invariant=fixed[3])
    except ReplayError as exc:
        assert "fits only its first" in str(exc)
    else:
        raise AssertionError("a misfit with raises=True must raise ReplayError")


CHECK_FILE = textwrap.dedent('''
    from seer.queues import AtomicWords
    from seer.queues.atomic import RELEASE, SEQ_CST

    class SB:
        def __init__(self):
            self.w = AtomicWords(2, name="sb")
            self.r = [None, None]

    def side(i):
        def run(s):
            acc = s.w.accessor()
            acc.store(i, 1, RELEASE)          # the bug: release, not seq_cst
            s.r[i] = acc.load(1 - i, SEQ_CST)
        return run

    def store_buffering():
        return SB, side(0), side(1), lambda s: s.r != [0, 0]
''')


def test_seer_check_runs_a_users_own_check(tmp_path, capsys):
    path = tmp_path / "mine.py"
    path.write_text(CHECK_FILE)
    assert main([f"{path}::store_buffering"]) == 0  # sequentially consistent: passes
    assert main([f"{path}::store_buffering", "--weak"]) == 1  # RC11: store buffering
    assert "FAILED" in capsys.readouterr().out
    assert main([f"{path}::store_buffering", "--preemptions", "3", "--schedules",
                 "2"]) == INCOMPLETE
    assert "INCOMPLETE" in capsys.readouterr().out
    assert main([f"{path}::store_buffering", "--strategy", "random", "--seed", "3",
                 "--weak", "--schedules", "200"]) == 1
    assert main([f"{path}::nothing"]) == 2
    sys.path.insert(0, str(tmp_path))
    try:
        assert main(["mine:store_buffering", "--weak", "--strategy", "dpor"]) == 1
    finally:
        sys.path.remove(str(tmp_path))


def test_the_cli_exit_code_for_incomplete_is_distinct():
    out = subprocess.run([sys.executable, "-m", "seer.check", "--example", "aba-fixed",
                          "--schedules", "3"], capture_output=True, text=True)
    assert out.returncode == INCOMPLETE and "INCOMPLETE" in out.stdout


def test_fence_on_every_path():
    words = AtomicWords(1)
    for path in ("fast", "public"):
        acc = words.accessor(path)
        acc.fence()
        acc.fence(RELEASE)
    assert int(words.array[0]) == 0

