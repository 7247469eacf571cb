"""No verdict about nothing: every tool that judges or measures a model refuses a run in
which no event ran, says how to fix it, and warns when so few ran that the verdict means
little (issue: a newcomer's model without ``sample_actions`` was "OK" on every runtime)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import seer
from seer.benchmark import compare
from seer.errors import FEW_EVENTS_PER_STEP, check_events_ran
from seer.testing import assert_equivalent, verify
from tests.readme_model import write_flock

SEER = Path(sys.executable).parent / "seer"


class Quiet(seer.Model):
    """Keeps the contract, but nothing ever emits an event: no actions, no initial events."""

    kinds = ("move",)
    action_kind = "move"
    lookahead = 0.5
    fields = {"pos": ((), np.float64)}  # noqa: RUF012

    def on_move(self, ctx, event):
        ctx.row.pos += event.payload

    def outputs(self, entity, state, start):
        return np.zeros(1, np.float32), 0.0, False, False, {}


class Breaks(Quiet):
    """Writes a neighbour's row: a contract break that only shows when events run."""

    def on_move(self, ctx, event):
        ctx.snapshot.pos[(ctx.id + 1) % self.n_entities] += 1.0


class Sparse(Quiet):
    """One event every other step: fewer than FEW_EVENTS_PER_STEP a step."""

    def sample_actions(self, step):
        return {0: 1.0} if step % 2 == 0 else {}


def test_check_events_ran_refuses_zero_warns_below_the_threshold_and_passes_above():
    with pytest.raises(seer.NoEventsError, match="sample_actions"):
        check_events_ran(0, 10, "x ran 10 step(s)", "M")
    with pytest.warns(seer.FewEventsWarning, match="too few"):
        assert "too few" in check_events_ran(5, 10, "x ran 10 step(s)", "M")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_events_ran(int(FEW_EVENTS_PER_STEP * 10), 10, "x", "M") == ""
        assert "too few" in check_events_ran(1, 10, "x", "M", warn=False)
    assert issubclass(seer.NoEventsError, seer.ModelError)


def test_verify_gives_no_verdict_when_no_event_ran():
    report = verify(Quiet(20), ["seer(2)"], steps=3)
    assert not report.ok and report.no_events and not report.results
    text = str(report)
    assert "NOT VERIFIED" in text and "OK" not in text.replace("NOT", "")
    assert "sample_actions" in text


def test_verify_with_actions_finds_what_no_events_hid():
    # The same broken handler, once it runs, is named by the debug run.
    report = verify(Breaks(20), ["seer(2)"], steps=2, actions=lambda step: [1.0] * 20)
    assert not report.ok and report.contract_error is not None and not report.no_events


def test_verify_warns_in_its_report_when_few_events_ran():
    report = verify(Sparse(20), ["seer(2)"], steps=4)
    assert report.ok and report.events == 2
    assert any("too few" in w for w in report.warnings)
    assert "WARNING: only 2 event(s)" in str(report)


def test_verify_with_every_runtime_skipped_is_not_ok():
    def refuse(model):
        raise seer.ModelError("not this one")

    report = verify(Sparse(20), [("picky(2)", refuse)], steps=4)
    assert report.skipped and not report.results and not report.ok
    assert "NOT VERIFIED: no runtime could be compared" in str(report)


def test_assert_equivalent_refuses_runs_without_events_unless_told_they_may_be_empty():
    make = lambda m: seer.make_runtime(m, "seer", threads=2)  # noqa: E731
    with pytest.raises(seer.NoEventsError, match="sample_actions"):
        assert_equivalent(make, Quiet(10), seeds=[0], steps=2)
    assert_equivalent(make, Quiet(10), seeds=[0], steps=2, min_events=0)
    with pytest.warns(seer.FewEventsWarning):
        assert_equivalent(make, Sparse(10), seeds=[0, 1], steps=4)
    with pytest.raises(seer.NoEventsError, match="min_events=100"):
        assert_equivalent(make, Sparse(10), seeds=[0], steps=4, min_events=100)


def test_compare_refuses_to_time_empty_steps_and_flags_sparse_ones():
    with pytest.raises(seer.NoEventsError, match="the benchmark timed 2 step"):
        compare(lambda: Quiet(10), ["seer:2"], steps=2, rounds=1, ceiling=False)
    result = compare(lambda: Sparse(10), ["seer:2"], steps=4, rounds=1, ceiling=False)
    assert result.warnings and any("too few" in line for line in result.table())


def test_stpa_preflight_refuses_a_model_without_events():
    from seer.stpa.preflight import run_preflight

    with pytest.raises(seer.NoEventsError, match="STPA's preflight"):
        run_preflight(Quiet(10), probe=2)
    with pytest.raises(seer.NoEventsError):
        seer.make_runtime(Quiet(10), "seer", threads="auto")


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """A directory outside the repository holding README's model and one without events."""
    folder = write_flock(tmp_path_factory.mktemp("newcomer"))
    (folder / "quiet.py").write_text("from flock import Flock\n\n\nclass Quiet(Flock):\n"
                                     "    sample_actions = None\n")
    return folder


def _seer(folder, *args):
    return subprocess.run([str(SEER), *args], cwd=folder, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("command", [
    ["verify", "quiet:Quiet", "n_entities=30", "--steps", "2", "--runtimes", "seer:2"],
    ["bench", "quiet:Quiet", "n_entities=30", "--rounds", "1", "--steps", "2",
     "--runtimes", "serial", "seer:2"],
    ["trace", "quiet:Quiet", "n_entities=30", "--threads", "2", "--steps", "1"],
    ["demo", "--model", "quiet:Quiet", "n_entities=30", "--steps", "2"],
    ["stpa", "predict", "quiet:Quiet", "n_entities=30"],
], ids=lambda c: " ".join(c[:2]))
def test_every_command_refuses_a_model_without_events_with_the_fix(outside, command):
    run = _seer(outside, *command)
    assert run.returncode in (1, 2), run.stdout + run.stderr
    said = run.stdout + run.stderr
    assert "not one event ran" in said and "sample_actions(step)" in said, said
    assert "OK:" not in said and "bit-identical: yes" not in said
