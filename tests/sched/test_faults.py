"""Fault injection: misuse from several threads, runaway steps, failures in one window.

Every scenario is built with barriers and events (no sleeps deciding the outcome) and has
a timeout, so a hang fails the test instead of stalling CI.
"""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

import seer
from seer.testing import RandomModel

RUNTIMES = ["serial", "seer", "static", "static-block", "global", "executor", "optimistic"]
PARALLEL = [r for r in RUNTIMES if r != "serial"]
WAIT = 20.0  # seconds any scenario may wait for a thread before it counts as a hang


def threads_for(runtime: str, threads: int = 2) -> int | None:
    """``threads`` for a parallel runtime; None (its one thread) for serial, which refuses
    any other count."""
    return None if runtime == "serial" else threads


class Gate(seer.Model):
    """Entity 0's handler, on the step given by ``hold_step``, signals ``inside`` and
    blocks until ``release`` is set: a step that is reliably still running."""

    kinds = ("tick",)
    fields = {"x": ((), np.int64)}  # noqa: RUF012
    lookahead = 1.0

    def __init__(self, n: int = 12) -> None:
        super().__init__(n)
        self.inside = threading.Event()
        self.release = threading.Event()
        self.hold_step = 1

    def init_entity(self, ctx):
        ctx.emit(ctx.id, 0.5, "tick")

    def on_tick(self, ctx, event):
        ctx.row.x += int(ctx.now * 10) + ctx.id
        if ctx.id == 0 and int(ctx.now) == self.hold_step:
            self.inside.set()
            assert self.release.wait(WAIT), "the test never released the gate"
        ctx.emit(ctx.id, 1.0, "tick")

    def outputs(self, entity, state, start):
        return int(state.x[entity]), 0.0, False, False, {}


def _state(rt):
    return rt.state.x.tobytes()


def _reference(steps: int) -> bytes:
    ref = seer.SerialRuntime(Gate())
    ref.model.release.set()
    ref.reset(0)
    for _ in range(steps):
        ref.step()
    return _state(ref)


def _in_background(fn):
    """Run ``fn`` on a thread; returns a join() that re-raises its exception."""
    box: list = []

    def body():
        try:
            box.append(("ok", fn()))
        except BaseException as exc:  # handed to the test thread
            box.append(("error", exc))

    t = threading.Thread(target=body)
    t.start()

    def join():
        t.join(WAIT)
        assert not t.is_alive(), "the background operation hung"
        kind, value = box[0]
        if kind == "error":
            raise value
        return value

    return join


OPERATIONS = [(r, op) for r in RUNTIMES for op in ("step", "reset", "resize", "close")
              if not (r == "serial" and op == "resize")]  # serial has no threads to resize


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("runtime", "second"), OPERATIONS)
def test_a_second_operation_during_a_step_is_refused_at_once(runtime, second):
    model = Gate()
    rt = seer.make_runtime(model, runtime, threads=threads_for(runtime, 3))
    try:
        rt.reset(0)
        rt.step()  # step 0
        join = _in_background(rt.step)  # step 1 blocks inside entity 0's handler
        assert model.inside.wait(WAIT)
        call = {"step": rt.step, "reset": lambda: rt.reset(1),
                "resize": lambda: rt.resize(2), "close": rt.close}[second]
        with pytest.raises(seer.RuntimeStateError,
                           match=rf"{second}\(\) refused: step\(\) is already running"):
            call()
        model.release.set()
        join()
        rt.step()  # the runtime was left exactly as if the refused call never happened
        assert _state(rt) == _reference(3)
        assert rt.step_index == 3
    finally:
        model.release.set()
        rt.close()


@pytest.mark.timeout(180)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_many_threads_racing_for_one_runtime_never_hang_or_corrupt(runtime):
    """Four threads call step() on one runtime at once, many times: each call either runs
    or is refused; the steps that ran equal as many serial steps."""
    model = RandomModel(30, seed=4, fanout=2)
    rt = seer.make_runtime(model, runtime, threads=threads_for(runtime))
    rt.reset(3)
    done = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(4)

    def racer():
        for _ in range(25):
            barrier.wait(WAIT)
            try:
                rt.step()
            except seer.RuntimeStateError as exc:
                assert "already running" in str(exc)
            else:
                with lock:
                    done[0] += 1

    threads = [threading.Thread(target=racer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 4)
        assert not t.is_alive(), "a racing step() hung"
    assert 25 <= done[0] <= 100
    ref = seer.SerialRuntime(model)
    ref.reset(3)
    for _ in range(done[0]):
        ref.step()
    assert rt.state.h.tobytes() == ref.state.h.tobytes()
    assert rt.step_index == done[0]
    rt.close()


class Runaway(seer.Model):
    """Entity 2 re-schedules itself with a tiny delay: its events never reach the end."""

    kinds = ("tick",)
    fields = {"x": ((), np.int64)}  # noqa: RUF012
    lookahead = 0.5

    def __init__(self, n: int = 6, runaway: bool = True) -> None:
        super().__init__(n)
        self.runaway = runaway

    def init_entity(self, ctx):
        ctx.emit(ctx.id, 0.0, "tick")

    def on_tick(self, ctx, event):
        ctx.row.x += 1
        tiny = self.runaway and ctx.id == 2 and ctx.now >= 1.0
        ctx.emit(ctx.id, 1e-12 if tiny else 1.0, "tick")

    def outputs(self, entity, state, start):
        return None, 0.0, False, False, {}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_max_events_per_step_stops_a_runaway_step(runtime):
    model = Runaway()
    rt = seer.make_runtime(model, runtime, threads=threads_for(runtime),
                           max_events_per_step=5_000)
    try:
        rt.reset(0)
        rt.step()  # step 0: every entity ticks once
        with pytest.raises(seer.StepLimitError, match=r"max_events_per_step=5000") as info:
            rt.step()
        assert info.value.step == 1 and info.value.model == "Runaway"
        with pytest.raises(seer.RuntimeStateError, match="previous step failed"):
            rt.step()
        model.runaway = False
        rt.reset(0)  # usable again
        for _ in range(3):
            rt.step()
        assert rt.state.x.tolist() == [3] * 6
    finally:
        rt.close()


def test_max_events_per_step_is_checked():
    for bad in (-1, True, 1.5, "10"):
        with pytest.raises(seer.ModelError, match=r"max_events_per_step must be None or an "
                           r"int >= 0 \(None: the default, 1000000 events for 6 entities; 0: "
                           r"no limit; N: at most N events per step\), got "):
            seer.SerialRuntime(Runaway(), max_events_per_step=bad)
    assert seer.SerialRuntime(Runaway(), max_events_per_step=0).max_events_per_step == 0
    assert seer.SerialRuntime(Runaway()).max_events_per_step == 1_000_000


BAD_ACTIONS = {
    "wrong length": [1, 2],
    "a number": 5,
    "a generator": (a for a in [1] * 30),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("bad", sorted(BAD_ACTIONS))
def test_bad_actions_are_refused_without_costing_the_episode(runtime, bad):
    model = RandomModel(30, seed=6, fanout=2)
    rt = seer.make_runtime(model, runtime, threads=threads_for(runtime))
    ref = seer.SerialRuntime(model)
    try:
        rt.reset(2)
        ref.reset(2)
        rt.step(model.sample_actions(0))
        ref.step(model.sample_actions(0))
        actions = BAD_ACTIONS[bad]
        if bad == "a generator":
            actions = (a for a in [1] * 30)
        with pytest.raises(seer.ModelError, match=r"actions for model 'RandomModel\("):
            rt.step(actions)
        for t in (1, 2):
            rt.step(model.sample_actions(t))
            ref.step(model.sample_actions(t))
        assert rt.state.h.tobytes() == ref.state.h.tobytes()
        assert rt.step_index == 3
    finally:
        rt.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("seed", ["abc", -1, 1.5, True])
def test_bad_seeds_are_refused_and_leave_the_episode_running(runtime, seed):
    model = RandomModel(20, seed=1)
    rt = seer.make_runtime(model, runtime, threads=threads_for(runtime))
    try:
        rt.reset(5)
        rt.step(model.sample_actions(0))
        before = rt.state.h.tobytes()
        with pytest.raises(seer.ModelError, match="seed must be None, a non-negative int"):
            rt.reset(seed)
        assert rt.state.h.tobytes() == before and rt.step_index == 1
        rt.step(model.sample_actions(1))  # the episode goes on
    finally:
        rt.close()


class FailingOutputs(RandomModel):
    bad_entity = 5

    def outputs(self, entity, state, start):
        if entity >= self.bad_entity and state.count[entity] > 0:
            raise ZeroDivisionError(f"bad observation for {entity}")
        return super().outputs(entity, state, start)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_outputs_error_is_wrapped_with_step_and_entity(runtime):
    model = FailingOutputs(60, seed=2)  # 60 agents: SEER builds outputs on both threads
    model.bad_entity = 10**6
    rt = seer.make_runtime(model, runtime, threads=threads_for(runtime))
    try:
        rt.reset(0)
        model.bad_entity = 7
        with pytest.raises(seer.ModelCodeError) as info:
            for t in range(4):
                rt.step(model.sample_actions(t))
        err = info.value
        assert isinstance(err, seer.HandlerError)
        assert isinstance(err.__cause__, ZeroDivisionError)
        assert err.where == "outputs" and err.model.startswith("RandomModel(") and err.step >= 1
        # the first failing agent in output order, whichever thread built it
        expected = next(e for e in range(7, 60) if rt.state.count[e] > 0)
        assert err.entity == expected
        assert str(err).startswith(f"outputs() raised ZeroDivisionError: bad observation "
                                   f"for {expected} [model 'RandomModel(")
        model.bad_entity = 10**6
        rt.reset(0)
        rt.step(model.sample_actions(0))
    finally:
        rt.close()


class ManyFailures(RandomModel):
    """Several entities fail in the same window (step ``fail_step``), at different κ."""

    fail_step = 2

    def on_act(self, ctx, event):
        if int(ctx.now) == self.fail_step and ctx.id % 3 == 1:
            raise ValueError(f"entity {ctx.id} fails")
        super().on_act(ctx, event)

    def on_ping(self, ctx, event):
        if int(ctx.now) == self.fail_step and ctx.id % 5 == 2:
            raise KeyError(f"entity {ctx.id} fails on a ping")
        super().on_ping(ctx, event)


def _first_failure(runtime: str, threads: int, **options) -> tuple:
    """(step, entity, kind, κ, cause) of the failure ``runtime`` reports for
    :class:`ManyFailures` (``options`` go to the runtime)."""
    model = ManyFailures(90, seed=9, fanout=3, cost_us=5, lookahead=0.4)
    rt = seer.make_runtime(model, runtime, threads=threads, **options)
    try:
        rt.reset(1)
        with pytest.raises(seer.HandlerError) as info:
            for t in range(5):
                rt.step(model.sample_actions(t))
        err = info.value
        return (err.step, err.entity, err.kind, tuple(err.event[:2]),
                type(err.__cause__).__name__)
    finally:
        rt.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("runtime", PARALLEL)
def test_the_reported_failure_is_the_one_serial_meets_first(runtime):
    expected = _first_failure("serial", 1)
    for threads in (2, 3, 4):
        for _ in range(4):  # timing must not matter
            assert _first_failure(runtime, threads) == expected


@pytest.mark.parametrize("runtime", PARALLEL)
def test_one_thread_cap_for_every_runtime(runtime):
    with pytest.raises(seer.ModelError, match=r"threads must be an int in 1\.\.256, got 10000"):
        seer.make_runtime(RandomModel(4), runtime, threads=10_000)
    rt = seer.make_runtime(RandomModel(4), runtime, threads=2)
    with pytest.raises(seer.ModelError, match=r"threads must be an int in 1\.\.256, got 0"):
        rt.resize(0)
    rt.close()
    with pytest.raises(seer.RuntimeStateError, match="is closed"):
        rt.resize(2)
    for call in (rt.step, rt.reset):
        with pytest.raises(seer.RuntimeStateError, match="is closed"):
            call()


def _failing_resize(monkeypatch, rt, failures: int) -> list[int]:
    """Make ``rt``'s next ``failures`` calls of ``_resize_threads`` raise after the real one
    ran (threads and workers already changed): the worst moment to fail. Returns the list
    of thread counts it was called with."""
    real, calls = type(rt)._resize_threads, []

    def resize_then_fail(self, threads):
        calls.append(threads)
        real(self, threads)
        if len(calls) <= failures:
            raise RuntimeError(f"injected failure {len(calls)}")

    monkeypatch.setattr(type(rt), "_resize_threads", resize_then_fail)
    return calls


@pytest.mark.parametrize("runtime", PARALLEL)
def test_a_failed_resize_goes_back_to_the_old_thread_count(runtime, monkeypatch):
    model = Gate()
    model.release.set()
    rt = seer.make_runtime(model, runtime, threads=2)
    try:
        rt.reset(0)
        rt.step()
        calls = _failing_resize(monkeypatch, rt, failures=1)
        with pytest.raises(RuntimeError, match="injected failure 1"):
            rt.resize(3)
        assert calls == [3, 2]
        assert rt.stats["threads"] == 2
        if rt.pool is not None:
            assert rt.pool.threads == 2
        for _ in range(3):
            rt.step()
        assert _state(rt) == _reference(4)
    finally:
        rt.close()


@pytest.mark.parametrize("runtime", PARALLEL)
def test_a_resize_that_cannot_go_back_breaks_the_runtime(runtime, monkeypatch):
    model = Gate()
    model.release.set()
    before = threading.active_count()
    rt = seer.make_runtime(model, runtime, threads=2)
    rt.reset(0)
    _failing_resize(monkeypatch, rt, failures=2)
    with pytest.raises(RuntimeError, match="injected failure 1"):
        rt.resize(3)
    with pytest.raises(seer.RuntimeStateError, match="resize to 3 threads failed"):
        rt.step()
    rt.close()  # still allowed, and leaves no thread behind
    deadline = time.monotonic() + WAIT
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before


class BadEmits(seer.Model):
    kinds = ("go",)
    fields = {"x": ((), np.int64)}  # noqa: RUF012
    lookahead = 1.0
    action_kind = "go"

    def on_go(self, ctx, event):
        target, delay = event.payload
        ctx.emit(target, delay, "go")


@pytest.mark.parametrize(("target", "delay", "error", "message"), [
    (0, "1.0", seer.NonFiniteTimeError, r"delay must be a real number, got '1\.0'"),
    (0, True, seer.NonFiniteTimeError, r"delay must be a real number, got True"),
    (True, 1.0, seer.UnknownTargetError, r"target must be an integer entity id, got True"),
])
def test_emit_refuses_strings_and_booleans(target, delay, error, message):
    rt = seer.SerialRuntime(BadEmits(2))
    rt.reset(0)
    with pytest.raises(error, match=message):
        rt.step({0: (target, delay)})


@pytest.mark.timeout(120)
@pytest.mark.parametrize("runtime", PARALLEL)
def test_dropped_runtimes_release_their_threads_without_the_collector(runtime):
    before = threading.active_count()
    gc.disable()
    try:
        for _ in range(30):
            rt = seer.make_runtime(RandomModel(10, seed=1), runtime, threads=3)
            rt.reset(0)
            rt.step(rt.model.sample_actions(0))
            del rt
            assert threading.active_count() <= before + 3
    finally:
        gc.enable()
    assert threading.active_count() == before


STUCK_CHILD = r'''
import sys, threading, time
import numpy as np
import seer

def say(*parts):
    # one write per line: threads printing at once must not interleave their pieces
    sys.stdout.write(" ".join(map(str, parts)) + "\n")
    sys.stdout.flush()

class Stuck(seer.Model):
    kinds = ("tick",)
    fields = {"x": ((), np.int64)}
    lookahead = 1.0

    def init_entity(self, ctx):
        ctx.emit(ctx.id, 0.5, "tick")

    def on_tick(self, ctx, event):
        if threading.current_thread() is not threading.main_thread():
            say("stuck", ctx.id, threading.current_thread().name)
            while True:  # a handler that never returns, on a worker thread
                pass
        time.sleep(0.02)  # the caller is slow, so that the worker gets entities to run
        ctx.row.x += 1

rt = seer.make_runtime(Stuck(16), sys.argv[1], threads=2)
rt.reset(0)
try:
    rt.step()
except KeyboardInterrupt:
    say("interrupted")
try:
    rt.step()
except seer.RuntimeStateError as exc:
    say("refused:", exc)
rt.close()
say("exiting")
'''


@pytest.mark.timeout(120)
@pytest.mark.parametrize("runtime", ["seer", "static", "static-block", "global",
                                     "optimistic"])
def test_a_second_ctrl_c_returns_from_a_handler_that_never_returns(runtime):
    import signal
    import subprocess
    import sys
    import time

    child = subprocess.Popen([sys.executable, "-c", STUCK_CHILD, runtime],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("stuck"), line + child.stderr.read()
        entity = int(line.split()[1])
        time.sleep(0.3)  # let the caller reach its wait for the stuck worker
        child.send_signal(signal.SIGINT)  # first: ask the threads to stop (one never does)
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)  # second: give up on it
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    lines = out.splitlines()
    assert lines[0] == "interrupted"
    assert lines[1].startswith("refused: ") and "is unusable" in lines[1]
    assert f"in entity {entity}'s handler of the event at t=0.5" in lines[1]
    assert "worker-1" in lines[1]
    assert lines[-1] == "exiting"


class FailsAtStep1(RandomModel):
    def on_act(self, ctx, event):
        if int(ctx.now) == 1 and ctx.id % 2 == 0:
            raise ValueError("handler bug")
        super().on_act(ctx, event)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("runtime", PARALLEL)
def test_runtimes_dropped_after_a_failed_step_release_their_threads(runtime):
    """After a failed step, nothing keeps a dropped runtime (and its threads) alive for
    good: the pool keeps no error and no task whose frames would hold it. (The failure's
    traceback can still form a cycle with the runtime, which the collector frees.)"""
    before = threading.active_count()
    for _ in range(5):
        model = FailsAtStep1(20, seed=2)
        rt = seer.make_runtime(model, runtime, threads=3)
        rt.reset(0)
        with pytest.raises(seer.HandlerError):
            for t in range(3):
                rt.step(model.sample_actions(t))
        pool = rt.pool
        if pool is not None:
            assert pool._errors == [] and pool._published[1] is None
        del rt, pool
    gc.collect()
    deadline = time.monotonic() + WAIT
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before


@pytest.mark.timeout(120)
def test_the_executor_peer_gives_up_on_a_stuck_chunk_at_the_second_ctrl_c():
    """As the pooled runtimes do: the report names every stuck thread, its entity and
    event, and the process exits (the executor's threads are daemon threads, and the
    stuck ones are off concurrent.futures' exit list)."""
    import signal
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", STUCK_CHILD, "executor"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = child.stdout.readline()
        assert first.startswith("stuck"), first + child.stderr.read()
        time.sleep(0.3)  # let the caller reach its wait for the stuck chunks
        child.send_signal(signal.SIGINT)  # first: ask the threads to stop (they never do)
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)  # second: give up on them
        try:
            out, err = child.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
            pytest.fail(f"the child did not exit within 15 s of the second Ctrl-C; it "
                        f"printed: {(first + out).strip()!r}", pytrace=False)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    lines = (first + out).splitlines()
    stuck = [line.split() for line in lines if line.startswith("stuck")]
    rest = [line for line in lines if not line.startswith("stuck")]
    assert rest[0] == "interrupted", lines
    assert rest[1].startswith("refused: ") and "is unusable" in rest[1], rest[1]
    for _, entity, name in stuck:  # every thread that got stuck, by name and place
        assert f"in entity {entity}'s handler of the event at t=0.5" in rest[1], rest[1]
        assert repr(name) in rest[1], (name, rest[1])
    assert rest[-1] == "exiting"
    assert child.returncode == 0, err
