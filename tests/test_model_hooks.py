"""The Model API hooks for real environments (episode data, shared outputs, actions per
agent, entity groups) and the guards against its footguns."""

from __future__ import annotations

import numpy as np
import pytest

import seer
from seer.model import EntityGroups, StepInfo
from seer.testing import assert_equivalent

RUNTIMES = ["serial", "seer", "static", "static-block", "global", "executor"]


class Herd(seer.Model):
    """Shepherds (agents) and sheep (not agents). The episode's layout is drawn once from
    the episode generator; outputs share a per-step herd centre and see the step index."""

    kinds = ("act", "graze", "nudge")
    action_kind = "act"
    lookahead = 0.5
    fields = {"pos": ((2,), np.float64), "moves": ((), np.int64)}  # noqa: RUF012

    def __init__(self, shepherds: int = 4, sheep: int = 30, max_steps: int = 5) -> None:
        self.groups = EntityGroups(shepherds=shepherds, sheep=sheep)
        super().__init__(len(self.groups))
        self.max_steps = max_steps
        self.shared_calls = 0

    def agent_entities(self):
        return self.groups.shepherds

    def init_episode(self, rng):
        return {"layout": rng.uniform(0, 10, size=(self.n_entities, 2))}

    def init_entity(self, ctx):
        ctx.row.pos = ctx.episode["layout"][ctx.id]
        if self.groups.of(ctx.id) == "sheep":
            ctx.emit(ctx.id, 0.25, "graze")
        elif ctx.id == 0:  # cross-entity events at reset are allowed
            ctx.emit(self.groups.sheep.start, 0.5, "nudge", 1.0)

    def on_act(self, ctx, event):
        ctx.row.pos = ctx.row.pos + np.array(event.payload, np.float64)
        ctx.row.moves += 1
        target = self.groups.sheep.start + (ctx.id * 7 + int(ctx.now)) % len(self.groups.sheep)
        ctx.emit(target, 0.5, "nudge", float(ctx.id))

    def on_graze(self, ctx, event):
        ctx.row.pos = ctx.row.pos + ctx.rng.normal(0, 0.1, 2)
        ctx.emit(ctx.id, 1.0, "graze")

    def on_nudge(self, ctx, event):
        ctx.row.pos = ctx.row.pos + event.payload * 0.01
        ctx.row.moves += 1

    def step_outputs(self, state, start, step):
        self.shared_calls += 1
        return state.pos[self.groups.sheep].mean(axis=0)

    def outputs(self, entity, state, start, info):
        obs = np.concatenate([state.pos[entity], info.shared, info.episode["layout"][entity]])
        truncated = info.step >= self.max_steps
        return obs, -float(np.hypot(*(state.pos[entity] - info.shared))), False, truncated, {}

    def sample_actions(self, step):
        return [(0.1 * (a + 1), -0.05 * step) for a in range(len(self.groups.shepherds))]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_hooks_keep_every_runtime_serial_equivalent(runtime):
    threads = None if runtime == "serial" else 3  # serial runs on its one thread
    assert_equivalent(lambda m: seer.make_runtime(m, runtime, threads=threads), Herd(6, 60),
                      seeds=[0, 7], steps=5)


def test_step_outputs_is_computed_once_per_step_and_outputs_see_it():
    model = Herd()
    rt = seer.SerialRuntime(model)
    out = rt.reset(3)
    assert model.shared_calls == 1 and not out.truncations.any()
    for t in range(5):
        out = rt.step(model.sample_actions(t))
    assert model.shared_calls == 6
    centre = rt.state.pos[model.groups.sheep].mean(axis=0)
    assert np.array_equal(out.observations[0][2:4], centre)
    assert out.truncations.all()  # info.step reached max_steps
    assert len(out.observations) == 4  # agents are the shepherds only


def test_episode_data_comes_from_its_own_generator():
    """init_episode draws from a generator of its own: the entities' streams are the
    same as for a model without it, and one SeedSequence gives the same episode twice."""

    class NoEpisode(Herd):
        def init_episode(self, rng):
            return {"layout": np.zeros((self.n_entities, 2))}

    seq = np.random.SeedSequence(11)
    a, b = seer.SerialRuntime(Herd()), seer.SerialRuntime(NoEpisode())
    a.reset(seq)
    b.reset(seq)
    first = a.state.pos.copy()
    assert not np.array_equal(first, b.state.pos)  # layout drawn from the episode rng
    draws_a = [ctx.rng.random() for ctx in a._contexts]
    draws_b = [ctx.rng.random() for ctx in b._contexts]
    assert draws_a == draws_b
    a.reset(seq)  # the same SeedSequence object again: the same episode
    assert np.array_equal(a.state.pos, first)


def test_actions_are_one_per_agent_by_default():
    model = Herd(shepherds=3, sheep=10)
    rt = seer.SerialRuntime(model)
    rt.reset(0)
    rt.step([(1.0, 0.0), None, (0.0, 2.0)])
    assert rt.state.moves[:3].tolist() == [1, 0, 1]
    with pytest.raises(seer.ModelError, match=r"has length 13; expected 3 \(one per agent, "
                       r"in agent_entities\(\) order\)"):
        rt.step([(0.0, 0.0)] * 13)
    rt.step({2: (1.0, 1.0)})  # the mapping form is keyed by entity
    assert int(rt.state.moves[2]) == 2


def test_entity_groups():
    groups = EntityGroups(pursuers=3, evaders=5, cells=0)
    assert len(groups) == 8 and groups.pursuers == range(0, 3)
    assert groups["evaders"] == range(3, 8) and groups.cells == range(8, 8)
    assert [groups.of(e) for e in (0, 2, 3, 7)] == ["pursuers"] * 2 + ["evaders"] * 2
    assert groups.index(4) == 1
    assert dict(groups) == {"pursuers": range(0, 3), "evaders": range(3, 8),
                            "cells": range(8, 8)}
    with pytest.raises(AttributeError, match="no entity group 'walls'"):
        _ = groups.walls
    with pytest.raises(IndexError):
        groups.of(8)
    with pytest.raises(seer.ModelError, match="size of entity group 'a' must be an int"):
        EntityGroups(a=-1)


class Counter(seer.Model):
    kinds = ("go",)
    action_kind = "go"
    fields = {"occ": ((), np.int64), "vec": ((2,), np.float64)}  # noqa: RUF012
    lookahead = 1.0

    def on_go(self, ctx, event):
        occ = ctx.row.occ
        ctx.row.occ = 0
        ctx.row.vec = (float(occ), 1.0)
        ctx.row.occ = occ + 5


def test_scalar_field_reads_are_values_not_views():
    rt = seer.SerialRuntime(Counter(2))
    rt.reset(0)
    rt.step([1, None])
    rt.step([1, None])
    assert rt.state.occ.tolist() == [10, 0]
    assert rt.state.vec[0].tolist() == [5.0, 1.0]  # occ was read as a value (5), not 0
    row = rt._contexts[0].row
    assert isinstance(row.occ, np.int64) and row.vec.base is not None
    with pytest.raises(AttributeError):
        row.unknown = 1  # a typo is an error, not a silent new attribute


class Mutator(seer.Model):
    kinds = ("send", "take")
    action_kind = "send"
    fields = {"got": ((), np.float64)}  # noqa: RUF012
    lookahead = 0.5
    who = "sender"

    def on_send(self, ctx, event):
        payload = [1.0, 2.0]
        ctx.emit(1 - ctx.id, 0.5, "take", payload)
        if self.who == "sender":
            payload[0] = 99.0  # kept a reference and changed it after emitting

    def on_take(self, ctx, event):
        ctx.row.got = event.payload[0]
        if self.who == "receiver":
            event.payload.append(3.0)


@pytest.mark.parametrize(("who", "when"), [
    ("sender", "between its emit and its delivery"), ("receiver", "by its receiver's handler")])
def test_debug_mode_catches_payload_mutation(who, when):
    model = Mutator(2)
    model.who = who
    rt = seer.SerialRuntime(model, debug=True)
    rt.reset(0)
    with pytest.raises(seer.ContractError, match=rf"payload of this 'take' event \(emitted "
                       rf"by entity 0\) was mutated {when}"):
        rt.step([1, None])
    model.who = "nobody"
    rt.reset(0)
    rt.step([1, None])  # a well-behaved model passes
    assert rt.state.got.tolist() == [0.0, 1.0]


class ViewSender(seer.Model):
    kinds = ("send", "take")
    action_kind = "send"
    fields = {"pos": ((2,), np.float64)}  # noqa: RUF012
    lookahead = 0.5

    def on_send(self, ctx, event):
        ctx.emit(1 - ctx.id, 0.5, "take", ctx.row.pos)  # a live view of the sender's row

    def on_take(self, ctx, event):
        ctx.row.pos = event.payload


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_emitting_a_view_of_state_is_refused_on_every_runtime(runtime):
    rt = seer.make_runtime(ViewSender(2), runtime, threads=None if runtime == "serial" else 2)
    rt.reset(0)
    with pytest.raises(seer.ContractError, match=r"payload is a view of entity state .* "
                       r"emit a copy"):
        rt.step([1, None])
    rt.close()


class EarlySnapshot(seer.Model):
    kinds = ("tick",)
    fields = {"x": ((), np.float64)}  # noqa: RUF012

    def init_entity(self, ctx):
        ctx.row.x = ctx.snapshot.x[0]

    def on_tick(self, ctx, event):
        pass


def test_snapshot_in_init_entity_says_why_it_is_missing():
    rt = seer.SerialRuntime(EarlySnapshot(2))
    with pytest.raises(seer.HandlerError, match=r"ctx\.snapshot is not available in "
                       r"init_entity: .* Use ctx\.episode"):
        rt.reset(0)


class ReadOnlyWriter(seer.Model):
    kinds = ("go",)
    action_kind = "go"
    fields = {"x": ((), np.float64)}  # noqa: RUF012
    lookahead = 1.0
    where = "handler"

    def on_go(self, ctx, event):
        if self.where == "handler":
            ctx.snapshot.x[1] = 1.0

    def outputs(self, entity, state, start):
        if self.where == "outputs":
            state.x[entity] = 2.0
        return None, 0.0, False, False, {}


@pytest.mark.parametrize("where", ["handler", "outputs"])
def test_writing_read_only_state_names_the_rule(where):
    model = ReadOnlyWriter(2)
    rt = seer.SerialRuntime(model)
    rt.reset(0)
    model.where = where
    error = seer.ModelCodeError if where == "outputs" else seer.HandlerError
    with pytest.raises(error, match=r"read-only: a handler writes only its own ctx\.row, "
                       r"and outputs\(\) writes no state"):
        rt.step([1, None])


def test_a_bad_outputs_return_is_reported_briefly():
    model = ReadOnlyWriter(2)
    model.outputs = lambda e, s, st: (np.zeros(5000), 0.0)
    with pytest.raises(seer.ModelError, match=r"must return \(observation, reward") as info:
        seer.SerialRuntime(model).reset(0)
    assert len(str(info.value)) < 500


def test_outputs_with_a_wrong_signature_are_refused():
    model = ReadOnlyWriter(2)
    model.outputs = lambda e, s: None
    with pytest.raises(seer.ModelError, match=r"must take \(entity, state, start\) or "
                       r"\(entity, state, start, info\); it takes 2"):
        seer.SerialRuntime(model)


class Leftovers(seer.Model):
    kinds = ("tick",)
    fields = {"x": ((), np.int64)}  # noqa: RUF012
    lookahead = 1.0
    strict_steps = True
    spill = False

    def init_entity(self, ctx):
        ctx.emit(ctx.id, 0.5, "tick")

    def on_tick(self, ctx, event):
        ctx.row.x += 1
        if self.spill and ctx.id == 3:
            ctx.emit(ctx.id, 2.0, "tick")  # lands in a later step


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_strict_steps_reports_what_was_left_pending(runtime):
    model = Leftovers(6)
    rt = seer.make_runtime(model, runtime, threads=None if runtime == "serial" else 2)
    try:
        rt.reset(0)
        rt.step()  # every event inside its step: fine
        rt.reset(0)
        model.spill = True
        with pytest.raises(seer.PendingEventsError, match=r"1 events are pending past the end "
                           r"of step 0 \(t=1\.0\); the earliest at t=2\.5, emitted by entity 3"):
            rt.step()
        with pytest.raises(seer.RuntimeStateError, match="previous step failed"):
            rt.step()
    finally:
        rt.close()


def test_step_info_is_a_frozen_record():
    info = StepInfo(3, 3.0, "shared", None)
    with pytest.raises(AttributeError):
        info.step = 4  # type: ignore[misc]


def test_mapping_actions_must_name_agents_and_strings_are_not_sequences():
    model = Herd(shepherds=3, sheep=10)
    rt = seer.SerialRuntime(model)
    rt.reset(0)
    with pytest.raises(seer.ModelError, match=r"name entities that are not agents: \[5\]"):
        rt.step({5: (1.0, 0.0)})
    with pytest.raises(seer.ModelError, match="must be a sequence"):
        rt.step("abc")
    rt.step([(0.0, 0.0)] * 3)  # the episode goes on


def test_entity_group_names_cannot_shadow_its_attributes():
    with pytest.raises(seer.ModelError, match="entity group name 'total' is taken"):
        EntityGroups(total=3, evaders=2)


def test_a_fourth_outputs_parameter_with_a_default_is_not_the_info():
    class Scaled(ReadOnlyWriter):
        def outputs(self, entity, state, start, scale=2.0):
            return None, scale, False, False, {}

    out = seer.SerialRuntime(Scaled(2)).reset(0)
    assert out.rewards.tolist() == [2.0, 2.0]
