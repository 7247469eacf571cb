"""The dual-queue runtime's own paths: action events made by the threads that run them."""

import pytest

import seer
from seer.errors import HandlerError
from seer.sched import dual_queue
from seer.testing import RandomModel, assert_equivalent


@pytest.fixture
def taken(monkeypatch):
    """How many action events the workers made: the actions handed out to them for a
    step's first window, less those still waiting in their slots when it ended (which
    the coordinator then makes)."""
    count = [0]
    hand_out = dual_queue.SeerRuntime._hand_out_actions
    settle = dual_queue.SeerRuntime._settle_actions

    def _hand_out_actions(self):
        count[0] += len(self._pending_actions)
        return hand_out(self)

    def _settle_actions(self):
        count[0] -= int((self._action_slots >= 0).sum())
        return settle(self)

    monkeypatch.setattr(dual_queue.SeerRuntime, "_hand_out_actions", _hand_out_actions)
    monkeypatch.setattr(dual_queue.SeerRuntime, "_settle_actions", _settle_actions)
    return count


def actions_given(model, steps):
    return sum(len(model.sample_actions(t)) for t in range(steps))


@pytest.mark.parametrize("lookahead", [0.25, 0.0])
@pytest.mark.parametrize("kind", ["seer", "static"])
@pytest.mark.parametrize("trace", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_threads_make_the_action_events_and_results_stay_serial(taken, lookahead, kind,
                                                                 trace):
    model = RandomModel(200, seed=6, lookahead=lookahead)
    assert actions_given(model, 3) >= 3 * 64  # enough for the threads to make them
    assert_equivalent(lambda m: seer.make_runtime(m, kind, threads=3, trace=trace), model,
                      seeds=[1, 2], steps=3)
    assert taken[0] == 2 * actions_given(model, 3)  # every one, on both seeds


def test_one_thread_and_small_batches_leave_it_to_the_coordinator(taken):
    model = RandomModel(200, seed=6)
    assert_equivalent(lambda m: seer.SeerRuntime(m, threads=1), model, seeds=[1], steps=2)
    small = RandomModel(40, seed=6)
    assert actions_given(small, 2) < 2 * 64
    assert_equivalent(lambda m: seer.SeerRuntime(m, threads=2), small, seeds=[1], steps=2)
    assert taken[0] == 0


class TwoActionsEach(RandomModel):
    """Every action twice for its entity: two events per entity, one slot each is not
    enough, so the coordinator makes them."""

    def action_events(self, actions):
        events = list(super().action_events(actions))
        return [ev for ev in events for _ in range(2)]


def test_two_actions_for_one_entity_leave_it_to_the_coordinator(taken):
    model = TwoActionsEach(200, seed=7)
    assert_equivalent(lambda m: seer.SeerRuntime(m, threads=2), model, seeds=[3], steps=3)
    assert taken[0] == 0


class FailsOnAction(RandomModel):
    """An action handler fails for one entity in step 1."""

    def on_act(self, ctx, event):
        if ctx.id == self.bad and ctx.now >= 1.0:
            raise ValueError("bad action")
        super().on_act(ctx, event)


def test_a_step_that_fails_in_the_first_window_leaves_no_action_behind():
    model = FailsOnAction(200, seed=8)
    model.bad = model.sample_actions(1).__iter__().__next__()
    rt = seer.SeerRuntime(model, threads=2)
    ref = seer.SerialRuntime(model)
    try:
        rt.reset(4)
        rt.step(model.sample_actions(0))
        with pytest.raises(HandlerError, match="bad action"):
            rt.step(model.sample_actions(1))
        assert (rt._action_slots == -1).all()
        assert all(w.actions is None for w in rt._workers)
        model.bad = -1  # the next episode runs cleanly, and like serial
        for runtime in (rt, ref):
            runtime.reset(5)
            for t in range(3):
                runtime.step(model.sample_actions(t))
        assert rt.state.h.tobytes() == ref.state.h.tobytes()
        assert rt.events_run == ref.events_run
    finally:
        rt.close()
        ref.close()


class SeesThePool(RandomModel):
    """Records whether the runtime's pool was hot while its action handlers ran, and
    fails for entity ``bad``."""

    pool = None
    bad = -1

    def on_act(self, ctx, event):
        self.seen.append(self.pool.hot)
        if ctx.id == self.bad:
            raise ValueError("bad action")
        super().on_act(ctx, event)


def test_the_pool_is_hot_only_while_a_step_runs():
    model = SeesThePool(200, seed=9)
    model.seen = []
    with seer.SeerRuntime(model, threads=2) as rt:
        model.pool = rt.pool
        rt.reset(0)
        assert rt.pool.hot is False
        rt.step(model.sample_actions(0))
        assert model.seen and all(model.seen)
        assert rt.pool.hot is False  # the caller's own code runs now: workers park
        model.bad = next(iter(model.sample_actions(1)))
        with pytest.raises(HandlerError, match="bad action"):
            rt.step(model.sample_actions(1))
        assert rt.pool.hot is False
