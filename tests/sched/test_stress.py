"""Long runs, failures and interrupts: no deadlock, no leaked thread, usable afterwards."""

import _thread
import threading
import time

import pytest

import seer
from seer.testing import RandomModel, assert_equivalent

KINDS = ["seer", "static", "static-block", "global", "executor", "optimistic"]


def step_beside_serial(rt, model, seed, steps):
    """Reset ``rt`` and a new :class:`seer.SerialRuntime` reference of ``model`` with
    ``seed``, step both in lockstep ``steps`` times with ``model.sample_actions(t)``, and
    return the reference (for the caller to compare)."""
    ref = seer.SerialRuntime(model)
    rt.reset(seed)
    ref.reset(seed)
    for t in range(steps):
        actions = model.sample_actions(t)
        rt.step(actions)
        ref.step(actions)
    return ref


def test_ten_thousand_steps_on_four_threads():
    before = threading.active_count()
    model = RandomModel(24, seed=8, lookahead=0.5, fanout=2, ttl=2)
    rt = seer.make_runtime(model, "seer", threads=4)
    ref = step_beside_serial(rt, model, 7, 10_000)
    for name in ref.state.names:
        assert rt.state[name].tobytes() == ref.state[name].tobytes()
    assert rt.events_run == ref.events_run > 10_000
    rt.close()
    assert threading.active_count() == before


class Exploding(RandomModel):
    """Raises in one handler on one step (``fail_step``) for one entity."""

    fail_step = 3
    fail_entity = 5

    def on_act(self, ctx, event):
        if ctx.id == self.fail_entity and int(ctx.now) == self.fail_step:
            raise ArithmeticError(f"boom at step {self.fail_step}")
        super().on_act(ctx, event)


@pytest.mark.parametrize("kind", KINDS)
def test_handler_error_then_reset_and_a_correct_run(kind):
    before = threading.active_count()
    model = Exploding(40, seed=2, fanout=2)
    # an entity that acts on steps 2 and 3 (see RandomModel.sample_actions)
    model.fail_entity = next(e for e in model._actors if e % 4 == 2)
    rt = seer.make_runtime(model, kind, threads=3)
    rt.reset(1)
    with pytest.raises(seer.HandlerError) as info:
        for t in range(10):
            rt.step(model.sample_actions(t))
    err = info.value
    assert err.step == 3 and err.entity == model.fail_entity
    assert isinstance(err.__cause__, ArithmeticError)
    assert str(err).startswith("handler for ")
    with pytest.raises(seer.RuntimeStateError, match="previous step failed"):
        rt.step()
    model.fail_step = -1
    rt.close()
    assert_equivalent(lambda m: seer.make_runtime(m, kind, threads=3), model, seeds=[1],
                      steps=6)
    # the same runtime object is usable again after reset
    rt2 = seer.make_runtime(model, kind, threads=3)
    model.fail_step = 2
    rt2.reset(4)
    with pytest.raises(seer.HandlerError):
        for t in range(5):
            rt2.step(model.sample_actions(t))
    model.fail_step = -1
    ref = step_beside_serial(rt2, model, 4, 5)
    assert rt2.state.h.tobytes() == ref.state.h.tobytes()
    rt2.close()
    assert threading.active_count() == before


class Interrupting(RandomModel):
    """Simulates Ctrl-C arriving mid-step: a handler interrupts the main thread."""

    armed = True

    def on_act(self, ctx, event):
        if self.armed and ctx.id == self._actors[-1] and int(ctx.now) == 2:
            _thread.interrupt_main()
            time.sleep(0.05)  # let the main thread see it while workers are busy
        super().on_act(ctx, event)


@pytest.mark.parametrize("kind", KINDS)
def test_keyboard_interrupt_leaves_no_worker_running(kind):
    model = Interrupting(120, seed=5, fanout=2, cost_us=20)
    rt = seer.make_runtime(model, kind, threads=3)
    rt.reset(0)
    with pytest.raises(KeyboardInterrupt):
        for t in range(6):
            rt.step(model.sample_actions(t))
    pool = getattr(rt, "pool", None)
    if pool is not None:
        assert pool.busy == 0
    model.armed = False
    ref = step_beside_serial(rt, model, 0, 4)
    assert rt.state.h.tobytes() == ref.state.h.tobytes()
    rt.close()


def test_contract_errors_surface_from_worker_threads():
    class Bad(RandomModel):
        def on_ping(self, ctx, event):
            ctx.emit((ctx.id + 1) % self.n_entities, 0.0, "ping", (0, 0.0))

    rt = seer.make_runtime(Bad(30, seed=1, lookahead=0.5, fanout=3), "seer", threads=2)
    rt.reset(0)
    with pytest.raises(seer.LookaheadError, match=r"lookahead violation") as info:
        for t in range(5):
            rt.step(rt.model.sample_actions(t))
    assert info.value.kind == "ping" and info.value.step is not None
    rt.close()


def test_factory_and_argument_errors():
    model = RandomModel(5)
    with pytest.raises(seer.ModelError, match=r"unknown runtime 'fast'; choose one of "
                       r"\['executor', 'global', 'optimistic', 'seer', 'seer-ms', 'serial', "
                       r"'static', 'static-block'\]"):
        seer.make_runtime(model, "fast")
    with pytest.raises(seer.ModelError, match=r"threads must be an int in 1\.\.256, got 0"):
        seer.make_runtime(model, "seer", threads=0)
    with pytest.raises(seer.ModelError, match=r"debug mode .* only available in SerialRuntime"):
        seer.make_runtime(model, "seer", debug=True)
    for threads in (None, 1, "auto"):  # serial runs on one thread: it refuses any other count
        assert isinstance(seer.make_runtime(model, "serial", threads=threads),
                          seer.SerialRuntime)
    assert isinstance(seer.make_runtime(model, "serial"), seer.SerialRuntime)
    for threads in (4, 3, 2, 0, "Auto", True):
        with pytest.raises(seer.ModelError, match=r"runtime 'serial' runs on one thread: "
                           r"threads must be 1, 'auto' or left out \(None\), got "):
            seer.make_runtime(model, "serial", threads=threads)
    rt = seer.make_runtime(model, "seer")  # None: the runtime's own default
    assert rt.threads == 2
    rt.close()
    for threads, hint in (("Auto", r" \(write 'auto' in lower case\)"),
                          ("4", r" \(pass the number itself: threads=4\)"),
                          ("many", ""), (2.0, "")):
        with pytest.raises(seer.ModelError, match=r"threads must be an int in 1\.\.256, got "
                           r".*; make_runtime\(model, 'seer', threads=\.\.\.\) also takes "
                           r"'auto' \(STPA picks the count\) or None \(the runtime's "
                           r"default\)" + hint):
            seer.make_runtime(model, "seer", threads=threads)


def test_gil_build_warns_once(monkeypatch):
    from seer import platform

    monkeypatch.setattr(platform, "gil_disabled", lambda: False)
    monkeypatch.setattr(platform, "_warned", False)
    with pytest.warns(seer.GILWarning, match="asked for 2 threads but the GIL is enabled") \
            as caught:
        seer.make_runtime(RandomModel(5), "seer", threads=2).close()
    assert caught[0].filename == __file__  # points at the user's call, not into seer


def test_worker_stats_are_counted():
    model = RandomModel(100, seed=3, fanout=2)
    rt = seer.SeerRuntime(model, threads=2)
    rt.reset(0)
    for t in range(3):
        rt.step(model.sample_actions(t))
    stats = rt.worker_stats()
    assert sum(s["events"] for s in stats) == rt.events_run
    assert sum(s["entities"] for s in stats) > 0
    # every thread ran tasks and its time was counted; a worker's CPU time is measured
    # inside its busy time (the caller's also covers its wait for the workers)
    assert all(s["tasks"] > 0 and s["busy_s"] > 0 and s["cpu_s"] > 0 for s in stats)
    assert all(s["cpu_s"] <= s["busy_s"] for s in stats[1:]), stats
    rt.close()


def test_a_full_arena_falls_back_without_changing_results():
    model = RandomModel(400, seed=11, fanout=3, p_fan_in=0.6, lookahead=0.25)
    made = []

    def make(m):
        made.append(seer.SeerRuntime(m, threads=2, arena_capacity=1))
        return made[-1]

    assert_equivalent(make, model, seeds=[0, 1], steps=5)
    # the fallback really ran (about 260 records for a window's ~600 cross events)
    assert all(sum(s["arena_full"] for s in rt.worker_stats()) > 0 for rt in made)


def test_resize_between_steps_keeps_results():
    model = RandomModel(60, seed=12, fanout=2)
    rt = seer.SeerRuntime(model, threads=2)
    ref = seer.SerialRuntime(model)
    rt.reset(3)
    ref.reset(3)
    for t, threads in enumerate([2, 3, 1, 4, 2]):
        rt.resize(threads)
        assert rt.pool.threads == threads
        rt.step(model.sample_actions(t))
        ref.step(model.sample_actions(t))
        assert rt.state.h.tobytes() == ref.state.h.tobytes()
    with pytest.raises(seer.ModelError, match=r"threads must be an int in 1\.\.256"):
        rt.resize(0)
    rt.close()


def test_dropped_runtimes_and_failed_constructors_leave_no_threads():
    import gc

    before = threading.active_count()
    for kind in ("seer", "global", "executor"):
        rt = seer.make_runtime(RandomModel(20, seed=1), kind, threads=3)
        rt.reset(0)
        rt.step(rt.model.sample_actions(0))
        del rt
    gc.collect()
    deadline = time.monotonic() + 10
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before
    with pytest.raises(ValueError, match="unknown atomics path 'bogus'"):
        seer.SeerRuntime(RandomModel(5), threads=3, atomics_path="bogus")
    assert threading.active_count() == before


def test_bad_outputs_are_named_by_the_parallel_outputs_path():
    model = RandomModel(8)  # 8 agents >= 2 * threads: outputs are built on both threads
    model.outputs = lambda e, s, st: (1, 2)
    rt = seer.make_runtime(model, "seer", threads=2)
    try:
        with pytest.raises(seer.ModelError, match=r"outputs\(\) of model .* for entity \d+ "
                           r"must return \(observation, reward, terminated, truncated, info\)"):
            rt.reset(0)
        del model.outputs  # the runtime stays usable
        assert rt.reset(0).step == 0
    finally:
        rt.close()
