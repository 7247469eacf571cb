import math
import re

import numpy as np
import pytest

import seer
from seer.events import seq_depth, seq_origin
from seer.testing import RandomModel
from tests.helpers import Recorder, run_serial
from workloads.synthetic import EmptyModel

HIT = "hit"


def trace(rt, entity):
    n = int(rt.state.n[entity])
    return rt.state.trace[entity][:n].tolist()


# -- ordering ---------------------------------------------------------------------------
def test_same_time_events_run_by_origin_then_emit_order():
    script = {
        (1, 10): [(0, 0.5, HIT, 11), (0, 0.5, HIT, 12)],
        (2, 20): [(0, 0.5, HIT, 21)],
        (0, 0): [(0, 0.5, HIT, 1)],
    }
    rt = seer.SerialRuntime(Recorder(3, script))
    rt.reset(seed=0)
    rt.step({2: 20, 1: 10, 0: 0})
    assert trace(rt, 0) == [0, 1, 11, 12, 21]


def test_zero_delay_events_run_causes_before_effects():
    script = {
        (0, 0): [(0, 0.0, HIT, 1)],
        (0, 1): [(0, 0.0, HIT, 2)],
        (2, 20): [(0, 0.0, HIT, 21)],
    }
    rt = seer.SerialRuntime(Recorder(3, script, lookahead=0.0))
    rt.reset(seed=0)
    rt.step({0: 0, 1: 10, 2: 20})
    # depth 0: the action; depth 1: the two children (origin 0 before 2); depth 2: grandchild
    assert trace(rt, 0) == [0, 1, 21, 2]


def test_events_on_the_step_boundary_belong_to_the_next_step():
    script = {(0, 0): [(1, 1.0, HIT, 5), (1, 0.999, HIT, 4), (1, 2.5, HIT, 6)]}
    rt = seer.SerialRuntime(Recorder(2, script))
    rt.reset(seed=0)
    rt.step({0: 0})
    assert trace(rt, 1) == [4]
    assert rt.pending == 2
    rt.step()
    assert trace(rt, 1) == [4, 5]
    rt.step()
    assert trace(rt, 1) == [4, 5, 6]
    assert rt.pending == 0
    assert rt.step_index == 3 and rt.time == 3.0


def test_event_fields_seen_by_handlers():
    seen = []

    class Spy(Recorder):
        def on_hit(self, ctx, event):
            seen.append((ctx.id, ctx.now, event.tau, seq_origin(event.seq),
                         seq_depth(event.seq), event.payload))

    rt = seer.SerialRuntime(Spy(3, {(2, 7): [(1, 0.5, HIT, "p")]}))
    rt.reset(seed=0)
    rt.step({2: 7})
    assert seen == [(1, 0.5, 0.5, 2, 0, "p")]


def test_numpy_scalars_are_accepted_for_target_and_delay():
    rt = seer.SerialRuntime(Recorder(3, {(0, 0): [(np.int64(2), np.float64(0.75), 1, 9)]}))
    rt.reset(seed=0)
    rt.step({0: 0})
    assert trace(rt, 2) == [9]


# -- determinism ------------------------------------------------------------------------
def test_repeated_runs_are_identical_and_seeds_matter():
    model = RandomModel(60, seed=3)
    a, outs_a = run_serial(model, 11, 6)
    b, outs_b = run_serial(model, 11, 6)
    c, _ = run_serial(model, 12, 6)
    for name in a.state.names:
        assert a.state[name].tobytes() == b.state[name].tobytes()
    assert [o.rewards.tobytes() for o in outs_a] == [o.rewards.tobytes() for o in outs_b]
    assert a.state.h.tobytes() != c.state.h.tobytes()
    assert a.events_run > 500


def test_entity_rng_is_spawned_from_the_seed():
    class Draw(seer.Model):
        kinds = ("a",)
        fields = {"x": ((), np.float64)}  # noqa: RUF012

        def init_entity(self, ctx):
            ctx.row.x = ctx.rng.random()

        def on_a(self, ctx, event):
            pass

    rt = seer.SerialRuntime(Draw(5))
    rt.reset(seed=123)
    children = np.random.SeedSequence(123).spawn(5)
    expected = [np.random.default_rng(c).random() for c in children]
    assert rt.state.x.tolist() == expected


# -- state access -----------------------------------------------------------------------
def test_row_assignment_writes_through_and_snapshot_is_read_only():
    class Rows(seer.Model):
        kinds = ("a",)
        action_kind = "a"
        fields = {"x": ((), np.int64), "v": ((2,), np.float64)}  # noqa: RUF012

        def on_a(self, ctx, event):
            ctx.row.x += 1
            ctx.row.v = [ctx.snapshot.x[ctx.id], 2.0]
            with pytest.raises(ValueError, match="read-only"):
                ctx.snapshot.x[0] = 5

    rt = seer.SerialRuntime(Rows(2))
    rt.reset(seed=0)
    rt.step([1, None])
    rt.step([1, None])
    assert rt.state.x.tolist() == [2, 0]
    assert rt.state.v[0].tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="read-only"):
        rt.state.x[0] = 1
    with pytest.raises(AttributeError, match=r"has no attribute 'y'"):
        _ = rt.state.y


# -- contract violations ------------------------------------------------------------------
def violation(script_emit, **attrs):
    rt = seer.SerialRuntime(Recorder(4, {(1, 0): [script_emit]}, **attrs))
    rt.reset(seed=0)
    rt.step()  # a clean step first, so the violation happens at step 1
    return rt


def expect(exc_type, pattern, script_emit, **attrs):
    rt = violation(script_emit, **attrs)
    with pytest.raises(exc_type) as info:
        rt.step({1: 0})
    err = info.value
    text = str(err)
    assert re.search(pattern, text), text
    assert "model 'Recorder'" in text and "step 1" in text and "entity 1" in text
    assert "while handling a 'start' event at t=1.0" in text
    assert (err.entity, err.kind, err.step, err.time) == (1, "start", 1, 1.0)
    return rt, err


def test_emit_into_the_past():
    expect(seer.CausalityError, r"emitted event into the past: delay -0\.25 < 0 \(to entity 2, "
           r"would arrive at t=0\.75\)", (2, -0.25, HIT, 0))


def test_lookahead_violation():
    _, err = expect(seer.LookaheadError, r"lookahead violation: event to entity 3 with delay "
                    r"0\.1 < lookahead 0\.5 \(would arrive at t=1\.1\)", (3, 0.1, HIT, 0))
    assert err.target == 3 and err.delay == 0.1


def test_self_events_may_have_delays_below_the_lookahead():
    rt = violation((1, 0.1, HIT, 5))
    rt.step({1: 0})
    assert trace(rt, 1) == [0, 5]


@pytest.mark.parametrize("target", [4, -1, 10**9])
def test_unknown_target(target):
    expect(seer.UnknownTargetError, rf"event addressed to entity {target}, outside range\(4\)",
           (target, 1.0, HIT, 0))


def test_non_integer_target():
    expect(seer.UnknownTargetError, r"event target must be an integer entity id, got 'a'",
           ("a", 1.0, HIT, 0))


@pytest.mark.parametrize("kind", ["boom", 7, None, [1]])
def test_unknown_kind(kind):
    expect(seer.UnknownKindError, rf"emitted unknown event kind {re.escape(repr(kind))}; "
           r"model kinds are \('start', 'hit'\)", (2, 1.0, kind, 0))


@pytest.mark.parametrize("delay", [math.nan, math.inf, -math.inf])
def test_non_finite_delay(delay):
    expect(seer.NonFiniteTimeError, rf"emitted event with non-finite delay {delay!r}",
           (2, delay, HIT, 0))


def test_non_numeric_delay():
    expect(seer.NonFiniteTimeError, r"delay must be a real number, got 'soon'", (2, "soon", HIT, 0))


def test_zero_delay_loop_is_reported_not_hung():
    class Loop(Recorder):
        def on_hit(self, ctx, event):
            ctx.emit(ctx.id, 0.0, HIT, 0)

    rt = seer.SerialRuntime(Loop(2, {(1, 0): [(1, 0.0, HIT, 0)]}))
    rt.reset(seed=0)
    with pytest.raises(seer.CausalityError, match=r"zero-delay chain deeper than 63 events at "
                       r"t=0\.0 \(a zero-delay loop\?\)") as info:
        rt.step({1: 0})
    assert info.value.kind == "hit"


class Meddler(Recorder):
    """Writes into another entity's row through the view's base array (a model bug)."""

    def on_start(self, ctx, event):
        ctx.row.trace.base[(ctx.id + 1) % self.n_entities, 0] = 99


def test_isolation_violation_found_in_debug_mode():
    rt = seer.SerialRuntime(Meddler(3), debug=True)
    rt.reset(seed=0)
    with pytest.raises(seer.IsolationError, match=r"handler wrote to field 'trace' of entity 2 "
                       r"\(entities changed: \[2\]\)") as info:
        rt.step({1: 0})
    assert info.value.entity == 1 and info.value.kind == "start" and info.value.step == 0


def test_isolation_is_not_checked_by_default():
    rt = seer.SerialRuntime(Meddler(3))
    rt.reset(seed=0)
    rt.step({1: 0})
    assert rt.state.trace[2, 0] == 99


def test_debug_mode_gives_the_same_results():
    model = RandomModel(40, seed=5)
    fast, _ = run_serial(model, 3, 5)
    rt = seer.SerialRuntime(model, debug=True)
    rt.reset(3)
    for t in range(5):
        rt.step(model.sample_actions(t))
    for name in fast.state.names:
        assert fast.state[name].tobytes() == rt.state[name].tobytes()


def test_contract_errors_in_init_entity():
    class BadInit(Recorder):
        def init_entity(self, ctx):
            if ctx.id == 2:
                ctx.emit(0, 0.0, HIT, 1)

    rt = seer.SerialRuntime(BadInit(3))
    with pytest.raises(seer.LookaheadError, match=r"step 0, entity 2, while handling a "
                       r"'<init_entity>' event at t=0\.0"):
        rt.reset(seed=0)
    with pytest.raises(seer.RuntimeStateError, match="needs reset"):
        rt.step()


# -- handler exceptions and recovery ------------------------------------------------------
class Flaky(Recorder):
    fail_at = (2, 1)  # (step, entity)

    def on_start(self, ctx, event):
        if (int(ctx.now), ctx.id) == self.fail_at:
            raise ZeroDivisionError("boom")
        super().on_start(ctx, event)


def test_handler_exception_is_wrapped_with_step_entity_and_event():
    rt = seer.SerialRuntime(Flaky(3))
    rt.reset(seed=0)
    rt.step({1: 0})
    rt.step({1: 0})
    with pytest.raises(seer.HandlerError) as info:
        rt.step({0: 0, 1: 0, 2: 0})
    err = info.value
    assert isinstance(err.__cause__, ZeroDivisionError)
    assert (err.step, err.entity, err.kind) == (2, 1, "start")
    assert err.event.tau == 2.0 and err.event.target == 1
    assert str(err).startswith("handler for 'start' raised ZeroDivisionError: boom [model "
                               "'Flaky', step 2, entity 1, event Event(tau=2.0")


def test_runtime_needs_reset_after_failure_and_works_after_it():
    model = Flaky(3)
    rt = seer.SerialRuntime(model)
    rt.reset(seed=0)
    for _ in range(2):
        rt.step({1: 0})
    with pytest.raises(seer.HandlerError):
        rt.step({1: 0})
    with pytest.raises(seer.RuntimeStateError, match=r"needs reset\(\) first \(the previous "
                       r"step failed or was interrupted\)"):
        rt.step()
    model.fail_at = (-1, -1)
    rt.reset(seed=0)
    for _ in range(3):
        rt.step({1: 0})
    fresh = seer.SerialRuntime(model)
    fresh.reset(seed=0)
    for _ in range(3):
        fresh.step({1: 0})
    assert rt.state.trace.tobytes() == fresh.state.trace.tobytes()
    assert rt.pending == fresh.pending and rt.events_run == fresh.events_run


def test_keyboard_interrupt_propagates_unchanged():
    class Interrupt(Recorder):
        def on_start(self, ctx, event):
            raise KeyboardInterrupt

    rt = seer.SerialRuntime(Interrupt(2))
    rt.reset(seed=0)
    with pytest.raises(KeyboardInterrupt):
        rt.step({0: 0})
    with pytest.raises(seer.RuntimeStateError):
        rt.step()
    rt.reset(seed=1)


def test_use_before_reset_and_after_close():
    rt = seer.SerialRuntime(Recorder(2))
    with pytest.raises(seer.RuntimeStateError, match=r"SerialRuntime.step\(\) needs reset\(\) "
                       r"first$"):
        rt.step()
    with rt:
        rt.reset(seed=0)
    with pytest.raises(seer.RuntimeStateError, match="SerialRuntime is closed"):
        rt.step()
    with pytest.raises(seer.RuntimeStateError, match="SerialRuntime is closed"):
        rt.reset()
    rt.close()  # idempotent


# -- actions and outputs ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ([1, 2], r"actions for model 'Recorder' has length 2; expected 4 \(one per agent, "
                 r"in agent_entities\(\) order\)"),
        ({7: 1}, r"action for entity 7 of model 'Recorder': entity ids are integers in "
                 r"range\(4\)"),
        ({"a": 1}, r"action for entity 'a' of model 'Recorder'"),
    ],
)
def test_bad_actions(actions, message):
    rt = seer.SerialRuntime(Recorder(4))
    rt.reset(seed=0)
    with pytest.raises(seer.ModelError, match=message):
        rt.step(actions)


def test_actions_for_a_model_without_action_kind():
    rt = seer.SerialRuntime(EmptyModel(2))
    rt.reset(seed=0)
    with pytest.raises(seer.ModelError, match=r"model 'EmptyModel\(n=2, per_step=10\)' takes no "
                       r"actions \(action_kind is None\) but step\(\) was given list"):
        rt.step([0, 0])


def test_bad_action_kind_from_action_events():
    m = Recorder(2)
    m.action_events = lambda actions: [(0, "nope", 1)]
    rt = seer.SerialRuntime(m)
    rt.reset(seed=0)
    with pytest.raises(seer.ModelError, match=r"action event kind 'nope' is not a kind"):
        rt.step(1)


def test_bad_outputs_are_named():
    m = Recorder(2)
    m.outputs = lambda e, s, st: (1, 2)
    with pytest.raises(seer.ModelError, match=r"outputs\(\) of model 'Recorder' for entity 0 "
                       r"must return \(observation, reward, terminated, truncated, info\)"):
        seer.SerialRuntime(m).reset(seed=0)


def test_outputs_follow_agent_entities_and_rewards_use_the_start_snapshot():
    m = Recorder(4)
    m.agent_entities = lambda: [3, 1]
    rt = seer.SerialRuntime(m)
    out = rt.reset(seed=0)
    assert len(out.observations) == 2 and out.step == 0
    out = rt.step({1: 0, 3: 0})
    assert out.rewards.tolist() == [1.0, 1.0]
    assert out.step == 1 and out.time == 1.0


def test_stats_count_events_and_cross_entity_emits():
    rt = seer.SerialRuntime(Recorder(3, {(0, 0): [(1, 0.5, HIT, 1), (0, 0.5, HIT, 2)]}))
    rt.reset(seed=0)
    rt.step({0: 0})
    assert rt.stats == {"events_run": 3, "emitted": 2, "cross_entity": 1}



class _TwiceEach(RandomModel):
    def action_events(self, actions):
        return [ev for ev in super().action_events(actions) for _ in range(2)]


@pytest.mark.parametrize("kind", ["serial", "seer"])
def test_action_counters_name_the_entity_that_runs_out(kind):
    """Action events are numbered per entity (two actions for one entity take two numbers);
    the first action past the counter limit is refused with its entity named, and the
    runtime is left as it was."""
    from seer.events import COUNTER_LIMIT

    model = _TwiceEach(20, seed=1)
    rt = seer.make_runtime(model, kind, threads=None if kind == "serial" else 2)
    try:
        rt.reset(0)
        rt._external_counters[7] = COUNTER_LIMIT - 1  # room for one more
        with pytest.raises(seer.ModelError, match=rf"^more than {COUNTER_LIMIT} external "
                                                  r"events for entity 7 in one episode$"):
            rt.step({3: 1, 7: 1})
        assert rt._external_counters[7] == COUNTER_LIMIT - 1
        assert rt._external_counters[3] == 0
        rt.step({3: 1, 5: 1})
        assert rt._external_counters[3] == 2 and rt._external_counters[5] == 2
    finally:
        rt.close()
