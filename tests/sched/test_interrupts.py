"""Ctrl-C at any moment never wedges a runtime, nor hangs it (issue 33).

Each scenario runs in a child process (:mod:`tests.sched.interrupt_probe`) with a timeout:
a hang fails the test with the kind, the operation and the last injection begun, and the
child is killed. The rule the children check is in the probe's docstring. The whole file
is in the slow tier (it signals processes, about 10 min); the frame-by-frame rule it rests
on is checked in the fast tier by tests/test_interrupts.py.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from tests.sched import interrupt_probe as probe

KINDS = probe.KINDS
ROOT = probe.ROOT
SLOW_K_INJECTIONS = 300  # about this many K per operation in the K sweep


def run_probe(args: list[str], timeout: float,
              env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run the probe with ``args`` (and ``env`` added to the environment); a child still
    running after ``timeout`` seconds hung: it is killed and the test fails with its last
    lines."""
    try:
        done = subprocess.run([sys.executable, "-m", "tests.sched.interrupt_probe", *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(
            exc.stdout, bytes) else (exc.stdout or "")
        last = [line for line in out.splitlines() if line.startswith(("begin", "fired"))][-2:]
        pytest.fail(f"hang: probe {' '.join(args)} still running after {timeout:.0f} s; "
                    f"last: {' / '.join(last) or 'nothing'}", pytrace=False)
    return done.returncode, done.stdout, done.stderr


def check_sweep(args: list[str], timeout: float) -> int:
    """Run an injection sweep; fail with every failing injection (and where it fired).
    Returns the number of injections that fired."""
    rc, out, err = run_probe(args, timeout)
    lines = out.splitlines()
    fired: dict[str, str] = {}
    current = ""
    problems = []
    for line in lines:
        if line.startswith("begin "):
            current = line.split(" ", 3)[3]
        elif line.startswith("fired "):
            fired[current] = line.split()[2]
        elif line.startswith("result ") and " FAIL " in line:
            label, reason = line.split(" ", 3)[3].split(" FAIL ", 1)
            problems.append(f"{label} (fired at {fired.get(label, '?')}): {reason}")
    if "Timeout (0:" in err:  # faulthandler's dump: one injection hung in the child
        last = [line for line in lines if line.startswith(("begin", "fired"))][-2:]
        problems.append(f"hang in the child: {' / '.join(last)}; stacks: "
                        + " | ".join(s.strip() for s in err.splitlines()
                                     if s.strip().startswith("File"))[:1500])
    if not problems and rc != 0:
        problems.append(f"probe exited {rc}: {err.strip()[-800:]}")
    assert not problems, f"{len(problems)} injection(s) broke the rule:\n" + "\n".join(
        problems[:40])
    assert any(line.startswith("done ") for line in lines), out[-800:] + err[-800:]
    assert not any(line.startswith("result ") and " FAIL " in line for line in lines)
    return sum(1 for line in lines if line.startswith("result ") and " OK " in line)


def _injection_params() -> list:
    return [pytest.param(kind, op, id=f"{kind}-{op}") for kind in KINDS
            for op in probe.operations(kind)]


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("kind", "op"), _injection_params())
def test_a_ctrl_c_at_every_line_never_wedges_the_runtime(kind, op):
    assert check_sweep([kind, op, "lines"], timeout=800) > 0


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("kind", "op"), _injection_params())
def test_a_ctrl_c_at_a_stride_of_line_events_never_wedges_the_runtime(kind, op):
    rc, out, err = run_probe([kind, op, "count"], timeout=120)
    assert rc == 0, err
    count = int(out.split()[3])
    stride = max(1, count // SLOW_K_INJECTIONS)
    assert check_sweep([kind, op, f"1-{count}:{stride}"], timeout=800) > 0


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("kind", "op"), _injection_params())
def test_a_second_ctrl_c_at_every_line_of_the_recovery_never_wedges_the_runtime(kind, op):
    assert check_sweep([kind, op, "recovery"], timeout=500) > 0


def test_the_probe_counts_line_events_and_refuses_bad_arguments():
    rc, out, _ = run_probe(["serial", "step", "count"], timeout=60)
    assert rc == 0 and out.startswith("count serial step ")
    events, lines = int(out.split()[3]), int(out.split()[5])
    assert events >= lines > 10
    for args, message in ((["nope", "step", "1"], "unknown runtime kind 'nope'"),
                          (["serial", "jump", "1"], "unknown operation 'jump'"),
                          (["serial", "resize", "1"], "'serial' has no resize()"),
                          (["serial", "step", "0"], "bad K '0'"),
                          (["serial", "step", "lines:3/2"], "bad shard 'lines:3/2'"),
                          (["serial", "step", "recovery:x"], "bad shard 'recovery:x'")):
        rc, _, err = run_probe(args, timeout=60)
        assert rc != 0 and message in err, (args, err)


def test_the_probe_finds_a_broken_promise():
    """The probe can fail: with the guard switched off (``SEER_PROBE_UNGUARDED=1``: Python's
    own handler throughout, as before seer.interrupts), a Ctrl-C at the release of the
    operation lock wedges serial's step(), and the sweep says so."""
    rc, out, _ = run_probe(["serial", "step", "lines", "--max-failures", "1"], timeout=120,
                           env={"SEER_PROBE_UNGUARDED": "1"})
    assert rc != 0
    failures = [line for line in out.splitlines() if line.startswith("result ") and " FAIL "
                in line]
    assert failures and "wedged" in failures[0], out[-1500:]


def test_the_probe_finds_a_ctrl_c_raised_in_generated_code_of_seer():
    """The probe can fail on the recovery too: with Ctrl-C judged by file name only
    (``SEER_PROBE_BY_FILE_NAME=1``: a dataclass's generated ``__init__``, file
    ``<string>``, then looks like the model's code), a second Ctrl-C in the pool's
    ``WorkerStats()`` while threads are replaced raises there and leaves the runtime
    with fewer threads than it plans for, and the sweep says so."""
    rc, out, _ = run_probe(["seer", "step", "recovery", "--max-failures", "1"],
                           timeout=120, env={"SEER_PROBE_BY_FILE_NAME": "1"})
    assert rc != 0
    failures = [line for line in out.splitlines() if line.startswith("result ") and " FAIL "
                in line]
    assert failures and "seer.sched.pool" in failures[0], out[-1500:]


# -- storms -------------------------------------------------------------------------------
def check_storm(kind: str, seconds: float) -> None:
    result = probe.storm(kind, seconds, rng=random.Random(KINDS.index(kind)))
    assert result.returncode is not None, f"{kind}: {result.report}"
    assert result.returncode == 0 and result.report.startswith("storm ok"), (
        f"{kind}: rc={result.returncode}, {result.sent} SIGINTs sent: {result.report}")
    assert "Exception ignored" not in result.report, f"{kind}: {result.report}"
    assert result.sent > 0


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", KINDS)
def test_a_sigint_storm_never_wedges_or_hangs(kind):
    check_storm(kind, 15.0)


# -- drops after a failure ----------------------------------------------------------------
def _drop_params() -> list:
    return [pytest.param(kind, how, id=f"{kind}-{how}") for kind in KINDS
            for how in ("error", "interrupt")]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("kind", "how"), _drop_params())
def test_a_runtime_dropped_after_a_failed_step_frees_its_threads_without_the_collector(
        kind, how):
    rc, out, err = run_probe(["drop", kind, how], timeout=90)
    last = out.strip().splitlines()[-1] if out.strip() else "no output"
    stacks = " | ".join(line.strip() for line in err.splitlines()
                        if line.strip().startswith(("File", "Thread", "Current")))
    assert rc == 0 and last.startswith("drop ok"), (
        f"{last}; exit status {rc}" + (f"; hung (stacks: {stacks[:2000]})" if "Timeout (0:"
                                       in err else f"; stderr: {err.strip()[-600:]}"))


# The executor peer after a handler that never returns: tests/sched/test_faults.py, beside
# the pooled runtimes' test of the same.


def test_the_storm_driver_refuses_unknown_kinds():
    rc, _, err = run_probe(["--minutes", "0.01", "nope"], timeout=60)
    assert rc != 0 and "unknown runtime kind(s) ['nope']" in err


def test_probe_kinds_are_every_registered_seer_runtime():
    from seer.sched import RUNTIMES

    assert set(KINDS) == {n for n, c in RUNTIMES.items() if c.__module__.startswith("seer.")}
    assert {"serial", "seer", "executor", "optimistic"} <= set(KINDS)

